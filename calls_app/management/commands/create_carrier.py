from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from calls_app.models import Carrier
from calls_app.services import carrier_create, carrier_rotate_secret
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164


class Command(BaseCommand):
    help = ("Create a telephony carrier and print its webhook signing secret once, alone on the last line. "
            "With --rotate, issue a new secret for an existing carrier (the old one stops working).")

    def add_arguments(self, parser):
        parser.add_argument("carrier_id", help="letters, digits, '-' and '_'; part of /voice/webhook/<id>")
        parser.add_argument("--name", default="", help="display name")
        parser.add_argument("--caller-id", default="", help="the carrier's own number for outbound calls (E.164)")
        parser.add_argument("--rotate", action="store_true", help="new secret for an existing carrier")

    def handle(self, *args, carrier_id, name, caller_id, rotate, **options):
        if rotate:
            carrier = Carrier.objects.filter(pk=carrier_id).first()
            if carrier is None:
                raise CommandError(f"No carrier '{carrier_id}'.")
            secret = carrier_rotate_secret(carrier=carrier)
        else:
            try:
                caller_id = to_e164(caller_id) if caller_id else ""
                carrier, secret = carrier_create(carrier_id=carrier_id, name=name, caller_id=caller_id)
            except InvalidPhoneNumber as exc:
                raise CommandError(f"--caller-id: {exc}") from None
            except ValidationFailed as exc:
                raise CommandError(_sentence(exc.details)) from None
            except ValidationError as exc:
                raise CommandError(_sentence(exc.message_dict)) from None
        self.stdout.write(
            f"Carrier '{carrier.pk}': events go to POST /voice/webhook/{carrier.pk}, signed with this secret "
            "(HMAC-SHA256, see docs/api.md). Store it now; it is not shown again:"
        )
        self.stdout.write(secret)


def _sentence(details):
    return " ".join(f"{field}: {' '.join(messages)}" for field, messages in details.items())
