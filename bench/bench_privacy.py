"""Privacy: an export at its synchronous bound, the erasure of that caller, and a
retention run, in process (they run in a request or a cron job, not under load)."""
import json

from bench.harness import sized, temp_project

_TIMINGS = """
import json, time, uuid
from django.db import transaction
from django.utils import timezone
from calls_app.models import Call, CarrierEvent, TranscriptEntry
from calls_app.services import carrier_create
from console.tenants.services import tenant_create
from leads_app.services import lead_create
from privacy_app import selectors, services

tenant = tenant_create(slug="bench", name="Bench")
carrier, _ = carrier_create(carrier_id="benchcarrier")
CALLER, now = "+491761234567", timezone.now()

def calls(count, lines, caller):
    with transaction.atomic():
        for _ in range(count):
            ccid = f"CA{{uuid.uuid4().hex}}"
            call = Call.objects.create(tenant=tenant, carrier=carrier, carrier_call_id=ccid, direction="inbound",
                                       from_e164=caller, to_e164="+493055501234", status="completed", seconds=120,
                                       started_at=now, ended_at=now)
            TranscriptEntry.objects.bulk_create(
                [TranscriptEntry(call=call, role="user", text=f"Zeile {{i}} " * 8, ts=now) for i in range(lines)])
            CarrierEvent.objects.bulk_create([CarrierEvent(
                carrier=carrier, event_id=f"{{ccid}}-{{i}}", type="call.transcript", carrier_call_id=ccid,
                occurred_at=now, state="applied",
                data={{"carrierCallId": ccid, "role": "user", "text": f"Zeile {{i}} " * 8, "ts": now.isoformat()}},
            ) for i in range(lines)])

def timed(call):
    started = time.perf_counter(); result = call(); return result, time.perf_counter() - started

calls({callers_calls}, 12, CALLER)
calls({others_calls}, 4, "+4915112345678")
for _ in range(20):
    lead_create(tenant=tenant, kind="callback", phone=CALLER)
subject = selectors.Subject(tenant=tenant, e164=CALLER)
rows = selectors.export_size(subject, selectors.subject_call_ids(subject))
export, export_time = timed(lambda: services.export_create(tenant=tenant, e164=CALLER, actor="bench"))
assert export.status == "ready", export.status
receipt, erase_time = timed(lambda: services.erasure_create(tenant=tenant, e164=CALLER, actor="bench"))
Call.objects.filter(tenant=tenant).update(created_at=now - timezone.timedelta(days=100))
counts, retention_time = timed(lambda: services.retention_apply(tenant=tenant))
print(json.dumps({{"rows": rows, "export": export_time, "erase": erase_time, "erased": receipt.counts,
                  "retention": retention_time, "retained": counts}}))
"""


def at_the_bounds(load):
    """Privacy: export at PRIVACY_EXPORT_SYNC_ROWS, erasure of that caller, retention (seconds, SQLite)."""
    with temp_project() as project:
        others = sized(2000, 50)
        out = project.django(_TIMINGS.format(callers_calls=199, others_calls=others))
        timings = json.loads(out.strip().splitlines()[-1])
    erased, retained = timings["erased"], timings["retained"]
    return [
        {"step": f"export of {timings['rows']:,} rows ({erased['calls']} calls, {erased['transcriptLines']:,} lines, "
                 f"{erased['carrierEvents']:,} events, {erased['leads']} leads) among {others:,} other calls",
         "time": f"{timings['export']:.2f} s"},
        {"step": f"erasure of that caller ({erased['calls']} calls, {erased['transcriptLines']:,} lines, "
                 f"{erased['carrierEvents']:,} events, {erased['leads']} leads)", "time": f"{timings['erase']:.2f} s"},
        {"step": f"apply_retention of one tenant ({retained['callsRedacted']:,} calls, "
                 f"{retained['transcriptLines']:,} lines, {retained['carrierEvents']:,} events)",
         "time": f"{timings['retention']:.2f} s"},
    ]
