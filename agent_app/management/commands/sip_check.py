"""`manage.py sip_check CARRIER`: registers the sip carrier once from a port of its own,
sends OPTIONS to its registrar and prints what the trunk answered to each (e.g.
`REGISTER: 403 Forbidden`); exits 1 when the registration was refused."""
import asyncio
import contextlib
import uuid
from typing import Any

from aiosipua import SipRequest, SipResponse, SipUAC, SipUAS
from aiosipua.utils import generate_branch, generate_tag
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agent_app.sip.agent import GuardedUdp
from agent_app.sip.registration import ANSWER_TIMEOUT_SEC, Registrar, resolve
from calls_app.kinds.sip import NAME, sip_account
from calls_app.phone_calls import phone_carrier


class Command(BaseCommand):
    help = ("Test a sip carrier's connection: REGISTER (with digest auth) and OPTIONS at its trunk, and what the "
            "trunk answered to each (docs/telephony.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("carrier_id")
        parser.add_argument("--host", default=settings.SIP_HOST, help="address to send from (a free port is used)")

    def handle(self, *args: Any, carrier_id: str, host: str, **options: Any) -> None:
        carrier = phone_carrier(carrier_id=carrier_id, kind=NAME)
        if carrier is None:
            raise CommandError(f"No sip carrier '{carrier_id}'.")
        account = sip_account(carrier)
        if not account.registers:
            self.stdout.write(f"Carrier '{carrier_id}' is a static trunk (no registration); INVITEs are taken from "
                              f"{', '.join(account.allow)}.")
            return
        lines, ok = asyncio.run(_check(account, host))
        for line in lines:
            self.stdout.write(line)
        if not ok:
            raise CommandError(f"Carrier '{carrier_id}': the trunk refused the registration.")


async def _check(account: Any, host: str) -> tuple[list[str], bool]:
    transport = GuardedUdp(local_addr=(host, 0))
    uac = SipUAC(transport)
    uas = SipUAS(transport, uac=uac)
    options: asyncio.Future[SipResponse] = asyncio.get_running_loop().create_future()
    await uas.start()
    transport.local_addr = transport._udp_transport.get_extra_info("sockname")[:2]  # type: ignore[union-attr]
    dispatch = uas._on_message

    def message(msg: Any, addr: tuple[str, int]) -> None:
        if isinstance(msg, SipResponse) and (msg.get_header("cseq") or "").upper().endswith("OPTIONS"):
            if not options.done() and msg.status_code >= 200:
                options.set_result(msg)
            return
        dispatch(msg, addr)

    transport.on_message = message
    lines = [f"Registrar {account.registrar} as {account.username} ({account.transport})"]
    registrar = Registrar(uac, account, expires=60, backoff=0, on_state=lambda state, reason: None)
    try:
        outcome = await registrar.register_once()
        lines.append(f"REGISTER: {'200 OK (registered for %s s)' % outcome.expires if outcome.ok else outcome.reason}")
        target = await resolve(account.next_hop)
        request = SipRequest(method="OPTIONS", uri=f"sip:{account.registrar.host}:{account.registrar.port}")
        local = transport.local_addr
        request.headers.append("Via", f"SIP/2.0/UDP {local[0]}:{local[1]};branch={generate_branch()};rport")
        request.headers.set_single("From", f"<sip:{account.username}@{account.domain}>;tag={generate_tag()}")
        request.headers.set_single("To", f"<sip:{account.registrar.host}>")
        request.headers.set_single("Call-ID", uuid.uuid4().hex)
        request.headers.set_single("CSeq", "1 OPTIONS")
        request.headers.set_single("Max-Forwards", "70")
        transport.send(request, target)
        try:
            answer = await asyncio.wait_for(options, ANSWER_TIMEOUT_SEC)
            lines.append(f"OPTIONS: {answer.status_code} {answer.reason_phrase}")
        except TimeoutError:
            lines.append("OPTIONS: no answer (timeout)")
        return lines, outcome.ok
    finally:
        registrar.close()
        with contextlib.suppress(Exception):
            await asyncio.sleep(0.05)
            await uas.stop()
