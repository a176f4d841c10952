"""One SIP call's media: the conversation core (agent_app/session.py) over RTP, like the
AudioSocket listener (agent_app/audiosocket.py) over its TCP frames.

aiortp (through aiosipua's `CallSession`) receives the caller's RTP — its jitter
buffer reorders, packet-loss concealment fills gaps, RFC 4733 `telephone-event`
packets become digits. A G.711 call (PCMA, PCMU) keeps its law on our side: the
conversation's wire is A-law/μ-law, so a provider hears the caller's bytes and its own
bytes go out as it made them (no transcoding, as on Twilio's path); aiortp's decoded
frames are encoded back with its own table, which gives the packet's bytes again (A-law
exactly; μ-law's "negative zero" comes back as zero). Other codecs (G.722) are PCM at
their rate, encoded by aiortp. We send one packet every 20 ms for the whole
call, the agent's audio or silence, so the caller's clock (and a recording of what it
heard) runs on; barge-in drops what was not sent yet. Symmetric RTP: our packets go to
where the caller's come from (`symmetric_rtp`), not only to the SDP's address.

The call ends once, whichever comes first: the caller's BYE (`hung_up`), the
conversation's end (the grant's end after the goodbye, a transfer: we send BYE), or
SIP_RTP_TIMEOUT_SEC without a packet from the caller."""
import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from django.conf import settings

from agent_app.audio import PhoneWire
from agent_app.codes import CLOSE_NORMAL
from agent_app.models import AgentSession
from agent_app.phone import PhoneBridge

logger = logging.getLogger("agent_app.sip")

PTIME_SEC = 0.02
# The most RTP a held-up loop sends at once to catch up with the call's clock.
CATCH_UP_SEC = 1.0
# The codecs whose law is the conversation's wire encoding.
G711 = {"PCMA": "alaw", "PCMU": "mulaw"}


class Media(Protocol):
    """A call's RTP session: aiosipua's `CallSession` (inbound: it negotiated our answer)
    or `RtpMedia` (outbound: our offer, the callee's answer)."""

    @property
    def codec_sample_rate(self) -> int: ...

    @property
    def rtp_session(self) -> Any: ...

    async def close(self) -> None: ...


class RtpMedia:
    """An aiortp session as `Media`."""

    def __init__(self, session: Any) -> None:
        self.session = session

    @property
    def codec_sample_rate(self) -> int:
        return int(self.session.codec.sample_rate)

    @property
    def rtp_session(self) -> Any:
        return self.session

    async def close(self) -> None:
        await self.session.close()


