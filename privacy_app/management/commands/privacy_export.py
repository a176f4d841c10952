import json

from privacy_app.management.phone_command import TenantPhoneCommand
from privacy_app.models import Export
from privacy_app.services import export_create


class Command(TenantPhoneCommand):
    help = ("Export everything a tenant holds about a phone number (Art. 15) and print the JSON document "
            "(or the export's id when it is too large to build now; `build_exports` builds it).")

    def run(self, tenant, *, e164=None, call_id=None):
        export = export_create(tenant=tenant, e164=e164, call_id=call_id, actor="system:privacy_export")
        if export.status != Export.Status.READY:
            self.stdout.write(f"Export {export.pk} is large: `build_exports` builds it.")
            return
        self.stdout.write(json.dumps(export.document, ensure_ascii=False, indent=2))
