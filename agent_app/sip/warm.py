"""A warm hand-over of a SIP call (docs/telephony.md, "Warm transfer"), bridged by the
SIP agent itself, so it needs nothing of the trunk but a second INVITE (no REFER,
no `Replaces`).

transfer_call's warm mode (calls_app.warm_transfers) asks the `sip` adapter to ring,
which names the leg `sip-warm-<transfer>` and sends nothing: the agent holding the
caller's call finds the ring here (`Ringer`, polling like the dials) and places the
INVITE to the person through the same trunk (outbound.place). While it rings, the
caller stays with the agent. Nobody answering within VOICE_WARM_TRANSFER_RING_SEC (or
busy, declined, failed): the INVITE is CANCELled and the ring decided `not_answered`,
so the tool tells the model and the agent offers a callback, as on every carrier. The
person answering: the ring is decided `answered` and its summary taken (once), spoken
on their leg; the conversation's hand-over (SipCall.transfer) then bridges the caller
to them. A person who answers after the ring was given up, or whom the caller never
joins within JOIN_WAIT_SEC, hears that the caller is gone."""
import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING

from django.conf import settings

from agent_app.audio import WireFormat
from agent_app.conversation import speak_whole
from agent_app.sip.call import SipCall, WarmLeg
from agent_app.sip.outbound import place
from agent_app.threads import off_loop
from calls_app import phone_calls
from calls_app.kinds.sip import KIND
from calls_app.sip_carriers import SipRing, sip_rings_due
from calls_app.warm_transfers import GONE, warm_leg_answered, warm_leg_ended

if TYPE_CHECKING:
    from agent_app.sip.agent import SipAgent

logger = logging.getLogger("agent_app.sip")

POLL_SEC = 0.5
ERROR_PAUSE_SEC = 10.0
# How long a person who heard the summary waits for the caller to be joined (the
# conversation says its line first); after it they hear that the caller is gone.
JOIN_WAIT_SEC = 30.0


class Ringer:
    def __init__(self, agent: "SipAgent") -> None:
        self.agent = agent
        self.ringing: set[int] = set()

    async def run(self) -> None:
        """Places each ring of the agent's calls, once."""
        while True:
            held = {call.conversation.call_id: call for call in list(self.agent.calls.values())
                    if isinstance(call, SipCall) and call.conversation is not None and not call.closed}
            if held:
                try:
                    for ring in await off_loop(sip_rings_due)(call_ids=held):
                        if ring.transfer_id not in self.ringing and ring.call_id in held:
                            self.ringing.add(ring.transfer_id)
                            self.agent._spawn(self.ring(ring, held[ring.call_id]))
                except Exception:  # the database away: try again later, not twice a second
                    logger.error("SIP agent: the warm hand-overs could not be read", exc_info=True)
                    await asyncio.sleep(ERROR_PAUSE_SEC)
            await asyncio.sleep(POLL_SEC)

    async def ring(self, ring: SipRing, caller: SipCall) -> None:
        try:
            await self._ring(ring, caller)
        except Exception:
            logger.error("SIP call %s: the warm hand-over's ring failed", ring.call_id, exc_info=True)
            await self._decide_unanswered(ring)
        finally:
            self.ringing.discard(ring.transfer_id)

    async def _decide_unanswered(self, ring: SipRing) -> None:
        carrier = await off_loop(phone_calls.phone_carrier)(carrier_id=ring.carrier_id, kind=KIND.name)
        if carrier is not None:
            await off_loop(warm_leg_ended)(carrier=carrier, transfer_id=str(ring.transfer_id))

    async def _ring(self, ring: SipRing, caller: SipCall) -> None:
        agent = self.agent
        account = agent.accounts.get(ring.carrier_id)
        if account is None or account.next_hop is None:
            logger.warning("SIP call %s: no account to ring the person with", ring.call_id)
            return await self._decide_unanswered(ring)
        log_id = f"{ring.call_id}/warm"
        port = agent.rtp.take()
        try:
            placed = await place(agent, account, to_e164=ring.target, from_e164=ring.from_e164, port=port,
                                 ring_sec=settings.VOICE_WARM_TRANSFER_RING_SEC, log_id=log_id)
        except Exception:
            agent.rtp.give_back(port)
            raise
        if isinstance(placed, str):
            return await self._decide_unanswered(ring)
        leg = WarmLeg(placed.sip_call_id, placed.media, log_id=log_id, hang_up=placed.hang_up,
                      on_closed=partial(agent._closed, port=port), negotiated=placed.remote, target=ring.target)
        agent.calls[placed.sip_call_id] = leg
        leg.run_media()
        try:
            carrier = await off_loop(phone_calls.phone_carrier)(carrier_id=ring.carrier_id, kind=KIND.name)
            summary = (await off_loop(warm_leg_answered)(carrier=carrier, transfer_id=str(ring.transfer_id)))[0] \
                if carrier is not None else None
            if summary is None or caller.closed:  # given up meanwhile, or the caller left
                return await self._gone(leg)
            caller.warm = leg
            if not await leg.play(await self._speech(summary, leg)):
                return await leg.end_call(send_bye=True)
            leg.spoken.set()
            waits = [asyncio.create_task(event.wait()) for event in (leg.joined, leg.ended, caller.ended)]
            try:
                await asyncio.wait(waits, timeout=JOIN_WAIT_SEC, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            if not leg.joined.is_set() and not leg.closed:
                await self._gone(leg)
        except BaseException:
            if not leg.joined.is_set():
                await leg.end_call(send_bye=True)
            raise

    async def _speech(self, text: str, leg: WarmLeg) -> bytes:
        return await off_loop(speak_whole)(text, language="de", voice="", wire=WireFormat("pcm_s16le", leg.rate))

    async def _gone(self, leg: WarmLeg) -> None:
        """The person hears that the caller is gone, and the leg ends."""
        await leg.play(await self._speech(GONE, leg))
        await leg.end_call(send_bye=True)