class SipCall(PhoneBridge):
    closed = False
    far_end_gone = False  # the caller's BYE ended the dialog: no BYE of ours

    def __init__(self, sip_call_id: str, media: Media, *, log_id: str, hang_up: Callable[[], object],
                 refer: Callable[[str], Awaitable[bool]] | None = None,
                 on_closed: Callable[["SipCall"], None] | None = None,
                 negotiated: tuple[str, int] | None = None) -> None:
        self.sip_call_id, self.media = sip_call_id, media
        # The SDP's RTP address, and the source the stream latched on (its first packet's).
        self.negotiated = negotiated
        self.peer: tuple[str, int] | None = None
        self.strangers = 0
        self.hang_up = hang_up
        self.log_id = log_id
        self.refer = refer
        self.on_closed = on_closed
        self.outbox = bytearray()
        self.tasks: list[asyncio.Task[None]] = []
        self.last_packet = asyncio.get_running_loop().time()
        self.ended = asyncio.Event()
        # The caller's audio and digits as aiortp delivers them (at most ~10 s queued).
        self.inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=500)

    # --- set-up ---------------------------------------------------------------------
    def start(self, session: AgentSession) -> None:
        rate = self.media.codec_sample_rate
        rtp = self.media.rtp_session
        codec = rtp.codec
        law = G711.get(codec.name) if codec is not None else None
        self.g711 = codec if law else None  # aiortp's codec, whose table gives the packet's bytes again
        wire = PhoneWire(law or "pcm_s16le", rate)
        self.frame_bytes = int(rate * PTIME_SEC) * wire.sample_bytes
        self.silence = wire.from_pcm(bytes(self.frame_bytes // wire.sample_bytes * 2), rate)
        self.begin(session, wire)
        rtp.on_audio = self._audio
        rtp.on_dtmf = self._dtmf
        # aiortp follows any source (symmetric RTP): we follow the first one only (or the
        # SDP's address), so a third party's packets neither reach the conversation nor
        # redirect our audio. (aiortp 0.8's transport callback, pinned.)
        transport = rtp._rtp_transport
        transport._on_rtp = partial(self._from, transport._on_rtp)
        self.tasks = [asyncio.create_task(self._pace()), asyncio.create_task(self._watch()),
                      asyncio.create_task(self._hear())]

    def _from(self, deliver: Callable[[bytes, tuple[str, int]], None], data: bytes, addr: tuple[str, int]) -> None:
        if self.peer is None or addr == self.negotiated:
            self.peer = addr
        elif addr != self.peer:
            self.strangers += 1
            if self.strangers in (1, 100, 10_000):
                logger.warning("SIP call %s: RTP from %s:%s, not the call's peer, ignored (%d packets)", self.log_id,
                               addr[0], addr[1], self.strangers)
            return
        deliver(data, addr)

    def _audio(self, pcm: bytes, timestamp: int) -> None:
        self.last_packet = asyncio.get_running_loop().time()
        self._queue(("audio", self.g711.encode(pcm) if self.g711 is not None else pcm))

    def _dtmf(self, digit: str, duration: int) -> None:
        self.last_packet = asyncio.get_running_loop().time()
        logger.info("SIP call %s: DTMF %s", self.log_id, digit)
        self._queue(("dtmf", digit))

    def _queue(self, item: tuple[str, Any]) -> None:
        try:
            self.inbox.put_nowait(item)
        except asyncio.QueueFull:  # the conversation is held up: a late frame is worth nothing
            logger.info("SIP call %s: a frame dropped (the conversation is behind)", self.log_id)

    async def _hear(self) -> None:
        """The caller's audio and digits, in their order, into the conversation."""
        conversation = self.conversation
        assert conversation is not None
        try:
            while not conversation.closing:
                kind, value = await self.inbox.get()
                if kind == "audio":
                    await self.heard(value)
                else:
                    await conversation.dtmf(value)
        except Exception as exc:
            await conversation.fail(exc, "the SIP call")

    async def _pace(self) -> None:
        """One 20 ms packet per tick of the call's clock: the agent's audio, else
        silence. A loop held up (a busy machine) sends the packets it owes at once, up
        to CATCH_UP_SEC of them: the phone's jitter buffer absorbs a burst, whereas a
        gap would be a dropout the caller hears and would shift its timeline."""
        loop = asyncio.get_running_loop()
        rtp = self.media.rtp_session
        send = rtp.send_audio_pcm_auto if self.g711 is None else rtp.send_audio_auto  # G.711 as it is
        started, sent = loop.time(), 0
        while not self.closed:
            owed = int((loop.time() - started) / PTIME_SEC) + 1 - sent
            if owed > CATCH_UP_SEC / PTIME_SEC:  # a longer stall: what is that old is worth nothing
                sent += owed - int(CATCH_UP_SEC / PTIME_SEC)
                owed = int(CATCH_UP_SEC / PTIME_SEC)
            for _ in range(max(0, owed)):
                # The agent's audio (its last packet filled up with silence), else silence.
                chunk = (bytes(self.outbox[:self.frame_bytes]) + self.silence)[:self.frame_bytes]
                del self.outbox[:self.frame_bytes]
                try:
                    send(chunk)
                except (OSError, RuntimeError, ValueError) as exc:
                    logger.info("SIP call %s: RTP not sent (%r)", self.log_id, exc)
                sent += 1
            await asyncio.sleep(max(0.0, started + sent * PTIME_SEC - loop.time()))

    async def _watch(self) -> None:
        """Ends the call when the caller's RTP stops for SIP_RTP_TIMEOUT_SEC."""
        loop = asyncio.get_running_loop()
        timeout = settings.SIP_RTP_TIMEOUT_SEC
        while not self.closed:
            quiet = loop.time() - self.last_packet
            if quiet >= timeout:
                logger.warning("SIP call %s: no RTP for %.0f s; the call ends", self.log_id, quiet)
                await self.end_call(send_bye=True)
                return
            await asyncio.sleep(min(1.0, timeout - quiet + 0.05))

    # --- the end --------------------------------------------------------------------
    async def hung_up(self) -> None:
        """The caller's BYE (already answered 200 by aiosipua)."""
        await self.end_call(send_bye=False)

    async def end_call(self, *, send_bye: bool) -> None:
        if not send_bye:
            self.far_end_gone = True
        conversation = self.conversation
        if conversation is not None and not conversation.closing:
            await conversation.end(CLOSE_NORMAL)  # books, then close()
        else:
            await self.close(CLOSE_NORMAL)
        await self.finish()

    # --- the transport ----------------------------------------------------------------
    async def send_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            logger.info("SIP call %s: %s", self.log_id, event.get("code"))

    async def send_wire(self, chunk: bytes) -> None:
        self.outbox += chunk

    async def clear_audio(self) -> None:
        self.outbox.clear()

    async def transfer(self, target: str, *, warm: bool = False) -> None:
        """REFER the caller to `target` (`Refer-To: sip:<target>@<registrar>`); raises when
        the trunk refuses it (the conversation goes on). A sip carrier rings nobody for a
        warm hand-over (its capabilities say so), so `warm` changes nothing here."""
        if self.refer is None or not await self.refer(target):
            raise RuntimeError("the trunk refused the REFER")

    async def close(self, code: int | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        await self.keep_recording()
        if not self.far_end_gone:
            try:
                self.hang_up()  # our BYE
            except (OSError, RuntimeError, ValueError) as exc:
                logger.info("SIP call %s: BYE not sent (%r)", self.log_id, exc)
        await self.media.close()
        self.ended.set()
        if self.on_closed is not None:
            self.on_closed(self)
