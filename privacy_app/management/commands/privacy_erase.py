import json

from privacy_app.management.phone_command import TenantPhoneCommand
from privacy_app.serializers import erasure_json
from privacy_app.services import erasure_create


class Command(TenantPhoneCommand):
    help = ("Erase a phone number from everything of a tenant (Art. 17) and print the receipt. "
            "Cannot be undone; running it again erases nothing more.")

    def run(self, tenant, *, e164=None, call_id=None):
        receipt = erasure_create(tenant=tenant, e164=e164, call_id=call_id, actor="system:privacy_erase")
        self.stdout.write(json.dumps(erasure_json(receipt), indent=2))
