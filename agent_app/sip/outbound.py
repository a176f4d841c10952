"""Outbound calls through a SIP trunk: callbacks (`POST /voice/v1/calls`, "Rückruf
starten") and campaigns dial a `sip` carrier like any other (calls_app.dialing.call_dial);
its adapter gives the call the id `sip-out-<call>` and sends nothing, and the SIP agent
— which holds the registration and the RTP ports — sends the INVITE here.

Exactly once: the agent claims each dial before its INVITE (a unique carrier event,
calls_app/sip_carriers.py), so no dial is ever sent twice — not by a second agent, not
after a restart; an INVITE that got no final answer is CANCELled, never re-sent, and a
dial whose agent died is booked by the sweep. The INVITE carries the account's username
in `From` and the number shown in `P-Preferred-Identity` (as sipgate requires), offers
PCMA first, then PCMU, and RFC 4733 events, and answers the trunk's digest challenge.
The callee's answer starts the conversation (the same core as an inbound call: the
grant's end, the goodbye, the booking once); busy, no answer and declined end the call
with Twilio's statuses (`busy`, `no-answer`, `failed`)."""
import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import aiortp
from aiosipua import SipDigestAuth
from aiosipua.sdp import Codec
from aiosipua.sdp_negotiate import build_sdp
from django.conf import settings

from agent_app import services
from agent_app.services import agent_session_claim
from agent_app.sip.call import JITTER_PREFETCH_FRAMES, RtpMedia, SipCall
from agent_app.sip.registration import resolve
from agent_app.threads import off_loop
from calls_app import phone_calls
from calls_app.kinds.sip import KIND, SipAccount
from calls_app.sip_carriers import SipDial, sip_dial_claim, sip_dials_due
from console.phone import mask

if TYPE_CHECKING:
    from agent_app.sip.agent import SipAgent

logger = logging.getLogger("agent_app.sip")

POLL_SEC = 0.5
ERROR_PAUSE_SEC = 10.0
TELEPHONE_EVENT = 101
# A final answer of the callee's side and the call status it ends the call with.
BUSY, DECLINED = (486, 600), (603,)
NO_ANSWER = (408, 480, 487)


def outcome_of(status: int) -> str:
    """Twilio's status for a refused INVITE: busy (also declined, as Twilio reports a
    rejected call), no-answer, else failed."""
    if status in BUSY or status in DECLINED:
        return "busy"
    if status in NO_ANSWER:
        return "no-answer"
    return "failed"


def _domain(account: SipAccount) -> str:
    registrar = account.registrar
    if account.from_domain or registrar is None:
        return account.domain
    return registrar.host if registrar.port == 5060 else f"{registrar.host}:{registrar.port}"


class Dialler:
    def __init__(self, agent: "SipAgent") -> None:
        self.agent = agent

    async def run(self) -> None:
        """Sends the INVITE of each dial that is due, once."""
        window = settings.VOICE_RING_TIMEOUT_SEC + 30
        while True:
            try:
                for dial in await off_loop(sip_dials_due)(within_sec=window):
                    account = self.agent.accounts.get(dial.carrier_id)
                    if account is None or not await off_loop(sip_dial_claim)(dial=dial):
                        continue
                    self.agent._spawn(self.dial(dial, account))
            except Exception:  # the database away: try again later, not twice a second
                logger.error("SIP agent: the due dials could not be read", exc_info=True)
                await asyncio.sleep(ERROR_PAUSE_SEC)
            await asyncio.sleep(POLL_SEC)

    async def _end(self, dial: SipDial, status: str) -> None:
        carrier = await off_loop(phone_calls.phone_carrier)(carrier_id=dial.carrier_id, kind=KIND.name)
        if carrier is not None:
            await off_loop(phone_calls.call_phone_status)(carrier=carrier, carrier_call_id=dial.carrier_call_id,
                                                               status=status, seconds=0)

    async def dial(self, dial: SipDial, account: SipAccount) -> None:
        agent = self.agent
        port = agent.rtp.take()
        try:
            await self._dial(dial, account, port)
        except Exception:
            logger.error("SIP call %s: the dial failed", dial.call_id, exc_info=True)
            agent.rtp.give_back(port)
            await self._end(dial, "failed")

    async def _dial(self, dial: SipDial, account: SipAccount, port: int) -> None:
        agent = self.agent
        placed = await place(agent, account, to_e164=dial.to_e164, from_e164=dial.from_e164, port=port,
                             ring_sec=settings.VOICE_RING_TIMEOUT_SEC, log_id=dial.call_id)
        if isinstance(placed, str):
            return await self._end(dial, placed)
        media, remote, hang_up = placed.media, placed.remote, placed.hang_up
        carrier = await off_loop(phone_calls.phone_carrier)(carrier_id=dial.carrier_id, kind=KIND.name)
        call = await off_loop(phone_calls.outbound_call_of)(carrier=carrier, call_id=dial.call_id) \
            if carrier is not None else None
        token = await off_loop(services.phone_call_answer)(call=call, transport=KIND.transport) \
            if call is not None else None
        session = await off_loop(agent_session_claim)(token=token, transport=KIND.transport) if token else None
        if session is None:  # the call ended meanwhile (its grant, the sweep): nothing to say
            hang_up()
            await media.close()
            agent.rtp.give_back(port)
            return
        bridge = SipCall(placed.sip_call_id, media, log_id=dial.call_id, hang_up=hang_up,
                         refer=None, on_closed=partial(agent._closed, port=port), negotiated=remote)
        agent.calls[placed.sip_call_id] = bridge
        bridge.start(session)


