"""The SIP agent: Stimmwerk as a SIP user agent (docs/telephony.md; docs/architecture.md
says why aiosipua and aiortp). One process (`manage.py sip_agent`, started by `make
run` on RUN_SIP_PORT) listens on UDP and TCP, keeps every registering `sip` carrier
registered (calls_app/kinds/sip.py; the carriers are read anew every SIP_RELOAD_SEC,
so one created while it runs registers within that), answers the INVITEs for the
tenants' numbers and runs each call's conversation (agent_app/sip/call.py).

An INVITE is taken when it comes from a carrier's registrar or outbound proxy (or a
static trunk's allowed address), names a number a tenant owns — in the Request-URI, `To`
or `P-Called-Party-ID`; otherwise the carrier's default number (a FRITZ!Box sends its
internal extension) — and offers a codec we speak: PCMA first (German trunks), PCMU,
G.722 where its codec is installed. It is then registered like every phone call
(agent_app.services: the cap check, the call, its single-use token, claimed at once)
and answered with our SDP. Else: 403 (a sender that is no carrier's), 404 (no such
number: nothing booked, no call), 488 (no common codec, absurd SDP), 480 (the tenant's
minutes are used up), 503 (a source over SIP_INVITES_PER_SEC). A CANCEL before the
answer leaves nothing booked.

Bad input never stops it: a datagram over MAX_DATAGRAM_BYTES, a message that does not
parse or a source over SIP_MESSAGES_PER_SEC is dropped with a log line (one a second per
source and reason, with the count: a flood does not become a flood of log lines); an
INVITE whose SDP does not parse gets 488; aiosipua's TCP reader drops a connection whose
headers or declared body are too large."""
import asyncio
import contextlib
import ipaddress
import logging
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from aiortp.codecs import get_codec
from aiosipua import (
    CallSession,
    IncomingCall,
    SipMessage,
    SipRequest,
    SipResponse,
    SipUAC,
    SipUAS,
    TcpSipTransport,
    UdpSipTransport,
    parse_sdp,
    stringify_uri,
)
from aiosipua.sdp import SdpMessage
from aiosipua.transport import _read_sip_message, _UdpProtocol
from django.conf import settings

from agent_app import services
from agent_app.services import agent_session_claim
from agent_app.sip.call import JITTER_PREFETCH_FRAMES, RtpLeg, SipCall
from agent_app.sip.outbound import Dialler
from agent_app.sip.registration import Registrar, resolve
from agent_app.sip.warm import Ringer
from agent_app.threads import off_loop
from calls_app import phone_calls
from calls_app.errors import MinuteCapReached
from calls_app.kinds.base import caller_e164
from calls_app.kinds.sip import KIND, SipAccount
from calls_app.sip_carriers import sip_accounts, sip_registration_note
from console.phone import InvalidPhoneNumber, to_e164

logger = logging.getLogger("agent_app.sip")

MAX_DATAGRAM_BYTES = 8192
MAX_TCP_CONNECTIONS = 1000
TCP_IDLE_SEC = 180.0
# Our codecs in our order of preference: PCMA (German trunks), PCMU, G.722.
PREFERRED_CODECS = (8, 0, 9)
TELEPHONE_EVENT = re.compile(r"telephone-event", re.I)
_DTMF_INFO = re.compile(r"Signal\s*=\s*([0-9*#A-Da-d])")


