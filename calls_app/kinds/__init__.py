"""The registry of carrier kinds (docs/architecture.md, "A carrier is one declaration"):
each kind is one module of this package building one `CarrierKind` (calls_app/kinds/
base.py says what it declares). A new carrier is one module and its line below; its
carriers' `kind` and its calls' session transport are checked against this registry,
so it needs no migration."""
from calls_app.kinds import asterisk, signed_webhook, sip, twilio
from calls_app.kinds.base import CarrierKind
from console.errors import ValidationFailed

KINDS: dict[str, CarrierKind] = {kind.name: kind for kind in (signed_webhook.KIND, twilio.KIND, asterisk.KIND, sip.KIND)}
DEFAULT_KIND = signed_webhook.KIND.name
# The agent sessions of the browser; every other transport is a kind's.
WEB_TRANSPORT = "web"


def kind_named(name: str) -> CarrierKind:
    """The kind `name`, or ValidationFailed naming the kinds there are."""
    kind = KINDS.get(name)
    if kind is None:
        raise ValidationFailed.field("kind", f"One of {', '.join(KINDS)}.")
    return kind


def kind_of_transport(transport: str) -> CarrierKind:
    """The kind whose calls claim sessions of `transport`; ValueError for none."""
    for kind in KINDS.values():
        if kind.transport == transport:
            return kind
    raise ValueError(f"no carrier kind has the transport {transport!r}")


def transports() -> tuple[str, ...]:
    """Every transport an agent session may have: the browser's and the kinds'."""
    return (WEB_TRANSPORT, *(kind.transport for kind in KINDS.values() if kind.transport))
