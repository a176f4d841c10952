"""What the phone bridges share (docs/telephony.md): the media stream of the carrier kinds
(media_stream.py) and Asterisk's AudioSocket (audiosocket.py) are transports of the
conversation core (session.py) like the browser's WebSocket, plus:

- the goodbye at the grant's end (`goodbye_lead_sec`): a caller hears why the call ends;
- the recording, where the call keeps one: the caller's audio and the agent's as the two
  channels of an MP3 at 8 kHz (lameenc), encoded as the call goes and stored through
  calls_app when it ends;
- the hand-over to a person: `transfer_to(call_id, e164)` finds the call's conversation
  if this process holds it.

A bridge hands the caller's audio to `heard()` and sends the agent's through
`send_audio()` (its own `send_wire()` puts it on the wire)."""
import asyncio
import logging
import secrets
from collections.abc import Iterable

import lameenc
import numpy

from agent_app.audio import Samples, WireFormat, resample
from agent_app.models import AgentSession
from agent_app.session import CallContext, Conversation, Transport, off_loop
from calls_app.recordings import call_recording_store
from calls_app.warm_transfers import Resumed

logger = logging.getLogger("agent_app.phone")

# Seconds before the grant's end at which the agent starts saying goodbye (session.GOODBYE
# takes about six seconds to say).
GOODBYE_LEAD_SEC = 8
RECORDING_RATE = 8000
RECORDING_KBPS = 32
# The recording is encoded in pieces of this many seconds as the call goes (a piece
# takes about a millisecond), so a long call never holds its whole audio.
RECORDING_PIECE_SEC = 5

_store_recording = off_loop(call_recording_store)

# The conversations this process holds, by call id (for transfer_to).
live: dict[str, Conversation] = {}


async def transfer_to(call_id: str, e164: str) -> bool:
    """Hands the phone call `call_id` over to a person at `e164`: for a twilio call the
    carrier's REST API redirects it to a `<Dial>`, an AudioSocket call ends with the
    number kept for the dialplan to dial. The call keeps the note "Weitergeleitet an …"
    and its seconds up to now. False when this process does not hold the call or the
    carrier refused."""
    conversation = live.get(call_id)
    if conversation is None:
        return False
    return await conversation.transfer_to(e164)


def connection_id(headers: Iterable[tuple[bytes, bytes]] | None = None) -> str:
    """The id in a connection's log lines: the upgrade request's sane X-Request-Id, else new."""
    for name, value in headers or ():
        if name.lower() == b"x-request-id":
            text = value.decode("latin-1")[:128]
            if text and all(c.isalnum() or c in "._:@/+=-" for c in text) and text[0].isalnum():
                return text
    return secrets.token_hex(16)


class Recorder:
    """The call's audio in two channels at 8 kHz: the caller's (left) as it arrives, the
    agent's (right) placed at the caller's clock when it is sent (barge-in's `clear` may
    drop a fraction of a second of it at the far end)."""

    def __init__(self, wire: WireFormat) -> None:
        self.wire = wire
        self.caller = numpy.zeros(0, dtype=numpy.int16)
        self.agent = numpy.zeros(0, dtype=numpy.int16)
        self.encoder = lameenc.Encoder()
        self.encoder.set_bit_rate(RECORDING_KBPS)
        self.encoder.set_in_sample_rate(RECORDING_RATE)
        self.encoder.set_channels(2)
        self.encoder.set_quality(7)
        self.mp3 = bytearray()
        self.seconds = 0.0

    def _at_8k(self, data: bytes) -> Samples:
        samples = self.wire.samples(data)
        if self.wire.sample_rate != RECORDING_RATE:
            samples = resample(samples, self.wire.sample_rate, RECORDING_RATE)
        return samples.astype(numpy.int16)

    def heard(self, data: bytes) -> None:
        self.caller = numpy.concatenate([self.caller, self._at_8k(data)])
        if len(self.caller) >= RECORDING_PIECE_SEC * RECORDING_RATE:
            self._encode(len(self.caller))

    def spoke(self, data: bytes) -> None:
        gap = len(self.caller) - len(self.agent)
        if gap > 0:
            self.agent = numpy.concatenate([self.agent, numpy.zeros(gap, dtype=numpy.int16)])
        self.agent = numpy.concatenate([self.agent, self._at_8k(data)])

    def _encode(self, count: int) -> None:
        caller, agent = (numpy.pad(channel[:count], (0, count - len(channel[:count])))
                         for channel in (self.caller, self.agent))
        self.mp3 += self.encoder.encode(numpy.stack([caller, agent], axis=1).astype("<i2").tobytes())
        self.caller, self.agent = self.caller[count:], self.agent[count:]
        self.seconds += count / RECORDING_RATE

    def finish(self) -> bytes:
        """The MP3 of the whole call (what remains is encoded and the encoder flushed)."""
        self._encode(max(len(self.caller), len(self.agent)))
        self.mp3 += self.encoder.flush()
        return bytes(self.mp3)


class PhoneBridge(Transport):
    """The part every phone transport shares; see the module's docstring."""

    goodbye_lead_sec = GOODBYE_LEAD_SEC
    can_transfer = True  # a phone line: the assistant's transfer_call hands the call over
    conversation: Conversation | None = None
    recorder: Recorder | None = None
    log_id = "-"

    def begin(self, session: AgentSession, wire: WireFormat, resumed: Resumed | None = None) -> None:
        """The call's conversation starts (its token was claimed), or goes on after the
        call came back to it (`resumed`: not recorded again, its recording keeps the
        part before the hand-over)."""
        self.wire = wire
        if session.call.recording_enabled and resumed is None:
            self.recorder = Recorder(wire)
        self.conversation = Conversation(self, CallContext.of_agent_session(session, resumed))
        live[session.call_id] = self.conversation
        self.conversation.start()

    async def heard(self, data: bytes) -> None:
        """The caller's audio, in the wire format (once the call began)."""
        assert self.conversation is not None
        if self.recorder is not None:
            self.recorder.heard(data)
        await self.conversation.audio(data)

    async def send_audio(self, chunk: bytes) -> None:
        if self.recorder is not None:
            self.recorder.spoke(chunk)
        await self.send_wire(chunk)

    async def send_wire(self, chunk: bytes) -> None:
        raise NotImplementedError

    async def finish(self) -> None:
        """The connection is gone: the call is booked (once) and its recording stored."""
        conversation = self.conversation
        if conversation is None:
            return
        try:
            await conversation.stop()
        finally:
            if live.get(conversation.call_id) is conversation:  # not the call's resumed conversation
                del live[conversation.call_id]
            await self.keep_recording()

    async def keep_recording(self) -> None:
        """Stores the call's recording (once): when the call was booked and before the
        transport lets its connection go (so the far end's hang-up finds it stored), or
        when the connection dropped."""
        recorder, self.recorder = self.recorder, None
        if recorder is None or self.conversation is None:  # a recorder comes with the conversation
            return
        call_id = self.conversation.call_id
        try:
            await _store_recording(call_id=call_id, mp3=await asyncio.to_thread(recorder.finish))
        except Exception:
            logger.error("Phone call %s (%s): its recording could not be stored", call_id, self.log_id, exc_info=True)
