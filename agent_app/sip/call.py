"""One SIP call's media: the conversation core (agent_app/session.py) over RTP, like the
AudioSocket listener (agent_app/audiosocket.py) over its TCP frames.

aiortp (through aiosipua's `CallSession`) receives the caller's RTP — its jitter
buffer reorders (JITTER_PREFETCH_FRAMES), packet-loss concealment fills gaps, RFC 4733
`telephone-event` packets become digits. A G.711 call (PCMA, PCMU) keeps its law on our side: the
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
SIP_RTP_TIMEOUT_SEC without a packet from the caller.

A warm hand-over (docs/telephony.md, "Warm transfer") bridges two legs here: the
caller's `SipCall` and the person's `RtpLeg` (our INVITE, agent_app/sip/warm.py). The
person hears the summary on their leg while the caller stays with the agent; joined,
each leg's decoded audio is the other's to send (resampled where their codecs' rates
differ, in the other leg's law), the conversation stops listening and speaking, and either side's BYE (or its
RTP stopping) ends both legs."""
import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from django.conf import settings

from agent_app.audio import PhoneWire, WireFormat
from agent_app.codes import CLOSE_NORMAL
from agent_app.models import AgentSession
from agent_app.phone import PhoneBridge

logger = logging.getLogger("agent_app.sip")

PTIME_SEC = 0.02
# The most RTP a held-up loop sends at once to catch up with the call's clock.
CATCH_UP_SEC = 1.0
# The most of the other leg's audio a bridged leg holds back (two clocks drift; a
# stalled loop catches up): older audio is dropped rather than heard ever later.
BRIDGE_BACKLOG_SEC = 0.3
# How long a joining caller waits at most for the person's summary to be heard out
# beyond its own length (the person's leg ends it sooner when they hang up).
SUMMARY_MARGIN_SEC = 5.0
# How many frames aiortp's jitter buffer holds before it hands on the oldest. Its slots
# put packets in order whatever this is, and a gap waits for its packet either way; a
# loudspeaker needs more frames to play on a steady clock, but our listener (the turn
# detector, a recogniser) takes frames as they come. Its default of four held every
# caller's words back 80 ms (docs/performance.md); one frame is complete when the next begins.
JITTER_PREFETCH_FRAMES = 1
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


