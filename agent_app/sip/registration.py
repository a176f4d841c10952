"""Keeping one SIP account registered (RFC 3261 §10) through aiosipua's `Registration`
(its REGISTER, digest answer to 401/407 and 423 handling); this module owns the timing:
a refresh at 85 % of the granted interval, a REGISTER that gets no final answer within
SIP_TIMEOUT_SEC counts as failed, and every failure waits SIP_REGISTER_BACKOFF_SEC,
doubling up to BACKOFF_MAX_SEC, before the next try — a wrong password costs two
REGISTERs (the challenge and the refused answer) per try, never a hot loop. Each change
of state is reported through `on_state` (the agent stores it for /health and the
admin)."""
import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass

from aiosipua import Registration, SipDigestAuth, SipUAC

from calls_app.kinds.sip import SipAccount, SipUri

logger = logging.getLogger("agent_app.sip")

REFRESH_FRACTION = 0.85
BACKOFF_MAX_SEC = 600.0
# Seconds a REGISTER (and its answer to a challenge) may take for a final answer.
ANSWER_TIMEOUT_SEC = 8.0


@dataclass(frozen=True)
class Outcome:
    """A REGISTER's end: `ok` with the `expires` granted, else the trunk's `reason`
    ("403 Forbidden", "no answer", …)."""

    ok: bool
    reason: str = ""
    expires: int = 0


async def resolve(uri: SipUri) -> tuple[str, int]:
    """The address to send to: the URI's host resolved (A record; no SRV), and its port."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(uri.host, uri.port, family=socket.AF_INET, type=socket.SOCK_DGRAM)
    if not infos:
        raise OSError(f"{uri.host} cannot be resolved")
    return str(infos[0][4][0]), uri.port


def contact_for(account: SipAccount, local: tuple[str, int]) -> str:
    return f"sip:{account.username}@{local[0]}:{local[1]}"


class Registrar:
    """Registers `account` through `uac` for as long as `run` runs; unregisters when cancelled."""

    def __init__(self, uac: SipUAC, account: SipAccount, *, expires: int, backoff: float,
                 on_state: Callable[[str, str], None]) -> None:
        self.uac, self.account = uac, account
        self.expires, self.backoff = expires, backoff
        self.on_state = on_state
        self.registration: Registration | None = None

    def _registration(self, target: tuple[str, int]) -> Registration:
        account = self.account
        assert account.registrar is not None
        if self.registration is None or self.registration.registrar != target:
            self.registration = Registration(
                self.uac, f"sip:{account.username}@{account.domain}", target, expires=self.expires,
                auth=SipDigestAuth(account.username, account.password),
                contact_uri=contact_for(account, self.uac._local_addr()),
                registrar_uri=f"sip:{account.registrar.host}"
                              + (f":{account.registrar.port}" if not account.from_domain else ""),
                user_agent="Stimmwerk")
        return self.registration

    async def register_once(self) -> Outcome:
        """One REGISTER (with its answer to a challenge) and its final answer."""
        hop = self.account.next_hop
        assert hop is not None
        try:
            target = await resolve(hop)
        except OSError as exc:
            return Outcome(False, f"DNS: {exc}"[:200])
        registration = self._registration(target)
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()

        def registered(reg: Registration) -> None:
            if not done.done():
                done.set_result(Outcome(True, expires=reg.granted_expires or self.expires))

        def failed(reg: Registration, status: int, reason: str) -> None:
            if not done.done():
                done.set_result(Outcome(False, f"{status} {reason}".strip()[:200]))

        registration.on_registered, registration.on_failed = registered, failed
        try:
            registration.register()
        except (OSError, RuntimeError) as exc:
            return Outcome(False, f"send: {exc}"[:200])
        try:
            outcome = await asyncio.wait_for(done, ANSWER_TIMEOUT_SEC)
        except TimeoutError:
            outcome = Outcome(False, "no answer (timeout)")
        registration._cancel_timers()  # the refresh is ours (run), not the library's
        return outcome

    async def run(self) -> None:
        wait = self.backoff
        self.on_state("registering", "")
        try:
            while True:
                outcome = await self.register_once()
                if outcome.ok:
                    wait = self.backoff
                    self.on_state("registered", "")
                    logger.info("SIP carrier %s: registered for %s s", self.account.carrier_id, outcome.expires)
                    await asyncio.sleep(max(5.0, outcome.expires * REFRESH_FRACTION))
                    continue
                self.on_state("failing", outcome.reason)
                logger.warning("SIP carrier %s: REGISTER failed (%s); next try in %.0f s", self.account.carrier_id,
                               outcome.reason, wait)
                await asyncio.sleep(wait)
                wait = min(wait * 2, BACKOFF_MAX_SEC)
        finally:
            self.close()

    def close(self) -> None:
        """Unregisters (Expires: 0, not awaited) and lets the registration go."""
        registration, self.registration = self.registration, None
        if registration is None:
            return
        registration._cancel_timers()
        self.uac._registrations.pop(registration.call_id, None)
        if registration.state.value == "registered":
            try:
                registration.unregister()
            except (OSError, RuntimeError):
                pass
