import asyncio
import logging
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from agent_app.sip.agent import SipAgent

logger = logging.getLogger("agent_app.sip")
RESTART_AFTER_SEC = 2.0


class Command(BaseCommand):
    help = ("Serve SIP: register every sip carrier at its trunk and answer the calls for the tenants' numbers "
            "(UDP and TCP on --port, RTP on SIP_RTP_PORTS; docs/telephony.md). Stop it with SIGINT or SIGTERM. "
            "An agent that fails after it started is started again (its live calls are booked by the sweep); "
            "one that cannot start (its port is taken) exits.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.SIP_HOST, help="address to listen on")
        parser.add_argument("--port", type=int, default=settings.SIP_PORT, help="UDP and TCP port")

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        self.stdout.write(f"SIP agent on {host}:{port} (UDP and TCP), RTP ports {settings.SIP_RTP_PORTS}")
        while True:
            started = asyncio.Event()
            agent = SipAgent(host, port, advertised_host=settings.SIP_ADVERTISED_HOST,
                             rtp_ports=settings.SIP_RTP_PORTS)
            try:
                asyncio.run(agent.run(started))
                return
            except KeyboardInterrupt:
                return
            except Exception:
                if not started.is_set():
                    raise
                logger.error("SIP agent failed; it starts again in %s s", RESTART_AFTER_SEC, exc_info=True)
                time.sleep(RESTART_AFTER_SEC)
