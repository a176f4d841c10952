"""The `sip` kind: a SIP trunk (sipgate, Telekom, Placetel, easybell, a FRITZ!Box, a PBX
extension) at which Stimmwerk registers like an office phone, or a trunk that sends its
INVITEs from known addresses without registration (`static`). The SIP agent
(agent_app/sip, `manage.py sip_agent`, started by `make run` on RUN_SIP_PORT) is the
user agent: it registers every registering carrier with digest authentication, answers
the INVITEs for the tenants' numbers and speaks RTP (docs/telephony.md).

Its credentials (sealed as one JSON object like every kind's): the registrar
(`sip:HOST[:PORT]`), the account's username and password (the password is never shown
or logged), the transport, an optional From domain and outbound proxy, the default
number a call without a known number goes to (a FRITZ!Box sends its internal
extension), or `static` and the addresses allowed to send INVITEs."""
import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from calls_app.kinds.base import (
    AdapterBase,
    Capabilities,
    CarrierError,
    CarrierKind,
    CredentialField,
    DialOptions,
    Probe,
)
from calls_app.kinds.credentials import credentials_of
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164

if TYPE_CHECKING:
    from calls_app.models import Call, Carrier

NAME = "sip"
# The carrier call id of an outbound call the SIP agent is to dial (calls_app/sip_carriers.py).
DIAL_PREFIX = "sip-out-"
# The leg id of a warm hand-over's ring the SIP agent is to place (`sip-warm-<transfer>`).
RING_PREFIX = "sip-warm-"
TRANSPORTS = ("udp", "tcp", "tls")
DEFAULT_PORTS = {"udp": 5060, "tcp": 5060, "tls": 5061}
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_URI = re.compile(r"(?P<scheme>sips?):(?:(?P<user>[^@;:]{1,64})@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^:;@>]+)"
                  r"(?::(?P<port>\d{1,5}))?(?P<params>;[^\s]*)?")
_USER = re.compile(r"[A-Za-z0-9_.!~*'()&=+$,;?/%-]{1,64}")


@dataclass(frozen=True)
class SipUri:
    """A registrar's or proxy's address: `sip:HOST[:PORT]` (`sips:` means TLS)."""

    host: str
    port: int
    secure: bool = False

    def __str__(self) -> str:
        return f"{'sips' if self.secure else 'sip'}:{self.host}:{self.port}"


def parse_sip_uri(raw: str) -> SipUri:
    """`sip:HOST[:PORT]` as a SipUri; ValueError with a sentence otherwise."""
    match = _URI.fullmatch(raw.strip())
    host = match["host"].strip("[]") if match else ""
    if not match or not (_HOST.fullmatch(host) or _is_ip(host)):
        raise ValueError("A SIP URI: sip:HOST or sip:HOST:PORT (e.g. sip:sipconnect.sipgate.de).")
    port = int(match["port"] or DEFAULT_PORTS["tls" if match["scheme"] == "sips" else "udp"])
    if not 0 < port < 65536:
        raise ValueError("A port between 1 and 65535.")
    return SipUri(host=host, port=port, secure=match["scheme"] == "sips")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _clean_uri(raw: str) -> str:
    return str(parse_sip_uri(raw))


def _clean_username(raw: str) -> str:
    if not _USER.fullmatch(raw):
        raise ValueError("The account's SIP username: at most 64 letters, digits and . _ - + (no spaces, no '@').")
    return raw


def _clean_password(raw: str) -> str:
    if len(raw) > 128 or any(ord(c) < 32 for c in raw):
        raise ValueError("At most 128 printable characters.")
    return raw


def _clean_transport(raw: str) -> str:
    if raw.lower() not in TRANSPORTS:
        raise ValueError(f"One of {', '.join(TRANSPORTS)}.")
    return raw.lower()


def _clean_domain(raw: str) -> str:
    if not (_HOST.fullmatch(raw) or _is_ip(raw)):
        raise ValueError("A domain name, e.g. sipgate.de.")
    return raw.lower()


def _clean_flag(raw: str) -> str:
    if raw.lower() not in ("1", "yes", "ja", "true", "on", "0", "no", "nein", "false", "off"):
        raise ValueError("ja or nein.")
    return "1" if raw.lower() in ("1", "yes", "ja", "true", "on") else ""


def _clean_allow(raw: str) -> str:
    hosts = [host.strip() for host in raw.replace(" ", ",").split(",") if host.strip()]
    if not hosts or len(hosts) > 32:
        raise ValueError("One to 32 addresses or host names the trunk sends from.")
    for host in hosts:
        try:
            ipaddress.ip_network(host, strict=False)
        except ValueError:
            if not _HOST.fullmatch(host):
                raise ValueError(f"Not an address or host name: {host[:40]}") from None
    return ",".join(hosts)


def _clean_number(raw: str) -> str:
    try:
        return to_e164(raw)
    except InvalidPhoneNumber as exc:
        raise ValueError(str(exc)) from None


