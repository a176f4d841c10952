from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from calls_app.models import Carrier
from calls_app.services import carrier_create, carrier_rotate_secret, carrier_token_replace
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164

ENDPOINTS = {
    Carrier.Kind.SIGNED_WEBHOOK: "events go to POST /voice/webhook/{id}, signed with this secret (HMAC-SHA256, "
                                 "see docs/api.md)",
    Carrier.Kind.ASTERISK: "the dialplan registers each call at POST /voice/asterisk/{id}/calls with "
                           "'Authorization: Bearer <this secret>' (docs/telephony.md)",
}


class Command(BaseCommand):
    help = ("Create a telephony carrier. A signed-webhook or asterisk carrier's secret is printed once, alone on "
            "the last line; a twilio carrier keeps its account's auth token sealed and never prints it. With "
            "--rotate, issue a new secret (or, with --auth-token, store a twilio carrier's new token).")

    def add_arguments(self, parser):
        parser.add_argument("carrier_id", help="letters, digits, '-' and '_'; part of its /voice/… URLs")
        parser.add_argument("--kind", default=Carrier.Kind.SIGNED_WEBHOOK, choices=Carrier.Kind.values,
                            help="signed-webhook (default), twilio or asterisk")
        parser.add_argument("--name", default="", help="display name")
        parser.add_argument("--caller-id", default="", help="the carrier's own number for outbound calls (E.164)")
        parser.add_argument("--account-sid", default="", help="twilio: the account SID (AC…)")
        parser.add_argument("--auth-token", default="", help="twilio: the account's auth token (kept sealed)")
        parser.add_argument("--api-base", default="", help="twilio: the REST API's base URL (default Twilio's)")
        parser.add_argument("--rotate", action="store_true", help="new secret (or auth token) for an existing carrier")

    def handle(self, *args, carrier_id, kind, name, caller_id, account_sid, auth_token, api_base, rotate, **options):
        if rotate:
            carrier = Carrier.objects.filter(pk=carrier_id).first()
            if carrier is None:
                raise CommandError(f"No carrier '{carrier_id}'.")
            if carrier.kind == Carrier.Kind.TWILIO:
                if not auth_token:
                    raise CommandError("A twilio carrier's credential is its account's auth token: give --auth-token.")
                carrier_token_replace(carrier=carrier, auth_token=auth_token)
                self.stdout.write(f"Carrier '{carrier.pk}': the new auth token is stored (sealed; not shown again).")
                return
            secret = carrier_rotate_secret(carrier=carrier)
        else:
            try:
                caller_id = to_e164(caller_id) if caller_id else ""
                carrier, secret = carrier_create(carrier_id=carrier_id, name=name, caller_id=caller_id, kind=kind,
                                                 account_sid=account_sid, auth_token=auth_token, api_base=api_base)
            except InvalidPhoneNumber as exc:
                raise CommandError(f"--caller-id: {exc}") from None
            except ValidationFailed as exc:
                raise CommandError(_sentence(exc.details)) from None
            except ValidationError as exc:
                raise CommandError(_sentence(exc.message_dict)) from None
        if carrier.kind == Carrier.Kind.TWILIO:
            # The token is Twilio's secret: it is never echoed, not even masked.
            self.stdout.write(
                f"Carrier '{carrier.pk}' (twilio, account {carrier.account_sid}, REST {carrier.api_base}). Set the "
                f"number's Voice URL to POST /voice/twilio/{carrier.pk}/incoming and its status callback to "
                f"/voice/twilio/{carrier.pk}/status (docs/telephony.md). The auth token is stored sealed.")
            return
        self.stdout.write(f"Carrier '{carrier.pk}': {ENDPOINTS[carrier.kind].format(id=carrier.pk)}. "
                          "Store it now; it is not shown again:")
        self.stdout.write(secret)


def _sentence(details):
    return " ".join(f"{field}: {' '.join(messages)}" for field, messages in details.items())
