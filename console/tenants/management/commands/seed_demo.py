import shlex

from django.conf import settings
from django.core.management.base import BaseCommand

from console.demo import seed_demo


class Command(BaseCommand):
    help = "Create the demo tenant 'demo' with its data; running it again changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the server answers")

    def handle(self, *args, **options):
        demo = seed_demo()
        base = options["base_url"].rstrip("/")
        self.stdout.write(self.style.SUCCESS(f"Demo tenant '{demo['tenant']}' is ready."))
        # The practice's login first: what a practice owner sees (its own tenant only);
        # the platform's operator (a superuser: the registry, every tenant) second.
        self.stdout.write(f"  Admin:   {base}/admin/  user {demo['owner_username']}  password {demo['owner_password']}"
                          f"  (the practice's owner: the tenant '{demo['tenant']}' only)")
        self.stdout.write(f"  Platform operator: {base}/admin/  user {demo['operator_username']}  "
                          f"password {demo['operator_password']}  (superuser: registry, all tenants)")
        self.stdout.write(f"  API key: {demo['api_key']}")
        self.stdout.write(
            f"  Try:     curl -s -H 'Authorization: Bearer {demo['api_key']}' -H 'X-Tenant: {demo['tenant']}' "
            f"{base}/v2/assistants"
        )
        token = settings.GATEWAY_STATIC_TOKEN
        if token:
            self.stdout.write(f"  Gateway: {token}  (GATEWAY_STATIC_TOKEN: /v1/agent, /v1/chat/completions, "
                              "/v1/models, /v1/audio/…, /v1/speak, /v1/transcribe, /agent; OpenAI's SDKs with "
                              f"base_url {base}/v1)")
            body = shlex.quote('{"prompt": "Wann haben Sie geöffnet?"}')
            self.stdout.write(f"  Try:     curl -s -H {shlex.quote(f'Authorization: Bearer {token}')} -d {body} "
                              f"{base}/v1/agent")
        else:
            self.stdout.write("  Gateway: GATEWAY_STATIC_TOKEN is not set, so /v1/* and /agent refuse every request.")
