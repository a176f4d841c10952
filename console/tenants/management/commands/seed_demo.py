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
        self.stdout.write(f"  Admin:   {base}/admin/  user {demo['operator_username']}  password {demo['operator_password']}")
        self.stdout.write(f"  API key: {demo['api_key']}")
        self.stdout.write(
            f"  Try:     curl -s -H 'Authorization: Bearer {demo['api_key']}' -H 'X-Tenant: {demo['tenant']}' "
            f"{base}/v2/assistants"
        )