@dataclass(frozen=True)
class Placed:
    """An INVITE of ours the callee answered: its dialog's Call-ID, the RTP session with
    the callee's address, and how to hang it up (our BYE)."""

    sip_call_id: str
    media: RtpMedia
    remote: tuple[str, int]
    hang_up: Callable[[], object]


async def place(agent: "SipAgent", account: SipAccount, *, to_e164: str, from_e164: str, port: int,
                ring_sec: float, log_id: str) -> Placed | str:
    """Sends an INVITE to `to_e164` through the account's trunk (our RTP on `port`) and
    waits up to `ring_sec` for the answer: the answered call, else its outcome as
    Twilio's status (no answer: the INVITE is CANCELled; busy, declined, failed) with
    the port given back. A callback's dial and a warm hand-over's ring both place calls so."""
    assert account.next_hop is not None
    hop = await resolve(account.next_hop)
    offer = build_sdp(agent.host, port, 8, "PCMA", dtmf_payload_type=TELEPHONE_EVENT,
                      advertised_ip=agent.advertised[0] if agent.advertised[0] != agent.host else None)
    audio = offer.audio
    assert audio is not None
    audio.formats.insert(1, "0")
    audio.attributes["rtpmap"].insert(1, "0 PCMU/8000")
    audio.codecs.insert(1, Codec(payload_type=0, encoding_name="PCMU", clock_rate=8000))
    domain = _domain(account)
    extra = {"P-Preferred-Identity": f"<sip:{from_e164}@{domain}>"} if from_e164 else {}
    outgoing = agent.uac.send_invite(
        f"sip:{account.username}@{domain}", f"sip:{to_e164}@{domain}", hop, offer, extra_headers=extra,
        user_agent="Stimmwerk", auth=SipDigestAuth(account.username, account.password) if account.password
        else None)
    logger.info("SIP call %s: INVITE to %s (SIP Call-ID %s)", log_id, mask(to_e164), outgoing.call_id)
    try:
        await outgoing.wait_answered(timeout=ring_sec)
    except TimeoutError:
        outgoing.cancel(agent.uac)
        agent.uac.remove_call(outgoing.call_id)
        agent.rtp.give_back(port)
        logger.info("SIP call %s: no answer in %s s; cancelled", log_id, ring_sec)
        return "no-answer"
    except RuntimeError:
        status = outgoing._reject_code
        agent.uac.remove_call(outgoing.call_id)
        agent.rtp.give_back(port)
        logger.info("SIP call %s: the callee's side answered %s", log_id, status)
        return outcome_of(status)
    answer = outgoing.sdp_answer
    chosen = [codec for codec in (answer.audio.codecs if answer and answer.audio else ())
              if codec.payload_type in (8, 0)]
    remote = answer.rtp_address if answer is not None else None
    events = [codec.payload_type for codec in (answer.audio.codecs if answer and answer.audio else ())
              if (codec.encoding_name or "").lower() == "telephone-event"]
    hang_up: Callable[[], object] = partial(outgoing.hangup, agent.uac)
    if not chosen or remote is None or not 0 < remote[1] < 65536:
        logger.warning("SIP call %s: the answer has no codec of ours; hung up", log_id)
        hang_up()
        agent.rtp.give_back(port)
        return "failed"
    rtp = await aiortp.RTPSession.create(local_addr=(agent.host, port), remote_addr=remote,
                                         payload_type=chosen[0].payload_type,
                                         dtmf_payload_type=events[0] if events else TELEPHONE_EVENT,
                                         symmetric_rtp=True, jitter_prefetch=JITTER_PREFETCH_FRAMES)
    logger.info("SIP call %s: answered (%s)", log_id, chosen[0].encoding_name)
    return Placed(outgoing.call_id, RtpMedia(rtp), remote, hang_up)