class RateLimit:
    """A token bucket per source address: `rate` a second, bursts of twice that."""

    def __init__(self, rate: float) -> None:
        self.rate, self.burst = rate, max(1.0, 2 * rate)
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, source: str) -> bool:
        now = time.monotonic()
        if len(self.buckets) > 10_000:  # a spoofed-address flood: forget the old ones
            self.buckets.clear()
        tokens, then = self.buckets.get(source, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens < 1:
            self.buckets[source] = (tokens, now)
            return False
        self.buckets[source] = (tokens - 1, now)
        return True


class _Guard:
    """What both transports check before aiosipua parses a message."""

    def __init__(self) -> None:
        self.limit = RateLimit(settings.SIP_MESSAGES_PER_SEC)
        # Per (source, reason): the drops not logged yet and when the last line was written.
        self.dropped: dict[tuple[str, str], tuple[int, float]] = {}

    def admit(self, data: bytes, addr: tuple[str, int], proto: str) -> bool:
        if len(data) > MAX_DATAGRAM_BYTES:
            self._drop(addr[0], f"{proto} messages over {MAX_DATAGRAM_BYTES} bytes")
            return False
        if not self.limit.allow(addr[0]):
            self._drop(addr[0], f"messages over {self.limit.rate:.0f} a second")
            return False
        return True

    def _drop(self, source: str, reason: str) -> None:
        """Logs a dropped message: at once, then at most once a second per source and
        reason with the count since (a flood of 100,000 datagrams writes a few lines)."""
        now = time.monotonic()
        if len(self.dropped) > 10_000:  # a spoofed-address flood: forget the old ones
            self.dropped.clear()
        count, logged = self.dropped.get((source, reason), (0, -1.0))
        if now - logged < 1.0 and logged >= 0:
            self.dropped[source, reason] = (count + 1, logged)
            return
        logger.warning("SIP: %d message(s) from %s dropped: %s", count + 1, source, reason)
        self.dropped[source, reason] = (0, now)

    def flush(self) -> None:
        """Logs the drops not logged yet (a flood that ended within its second)."""
        for (source, reason), (count, _logged) in list(self.dropped.items()):
            if count:
                logger.warning("SIP: %d message(s) from %s dropped: %s", count, source, reason)
        self.dropped.clear()


class _UdpEndpoint(_UdpProtocol):
    """aiosipua's protocol without its `connection_made` assertion, which Python 3.11's
    selector transport fails (it is no `asyncio.DatagramTransport` subclass there): the
    failed callback logged an error at every start."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._owner._udp_transport = transport  # type: ignore[assignment]


class GuardedUdp(UdpSipTransport):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = _Guard()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _UdpEndpoint(self), local_addr=self.local_addr)
        self._udp_transport = transport

    def _dispatch(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.guard.admit(data, addr, "UDP"):
            super()._dispatch(data, addr)


class GuardedTcp(TcpSipTransport):
    """aiosipua's TCP transport with bounds on connections: at most MAX_TCP_CONNECTIONS
    at once (more are closed at once), and a connection that sends no whole message for
    TCP_IDLE_SEC is closed (a trunk sends keep-alives or reconnects; a peer that opens
    connections and says nothing, or a message a byte at a time, holds nothing for long)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = _Guard()

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        addr = (str(peer[0]), int(peer[1])) if peer else ("0.0.0.0", 0)
        if len(self._connections) >= MAX_TCP_CONNECTIONS:
            logger.warning("SIP: a TCP connection from %s refused (%d open)", addr[0], len(self._connections))
            writer.close()
            return
        self._connections[addr] = (reader, writer)
        try:
            while True:
                data = await asyncio.wait_for(_read_sip_message(reader), TCP_IDLE_SEC)
                if data is None:
                    break
                self._dispatch(data, addr)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, TimeoutError):
            pass
        finally:
            self._connections.pop(addr, None)
            writer.close()
            with contextlib.suppress(ConnectionError, TimeoutError):
                async with asyncio.timeout(5):
                    await writer.wait_closed()

    def _dispatch(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.guard.admit(data, addr, "TCP"):
            super()._dispatch(data, addr)


def _user(uri_or_address: str) -> str:
    """The user part of a SIP URI or name-addr (`"X" <sip:+4930…@host>;tag=…` → `+4930…`)."""
    match = re.search(r"(?:sips?|tel):([^@;>\s]{1,64})", uri_or_address or "")
    return match.group(1) if match else ""


def _e164(user: str) -> str:
    user = user.split(";")[0]
    if not user or not re.fullmatch(r"\+?[0-9]{3,20}", user):
        return ""
    try:
        return to_e164(user)
    except InvalidPhoneNumber:
        return ""


def _offer_codec(offer: SdpMessage | None) -> tuple[int, int] | None:
    """Our codec (payload type) and the offer's telephone-event type (0: none), or None
    when the offer has no usable audio (no common codec, an absurd address or port)."""
    audio = offer.audio if offer is not None else None
    address = offer.rtp_address if offer is not None else None
    if audio is None or address is None or not 0 < address[1] < 65536:
        return None
    try:
        ipaddress.ip_address(address[0])
    except ValueError:
        return None
    offered = [codec.payload_type for codec in audio.codecs]
    for pt in PREFERRED_CODECS:
        if pt in offered and _codec_available(pt):
            events = [codec.payload_type for codec in audio.codecs
                      if TELEPHONE_EVENT.search(codec.encoding_name or "") and 96 <= codec.payload_type <= 127]
            return pt, events[0] if events else 0
    return None


def _codec_available(pt: int) -> bool:
    try:
        get_codec(pt)
    except (ValueError, ImportError):
        return False
    return True


class RtpPorts:
    """Even ports of SIP_RTP_PORTS (RTP; RTCP on the odd one after it), handed out in turn."""

    def __init__(self, spec: str) -> None:
        first, _, last = spec.partition("-")
        low, high = int(first), int(last or first)
        self.ports = [port for port in range(low + low % 2, high, 2)]
        self.next = 0
        self.used: set[int] = set()

    def take(self) -> int:
        for _ in range(len(self.ports)):
            port = self.ports[self.next]
            self.next = (self.next + 1) % len(self.ports)
            if port not in self.used:
                self.used.add(port)
                return port
        raise OSError("every RTP port is in use")

    def give_back(self, port: int) -> None:
        self.used.discard(port)


class SipAgent:
    def __init__(self, host: str, port: int, *, advertised_host: str = "", rtp_ports: str = "40000-40999") -> None:
        self.host, self.port = host, port
        self.advertised = (advertised_host or host, port)
        self.rtp = RtpPorts(rtp_ports)
        self.accounts: dict[str, SipAccount] = {}
        self.registrars: dict[str, tuple[SipAccount, asyncio.Task[None]]] = {}
        self.calls: dict[str, RtpLeg] = {}  # the callers' calls and warm hand-overs' legs, by SIP Call-ID
        self.invites = RateLimit(settings.SIP_INVITES_PER_SEC)
        self.refers: dict[str, asyncio.Future[int]] = {}
        self.notifies: dict[str, asyncio.Future[int]] = {}
        self.addresses: dict[str, set[str]] = {}  # the addresses each carrier's INVITEs may come from
        self.tasks: set[asyncio.Task[Any]] = set()
        self.notes: dict[str, tuple[str, str]] = {}  # registration states not stored yet
        self.noted = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        self.udp = GuardedUdp(local_addr=(self.host, self.port))
        self.uac = SipUAC(self.udp, advertised_addr=self.advertised)
        self.uas = SipUAS(self.udp, uac=self.uac, user_agent="Stimmwerk", advertised_addr=self.advertised)
        self.tcp = GuardedTcp(local_addr=(self.host, self.port))
        self.uas_tcp = SipUAS(self.tcp, user_agent="Stimmwerk", advertised_addr=self.advertised)
        for uas in (self.uas, self.uas_tcp):
            self._wire(uas)
            await uas.start()
            dispatch = uas._on_message
            uas.transport.on_message = partial(self._message, dispatch=dispatch, uas=uas)

    def _wire(self, uas: SipUAS) -> None:
        uas.on_invite = partial(self._on_invite, uas=uas)
        uas.on_bye = self._bye
        uas.on_transfer_progress = self._transfer_progress
        uas._handlers["INFO"] = partial(self._info, uas)

    def _on_invite(self, call: IncomingCall, *, uas: SipUAS) -> None:
        self._spawn(self._invite(call, uas))

    async def run(self, ready: asyncio.Event | None = None) -> None:
        await self.start()
        logger.info("SIP agent listening on %s:%s (UDP and TCP)", self.host, self.port)
        if ready is not None:
            ready.set()
        dialler = asyncio.create_task(Dialler(self).run())
        ringer = asyncio.create_task(Ringer(self).run())
        writer = asyncio.create_task(self._notes())
        try:
            while True:
                try:
                    await self.reload()
                except Exception:
                    logger.error("SIP agent: the carriers could not be read", exc_info=True)
                self.udp.guard.flush()
                self.tcp.guard.flush()
                await asyncio.sleep(settings.SIP_RELOAD_SEC)
        finally:
            dialler.cancel()
            ringer.cancel()
            writer.cancel()
            await self.stop()

    async def stop(self) -> None:
        for _account, task in self.registrars.values():
            task.cancel()
        for call in list(self.calls.values()):
            with contextlib.suppress(Exception):
                await call.end_call(send_bye=True)
        await asyncio.sleep(0.05)  # the unregisters and BYEs leave
        await self.uas.stop()
        await self.uas_tcp.stop()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- the carriers -----------------------------------------------------------------------
    async def reload(self) -> None:
        """Registers the carriers that are new or changed, stops those that went."""
        accounts = {account.carrier_id: account for account in await off_loop(sip_accounts)()}
        for carrier_id, (account, task) in list(self.registrars.items()):
            if accounts.get(carrier_id) != account:
                task.cancel()
                del self.registrars[carrier_id]
        for carrier_id, account in accounts.items():
            self.addresses[carrier_id] = await self._addresses(account)
            if carrier_id in self.registrars:
                continue
            if account.registers:
                registrar = Registrar(self.uac, account, expires=settings.SIP_REGISTER_EXPIRES_SEC,
                                      backoff=settings.SIP_REGISTER_BACKOFF_SEC,
                                      on_state=partial(self._note, carrier_id))
                self.registrars[carrier_id] = (account, asyncio.create_task(registrar.run()))
            elif account.carrier_id not in self.accounts or self.accounts[carrier_id] != account:
                self._note(carrier_id, "static", "")
        self.accounts = accounts

    async def _addresses(self, account: SipAccount) -> set[str]:
        found = set()
        for uri in (account.registrar, account.outbound_proxy):
            if uri is not None:
                with contextlib.suppress(OSError):
                    found.add((await resolve(uri))[0])
        for host in account.allow:
            try:
                found.add(str(ipaddress.ip_network(host, strict=False)))
            except ValueError:
                with contextlib.suppress(OSError):
                    found.add(str((await asyncio.get_running_loop().getaddrinfo(host, None))[0][4][0]))
        return found

    def _note(self, carrier_id: str, state: str, reason: str) -> None:
        """The carrier's registration state, stored by `_notes` (one writer, in order: two
        writes at once could store an older state last)."""
        self.notes[carrier_id] = (state, reason)
        self.noted.set()

    async def _notes(self) -> None:
        while True:
            await self.noted.wait()
            self.noted.clear()
            notes, self.notes = self.notes, {}
            for carrier_id, (state, reason) in notes.items():
                try:
                    await off_loop(sip_registration_note)(carrier_id=carrier_id, state=state, reason=reason)
                except Exception:
                    logger.error("SIP carrier %s: its state could not be stored", carrier_id, exc_info=True)

    def _account_for(self, request: SipRequest, source: str) -> SipAccount | None:
        """The carrier an INVITE is for: the account named in the Request-URI among the
        carriers it may come from, else the one carrier it may come from."""
        allowed = [account for carrier_id, account in self.accounts.items()
                   if any(_in(source, address) for address in self.addresses.get(carrier_id, ()))]
        user = _user(request.uri)
        named = [account for account in allowed if account.username and account.username == user]
        return (named or allowed)[0] if named or allowed else None

    # --- messages -----------------------------------------------------------------------------
    def _message(self, msg: SipMessage, addr: tuple[str, int], *, dispatch: Callable[..., None],
                 uas: SipUAS) -> None:
        """Answers to our REFERs are ours; everything else goes to aiosipua, a 2xx to our
        INVITE after its dialog learnt the route set and the callee's Contact (aiosipua's
        UAC keeps neither, so its ACK and BYE would not pass a record-routing proxy), an
        INVITE only when its SDP parses (aiosipua's parser raises on e.g. `m=audio x`, and
        the INVITE would go unanswered, retransmitted for half a minute)."""
        if isinstance(msg, SipRequest) and msg.method.upper() == "INVITE" and not _sdp_parses(msg):
            logger.warning("SIP INVITE %s from %s: its SDP does not parse; refused", (msg.call_id or "-")[:64],
                           addr[0])
            uas._send_error(msg, 488, "Not Acceptable Here")
            return
        cseq = (msg.get_header("cseq") or "").upper() if isinstance(msg, SipResponse) else ""
        if isinstance(msg, SipResponse) and cseq.endswith("INVITE") and 200 <= msg.status_code < 300:
            outgoing = self.uac.get_call(msg.call_id or "")
            if outgoing is not None and not outgoing.dialog.route_set:
                routes = [route.strip() for value in msg.headers.get("record-route") for route in value.split(",")]
                outgoing.dialog.route_set = list(reversed(routes))
                if msg.contact:
                    outgoing.dialog.remote_target = stringify_uri(msg.contact[0].uri)
        if isinstance(msg, SipResponse) and cseq.endswith("REFER"):
            waiting = self.refers.get(msg.call_id or "")
            if waiting is not None and not waiting.done() and msg.status_code >= 200:
                waiting.set_result(msg.status_code)
            return
        dispatch(msg, addr)

    def _bye(self, call: IncomingCall, request: SipRequest) -> None:
        bridge = self.calls.get(call.call_id)
        if bridge is not None:
            logger.info("SIP call %s: the far end hung up", bridge.log_id)
            self._spawn(bridge.hung_up())

    def _info(self, uas: SipUAS, request: SipRequest, addr: tuple[str, int]) -> None:
        """SIP INFO DTMF (application/dtmf-relay `Signal=1`): noted like an RFC 4733 digit."""
        bridge = self.calls.get(request.call_id or "")
        if bridge is None:
            uas._send_error(request, 481, "Call/Transaction Does Not Exist")
            return
        uas._send_error(request, 200, "OK")
        match = _DTMF_INFO.search(request.text or "")
        if match:
            bridge._dtmf(match.group(1).upper(), 0)

    def _transfer_progress(self, call_id: str, status: int, reason: str) -> None:
        logger.info("SIP call %s: transfer NOTIFY %s %s", call_id, status, reason)
        waiting = self.notifies.get(call_id)
        if waiting is not None and not waiting.done() and status >= 200:
            waiting.set_result(status)

    # --- an INVITE ----------------------------------------------------------------------------
    async def _invite(self, call: IncomingCall, uas: SipUAS) -> None:
        try:
            await self._take(call, uas)
        except Exception:
            logger.error("SIP INVITE %s from %s failed", (call.call_id or "-")[:64], call.source_addr[0], exc_info=True)
            self._refuse(call, uas, 500, "Server Internal Error")

    def _refuse(self, call: IncomingCall, uas: SipUAS, status: int, reason: str) -> None:
        if not call._answered and uas._calls.get(call.call_id) is call:
            with contextlib.suppress(Exception):
                call.reject(status, reason)
        uas._calls.pop(call.call_id, None)
        uas._remove_invite_transaction(call.invite)

    async def _take(self, call: IncomingCall, uas: SipUAS) -> None:
        request, (source, _port) = call.invite, call.source_addr
        log_id = (call.call_id or "-")[:64]
        if not self.invites.allow(source):
            logger.warning("SIP INVITE %s: %s sends more than %s a second; refused", log_id, source,
                           settings.SIP_INVITES_PER_SEC)
            return self._refuse(call, uas, 503, "Service Unavailable")
        account = self._account_for(request, source)
        if account is None:
            logger.warning("SIP INVITE %s from %s: no carrier's address; refused", log_id, source)
            return self._refuse(call, uas, 403, "Forbidden")
        number = None
        called = ""
        for header in (request.uri, request.get_header("to") or "",
                       request.get_header("p-called-party-id") or ""):
            called = _e164(_user(header))
            number = await off_loop(phone_calls.number_route)(e164=called) if called else None
            if number is not None:
                break
        if number is None and account.default_number:
            called = account.default_number
            number = await off_loop(phone_calls.number_route)(e164=called)
        if number is None:
            logger.warning("SIP INVITE %s (carrier %s): no tenant has the number called", log_id, account.carrier_id)
            return self._refuse(call, uas, 404, "Not Found")
        chosen = _offer_codec(call.sdp_offer)
        if chosen is None:
            logger.warning("SIP INVITE %s (carrier %s): no usable audio offered", log_id, account.carrier_id)
            return self._refuse(call, uas, 488, "Not Acceptable Here")
        identity = request.get_header("p-asserted-identity") or request.get_header("from") or ""
        from_e164 = caller_e164(_e164(_user(identity)))
        carrier = await off_loop(phone_calls.phone_carrier)(carrier_id=account.carrier_id, kind=KIND.name)
        if carrier is None:
            return self._refuse(call, uas, 404, "Not Found")
        if uas._calls.get(call.call_id) is not call:  # cancelled meanwhile: nothing booked
            return
        media = await self._media(call, chosen)
        try:
            _call, token = await off_loop(services.phone_call_register)(
                carrier=carrier, number=number, carrier_call_id=call.call_id[:64], from_e164=from_e164,
                to_e164=called, transport=KIND.transport)
        except MinuteCapReached:
            await off_loop(services.phone_call_reject)(
                carrier=carrier, number=number, carrier_call_id=call.call_id[:64], from_e164=from_e164,
                to_e164=called)
            await self._release(media)
            return self._refuse(call, uas, 480, "Temporarily Unavailable")
        except Exception:
            await self._release(media)
            raise
        session = await off_loop(agent_session_claim)(token=token, transport=KIND.transport)
        if session is None:
            await self._release(media)
            return self._refuse(call, uas, 500, "Server Internal Error")
        bridge = SipCall(call.call_id, media, log_id=log_id, hang_up=call.hangup,
                         refer=partial(self._refer, call, account), on_closed=partial(self._closed, uas=uas),
                         negotiated=call.sdp_offer.rtp_address if call.sdp_offer is not None else None)
        self.calls[call.call_id] = bridge
        call.accept(media.sdp_answer)
        logger.info("SIP call %s (carrier %s): answered with %s", log_id, account.carrier_id,
                    {8: "PCMA", 0: "PCMU", 9: "G722"}[chosen[0]])
        bridge.start(session)
        if uas._calls.get(call.call_id) is not call:  # the CANCEL crossed our answer
            await bridge.end_call(send_bye=True)

    async def _media(self, call: IncomingCall, chosen: tuple[int, int]) -> CallSession:
        assert call.sdp_offer is not None
        pt, events = chosen
        for _ in range(8):
            port = self.rtp.take()
            media = CallSession(self.host, port, call.sdp_offer, advertised_ip=self.advertised[0]
                                if self.advertised[0] != self.host else None,
                                supported_codecs=[pt], dtmf_payload_type=events or 101, symmetric_rtp=True,
                                session_name="Stimmwerk", jitter_prefetch=JITTER_PREFETCH_FRAMES)
            try:
                await media.start()
            except OSError:
                self.rtp.give_back(port)
                continue
            media.port_taken = port  # type: ignore[attr-defined]
            return media
        raise OSError("no free RTP port")

    async def _release(self, media: CallSession) -> None:
        await media.close()
        self.rtp.give_back(getattr(media, "port_taken", 0))

    def _closed(self, bridge: RtpLeg, *, uas: SipUAS | None = None, port: int = 0) -> None:
        call_id = bridge.sip_call_id
        self.calls.pop(call_id, None)
        if uas is not None:
            uas._calls.pop(call_id, None)
        self.uac.remove_call(call_id)
        self.rtp.give_back(port or getattr(bridge.media, "port_taken", 0))

    async def _refer(self, call: IncomingCall, account: SipAccount, target: str) -> bool:
        """Blind transfer: REFER the caller to `target` at the carrier's registrar (else the
        host it came from); True once it accepted (202) and no NOTIFY reported a failure
        within NOTIFY_WAIT_SEC."""
        registrar = account.registrar
        host = account.from_domain or (f"{registrar.host}:{registrar.port}" if registrar is not None
                                       and registrar.port != 5060 else account.domain) or call.source_addr[0]
        refer_to = f"sip:{target}@{host}"
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[int] = loop.create_future()
        outcome: asyncio.Future[int] = loop.create_future()
        self.refers[call.call_id], self.notifies[call.call_id] = accepted, outcome
        try:
            request = call.dialog.create_request("REFER", via_host=self.advertised[0], via_port=self.advertised[1])
            request.headers.set_single("Refer-To", f"<{refer_to}>")
            request.headers.set_single("Referred-By", f"<sip:{account.username or 'stimmwerk'}@{host}>")
            request.headers.set_single("Contact", f"<sip:{self.advertised[0]}:{self.advertised[1]}>")
            (call.transport or self.udp).send(request, call.source_addr)
            logger.info("SIP call %s: REFER to %s", call.call_id[:64], refer_to)
            status = await asyncio.wait_for(accepted, 8)
            if status >= 300:
                logger.warning("SIP call %s: the trunk refused the REFER (%s)", call.call_id[:64], status)
                return False
            with contextlib.suppress(TimeoutError):
                final = await asyncio.wait_for(outcome, NOTIFY_WAIT_SEC)
                if final >= 300:
                    logger.warning("SIP call %s: the transfer failed (NOTIFY %s)", call.call_id[:64], final)
                    return False
            return True
        except TimeoutError:
            logger.warning("SIP call %s: no answer to the REFER", call.call_id[:64])
            return False
        finally:
            self.refers.pop(call.call_id, None)
            self.notifies.pop(call.call_id, None)


NOTIFY_WAIT_SEC = 10.0


def _sdp_parses(request: SipRequest) -> bool:
    if not request.body or request.content_type != "application/sdp":
        return True
    try:
        parse_sdp(request.text)
    except Exception:  # whatever a hostile body makes the parser raise
        return False
    return True


def _in(source: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(source) in ipaddress.ip_network(address, strict=False)
    except ValueError:
        return source == address