class RtpLeg:
    """One SIP dialog's RTP: one 20 ms packet per tick of its clock (what waits in
    `outbox`, else silence), the peer's decoded audio to `received` (nothing listens on
    a bare leg) or, bridged, to its `partner`, and the end of the dialog once."""

    closed = False
    far_end_gone = False  # the far end's BYE ended the dialog: no BYE of ours
    partner: "RtpLeg | None" = None  # the leg it is bridged to (a warm hand-over)

    def __init__(self, sip_call_id: str, media: Media, *, log_id: str, hang_up: Callable[[], object],
                 on_closed: Callable[["RtpLeg"], None] | None = None,
                 negotiated: tuple[str, int] | None = None) -> None:
        self.sip_call_id, self.media = sip_call_id, media
        # The SDP's RTP address, and the source the stream latched on (its first packet's).
        self.negotiated = negotiated
        self.peer: tuple[str, int] | None = None
        self.strangers = 0
        self.hang_up = hang_up
        self.log_id = log_id
        self.on_closed = on_closed
        self.outbox = bytearray()
        self.drained = asyncio.Event()  # the outbox ran empty (what was in it went out)
        self.tasks: list[asyncio.Task[None]] = []
        self.last_packet = asyncio.get_running_loop().time()
        self.ended = asyncio.Event()

    def media_wire(self) -> PhoneWire:
        """The leg's wire: the codec's law for G.711 (`g711`: aiortp's codec, whose
        table gives the packet's bytes again), else PCM at the codec's rate."""
        self.rate = self.media.codec_sample_rate
        codec = self.media.rtp_session.codec
        law = G711.get(codec.name) if codec is not None else None
        self.g711 = codec if law else None
        self.rtp_wire = PhoneWire(law or "pcm_s16le", self.rate)
        self.frame_bytes = int(self.rate * PTIME_SEC) * self.rtp_wire.sample_bytes
        self.silence = self.rtp_wire.from_pcm(bytes(self.frame_bytes // self.rtp_wire.sample_bytes * 2), self.rate)
        return self.rtp_wire

    def encoded(self, pcm: bytes) -> bytes:
        """Decoded audio at the leg's rate in the leg's wire encoding."""
        return self.g711.encode(pcm) if self.g711 is not None else pcm

    def run_media(self) -> None:
        self.media_wire()
        rtp = self.media.rtp_session
        rtp.on_audio = self._audio
        rtp.on_dtmf = self._dtmf
        # aiortp follows any source (symmetric RTP): we follow the first one only (or the
        # SDP's address), so a third party's packets neither reach the conversation nor
        # redirect our audio. (aiortp 0.8's transport callback, pinned.)
        transport = rtp._rtp_transport
        transport._on_rtp = partial(self._from, transport._on_rtp)
        self.tasks += [asyncio.create_task(self._pace()), asyncio.create_task(self._watch())]

    def _from(self, deliver: Callable[[bytes, tuple[str, int]], None], data: bytes, addr: tuple[str, int]) -> None:
        if self.peer is None or addr == self.negotiated:
            self.peer = addr
        elif addr != self.peer:
            self.strangers += 1
            if self.strangers in (1, 100, 10_000):
                logger.warning("SIP call %s: RTP from %s:%s, not the call's peer, ignored (%d packets)", self.log_id,
                               addr[0], addr[1], self.strangers)
            return
        self.last_packet = asyncio.get_running_loop().time()  # any packet of the peer: audio, a key, comfort noise
        deliver(data, addr)

    def _audio(self, pcm: bytes, timestamp: int) -> None:
        partner = self.partner
        if partner is None:
            self.received(pcm)
            return
        if partner.rate != self.rate:
            pcm = WireFormat("pcm_s16le", partner.rate).from_pcm(pcm, self.rate)
        partner.outbox += partner.encoded(pcm)
        backlog = int(partner.rate * BRIDGE_BACKLOG_SEC) * partner.rtp_wire.sample_bytes
        if len(partner.outbox) > backlog:
            del partner.outbox[:len(partner.outbox) - backlog]

    def received(self, pcm: bytes) -> None:
        """The peer's audio while not bridged: a bare leg (the person hearing the
        summary) has nobody listening."""

    def _dtmf(self, digit: str, duration: int) -> None:
        pass  # a bare leg (the person hearing the summary) takes no keys

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
                if self.outbox:  # the agent's audio, its last packet filled up with silence
                    chunk = (bytes(self.outbox[:self.frame_bytes]) + self.silence)[:self.frame_bytes]
                    del self.outbox[:self.frame_bytes]
                else:
                    chunk = self.silence
                    self.drained.set()
                try:
                    send(chunk)
                except (OSError, RuntimeError, ValueError) as exc:
                    logger.info("SIP call %s: RTP not sent (%r)", self.log_id, exc)
                sent += 1
            await asyncio.sleep(max(0.0, started + sent * PTIME_SEC - loop.time()))

    async def play(self, audio: bytes) -> bool:
        """`audio` (PCM at the leg's rate) sent at real time; True once it went out in
        full, False when the leg ended first."""
        self.drained.clear()
        self.outbox += self.encoded(audio)
        drained, ended = asyncio.create_task(self.drained.wait()), asyncio.create_task(self.ended.wait())
        try:
            await asyncio.wait([drained, ended], timeout=len(audio) / (2 * self.rate) + SUMMARY_MARGIN_SEC,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            drained.cancel()
            ended.cancel()
        return self.drained.is_set() and not self.closed

    async def _watch(self) -> None:
        """Ends the call when the far end's RTP stops for SIP_RTP_TIMEOUT_SEC."""
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
        """The far end's BYE (already answered 200 by aiosipua)."""
        await self.end_call(send_bye=False)

    async def end_call(self, *, send_bye: bool) -> None:
        """A bare or bridged leg ends: bridged, the other leg with it."""
        if self.closed:
            return
        if not send_bye:
            self.far_end_gone = True
        partner = self.partner
        await self.release()
        if partner is not None:
            await partner.end_call(send_bye=True)

    async def release(self) -> None:
        """Our BYE (unless the far end's ended the dialog), the RTP closed, once."""
        if self.closed:
            return
        self.closed = True
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if not self.far_end_gone:
            try:
                self.hang_up()  # our BYE
            except (OSError, RuntimeError, ValueError) as exc:
                logger.info("SIP call %s: BYE not sent (%r)", self.log_id, exc)
        await self.media.close()
        self.ended.set()
        if self.on_closed is not None:
            self.on_closed(self)


class WarmLeg(RtpLeg):
    """The person's leg of a warm hand-over to `target`: `spoken` once they heard the
    summary, `joined` once the caller's leg is bridged to it."""

    def __init__(self, *args: Any, target: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.target = target
        self.spoken = asyncio.Event()
        self.joined = asyncio.Event()


class SipCall(RtpLeg, PhoneBridge):
    """The caller's leg, whose audio the conversation hears and whose outbox it speaks
    into, until a warm hand-over bridges it to the person's leg (`warm`)."""

    warm: WarmLeg | None = None  # the person of a warm hand-over, once they answered

    def __init__(self, sip_call_id: str, media: Media, *, log_id: str, hang_up: Callable[[], object],
                 refer: Callable[[str], Awaitable[bool]] | None = None,
                 on_closed: Callable[["RtpLeg"], None] | None = None,
                 negotiated: tuple[str, int] | None = None) -> None:
        super().__init__(sip_call_id, media, log_id=log_id, hang_up=hang_up, on_closed=on_closed,
                         negotiated=negotiated)
        self.refer = refer
        # The caller's audio and digits as aiortp delivers them (at most ~10 s queued).
        self.inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=500)

    # --- set-up ---------------------------------------------------------------------
    def start(self, session: AgentSession) -> None:
        self.begin(session, self.media_wire())
        self.run_media()
        self.listening = asyncio.create_task(self._hear())
        self.tasks.append(self.listening)

    def received(self, pcm: bytes) -> None:
        self._queue(("audio", self.encoded(pcm)))

    def _dtmf(self, digit: str, duration: int) -> None:
        if self.partner is not None:  # bridged: nobody listens for keys any more
            return
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

    # --- the end --------------------------------------------------------------------
    async def end_call(self, *, send_bye: bool) -> None:
        if self.partner is not None:  # handed over warm: the conversation was booked at the hand-over
            await super().end_call(send_bye=send_bye)
            await self.finish()
            return
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
        if self.partner is None:  # bridged, the caller hears the person, not the agent
            self.outbox += chunk

    async def clear_audio(self) -> None:
        self.outbox.clear()

    async def transfer(self, target: str, *, warm: bool = False) -> None:
        """Plain: REFER the caller to `target` (`Refer-To: sip:<target>@<registrar>`).
        Warm: the person at `target` answered our INVITE (agent_app/sip/warm.py); once
        they heard the summary, the caller's leg is bridged to theirs, and the hand-over
        needs nothing of the trunk. Raises when the trunk refuses the REFER or the
        person's leg is gone (the conversation goes on)."""
        if not warm:
            if self.refer is None or not await self.refer(target):
                raise RuntimeError("the trunk refused the REFER")
            return
        leg = self.warm
        if leg is None or leg.target != target or leg.closed:
            raise RuntimeError("the person's call is not there")
        spoken, ended = asyncio.create_task(leg.spoken.wait()), asyncio.create_task(leg.ended.wait())
        try:  # the summary bounds its own wait (RtpLeg.play)
            await asyncio.wait([spoken, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            spoken.cancel()
            ended.cancel()
        if leg.closed or self.closed:
            raise RuntimeError("the person or the caller hung up before the caller joined")
        self.outbox.clear()
        leg.outbox.clear()
        self.partner, leg.partner = leg, self
        leg.joined.set()
        logger.info("SIP call %s: bridged to the person's call %s", self.log_id, leg.log_id)

    async def close(self, code: int | None = None) -> None:
        """The conversation's end: the call's recording kept, then the dialog ended —
        unless it was handed over warm, when the bridge carries the call on and only
        the listening stops."""
        if self.closed:
            return
        if self.partner is not None:
            if self.listening is not asyncio.current_task():
                self.listening.cancel()
            await self.keep_recording()
            return
        await self.keep_recording()
        await self.release()
