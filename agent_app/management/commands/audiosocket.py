import asyncio

from django.conf import settings
from django.core.management.base import BaseCommand

from agent_app.audiosocket import serve


class Command(BaseCommand):
    help = ("Serve Asterisk's AudioSocket: the TCP listener that puts a PBX's calls through to the voice agent "
            "(docs/telephony.md). One process holds many calls; stop it with SIGINT or SIGTERM.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.AUDIOSOCKET_HOST, help="address to listen on")
        parser.add_argument("--port", type=int, default=settings.AUDIOSOCKET_PORT, help="TCP port")

    def handle(self, *args, host, port, **options):
        self.stdout.write(f"AudioSocket on {host}:{port}")
        try:
            asyncio.run(serve(host, port))
        except KeyboardInterrupt:
            pass