CREDENTIALS = (
    CredentialField("registrar", "Registrar", "sip:HOST[:PORT] des Anbieters, z. B. sip:sipconnect.sipgate.de",
                    required=False, clean=_clean_uri),
    CredentialField("username", "SIP-Benutzername", "die SIP-ID / der Benutzername des Kontos", required=False,
                    clean=_clean_username),
    CredentialField("password", "SIP-Passwort", "wird versiegelt gespeichert und nie angezeigt", secret=True,
                    required=False, clean=_clean_password),
    CredentialField("transport", "Transport", "udp, tcp oder tls", required=False, default="udp",
                    clean=_clean_transport),
    CredentialField("from_domain", "From-Domain", "Domain im From-Header, falls sie vom Registrar abweicht",
                    required=False, clean=_clean_domain),
    CredentialField("outbound_proxy", "Outbound-Proxy", "sip:HOST[:PORT], über den alle Anfragen gehen",
                    required=False, clean=_clean_uri),
    CredentialField("default_number", "Standardrufnummer", "Nummer für Anrufe ohne bekannte Rufnummer (z. B. die "
                    "interne Nebenstelle einer FRITZ!Box), E.164", required=False, clean=_clean_number),
    CredentialField("static", "Statischer Trunk", "ja: keine Registrierung, INVITEs nur von den erlaubten Adressen",
                    required=False, clean=_clean_flag, flag=True),
    CredentialField("allow", "Erlaubte Absender", "Adressen oder Hostnamen, von denen der Trunk INVITEs sendet",
                    required=False, clean=_clean_allow, many=True),
)


def _check(values: dict[str, str]) -> None:
    """A registering trunk needs its registrar, username and password; a static one the
    addresses it sends from."""
    if values.get("static"):
        if not values.get("allow"):
            raise ValidationFailed.field("allow", "A static sip carrier needs --allow HOST….")
        return
    for name in ("registrar", "username", "password"):
        if not values.get(name):
            raise ValidationFailed.field(name, f"A sip carrier needs --{name} (or --static --allow HOST…).")


@dataclass(frozen=True)
class SipAccount:
    """A `sip` carrier's credentials as the SIP agent uses them."""

    carrier_id: str
    registrar: SipUri | None
    username: str
    password: str
    transport: str
    from_domain: str
    outbound_proxy: SipUri | None
    default_number: str
    static: bool
    allow: tuple[str, ...]

    @property
    def registers(self) -> bool:
        return not self.static and self.registrar is not None and bool(self.username)

    @property
    def domain(self) -> str:
        """The domain of the account's address of record (From, To of its REGISTERs)."""
        return self.from_domain or (self.registrar.host if self.registrar else "")

    @property
    def next_hop(self) -> SipUri | None:
        """Where its requests are sent: the outbound proxy, else the registrar."""
        return self.outbound_proxy or self.registrar

    def __repr__(self) -> str:  # never the password, not even in a traceback
        return f"SipAccount({self.carrier_id!r}, registrar={self.registrar}, username={self.username!r})"


def sip_account(carrier: "Carrier") -> SipAccount:
    values = credentials_of(carrier)
    return SipAccount(
        carrier_id=carrier.pk,
        registrar=parse_sip_uri(values["registrar"]) if values.get("registrar") else None,
        username=values.get("username", ""), password=values.get("password", ""),
        transport=values.get("transport", "udp"), from_domain=values.get("from_domain", ""),
        outbound_proxy=parse_sip_uri(values["outbound_proxy"]) if values.get("outbound_proxy") else None,
        default_number=values.get("default_number", ""), static=bool(values.get("static")),
        allow=tuple(host for host in values.get("allow", "").split(",") if host),
    )


class SipCarrierAdapter(AdapterBase):
    """The runtime's view of a SIP trunk. A dial sends nothing itself: it gives the call
    the id `sip-out-<call>`, and the SIP agent, which holds the registration and the RTP
    ports, sends the INVITE once (calls_app/sip_carriers.py claims it). The same dial
    sent again names the same id, so dials are idempotent. The probe reads the
    registration state the agent wrote (`manage.py sip_check` asks the trunk itself).

    A warm hand-over's ring is the agent's too: `ring` names the leg `sip-warm-<transfer>`
    and the agent holding the caller's call sends the INVITE, lets the person hear the
    summary and bridges the caller's RTP to theirs itself (agent_app/sip/warm.py) — so it
    works whether or not the trunk honours REFER, and needs no `join`."""

    capabilities: ClassVar[Capabilities] = Capabilities(idempotent_dials=True, warm_transfer=True)

    def dial(self, *, call: "Call", options: DialOptions) -> str:
        if self.carrier is None:
            raise CarrierError("no sip carrier")
        if not sip_account(self.carrier).registers and not sip_account(self.carrier).static:
            raise CarrierError("the sip carrier has no account to dial with")
        return f"{DIAL_PREFIX}{call.pk}"

    def ring(self, *, call: "Call", target: str, transfer_id: int, seconds: int) -> str:
        return f"{RING_PREFIX}{transfer_id}"

    def ring_cancel(self, *, leg_id: str) -> None:
        """Nothing to ask: the agent CANCELs its INVITE at the ring's end itself
        (VOICE_WARM_TRANSFER_RING_SEC, before the waiting tool gives up)."""

    def probe(self) -> Probe:
        from calls_app.selectors import sip_registration_states

        state = sip_registration_states().get(self.carrier.pk if self.carrier is not None else "")
        if state is None:
            return Probe(usable=False, detail="Der SIP-Agent hat sich noch nicht gemeldet (make run / sip_agent).")
        usable = state["state"] in ("registered", "static")
        return Probe(usable=usable, detail=state.get("reason", "") or state["state"])


KIND = CarrierKind(
    name=NAME, label="SIP-Trunk (Registrierung)", credentials=CREDENTIALS, adapter=SipCarrierAdapter,
    websocket=False, transport="sip", wire=("pcm_s16le", 8000), uses_secret=False, check=_check,
    setup="the SIP agent (make run: RUN_SIP_PORT) registers it and answers its INVITEs (docs/telephony.md)",
)
