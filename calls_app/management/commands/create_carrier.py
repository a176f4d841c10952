"""`manage.py create_carrier ID [--kind KIND] [the kind's credential options]`: the
options are derived from the kinds' credentials forms (calls_app/kinds), so a new kind
brings its own."""
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from calls_app.kinds import DEFAULT_KIND, KINDS, kind_named
from calls_app.kinds.credentials import credentials_shown
from calls_app.models import Carrier
from calls_app.services import carrier_create, carrier_credentials_replace, carrier_rotate_secret
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164


def _fields() -> dict[str, Any]:
    """Every kind's credential fields by name (kinds may share a field's name)."""
    return {field.name: field for kind in KINDS.values() for field in kind.credentials}


class Command(BaseCommand):
    help = ("Create a telephony carrier. A carrier that authenticates with the secret we derive (signed-webhook, "
            "asterisk) gets it printed once, alone on the last line; one with credentials of its own (twilio: its "
            "account's SID and auth token) keeps them sealed and never prints a secret of them. With --rotate, "
            "issue a new secret, or store new credentials given as options.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("carrier_id", help="letters, digits, '-' and '_'; part of its /voice/… URLs")
        parser.add_argument("--kind", default=DEFAULT_KIND, choices=list(KINDS),
                            help=f"{', '.join(KINDS)} (default {DEFAULT_KIND})")
        parser.add_argument("--name", default="", help="display name")
        parser.add_argument("--caller-id", default="", help="the carrier's own number for outbound calls (E.164)")
        for field in _fields().values():
            if field.flag:
                parser.add_argument(field.option, dest=field.name, action="store_const", const="1", default="",
                                    help=field.help)
            else:
                parser.add_argument(field.option, dest=field.name, default="", help=field.help,
                                    nargs="+" if field.many else None)
        parser.add_argument("--rotate", action="store_true",
                            help="a new secret (or the credentials given) for an existing carrier")

    def handle(self, *args: Any, carrier_id: str, kind: str, name: str, caller_id: str, rotate: bool,
               **options: Any) -> None:
        given = {field: ",".join(value) if isinstance(value, list) else value
                 for field in _fields() if (value := options.get(field))}
        try:
            if rotate:
                carrier = Carrier.objects.filter(pk=carrier_id).first()
                if carrier is None:
                    raise CommandError(f"No carrier '{carrier_id}'.")
                if kind_named(carrier.kind).credentials:
                    if not given:
                        options_of = " ".join(field.option for field in kind_named(carrier.kind).credentials)
                        raise CommandError(f"A {carrier.kind} carrier's credentials are its own: give {options_of}.")
                    carrier_credentials_replace(carrier=carrier, credentials=given)
                    self.stdout.write(f"Carrier '{carrier.pk}': the new credentials are stored (sealed; secrets not "
                                      "shown again).")
                    return
                secret = carrier_rotate_secret(carrier=carrier)
            else:
                caller_id = to_e164(caller_id) if caller_id else ""
                carrier, secret = carrier_create(carrier_id=carrier_id, name=name, caller_id=caller_id, kind=kind,
                                                 credentials=given)
        except InvalidPhoneNumber as exc:
            raise CommandError(f"--caller-id: {exc}") from None
        except ValidationFailed as exc:
            raise CommandError(_sentence(exc.details)) from None
        except ValidationError as exc:
            raise CommandError(_sentence(exc.message_dict)) from None
        declared = kind_named(carrier.kind)
        setup = declared.setup.format(id=carrier.pk)
        if not declared.uses_secret:
            # Its credentials are the carrier's secrets: never echoed, not even masked.
            shown = ", ".join(f"{label} {value}" for label, value in
                              credentials_shown(declared.credentials, carrier).items() if value and value != "••••")
            self.stdout.write(f"Carrier '{carrier.pk}' ({carrier.kind}, {shown}): {setup}. Its credentials are "
                              "stored sealed.")
            return
        self.stdout.write(f"Carrier '{carrier.pk}': {setup}. Store it now; it is not shown again:")
        self.stdout.write(secret)


def _sentence(details: dict[str, Any]) -> str:
    return " ".join(f"{field}: {' '.join(messages)}" for field, messages in details.items())
