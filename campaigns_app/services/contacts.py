"""A campaign's contacts: an upload's rows taken, folded and checked (blocklist,
consent), and inserted in one prepared statement."""
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns_app.contact_rows import ContactRow, RowError
from campaigns_app.errors import CampaignFinished, TooManyContacts
from campaigns_app.models import MAX_CONTACTS_PER_CAMPAIGN, Campaign, CampaignContact, Outcome
from campaigns_app.selectors import blocked_among
from campaigns_app.services.lifecycle import campaign_locked
from console.quotas import quota_take

# How many rows of each kind an upload's report lists (all are counted).
REPORT_LIST_LIMIT = 1000


@transaction.atomic
def contacts_add(*, campaign: Campaign, rows: list[ContactRow], errors: Iterable[RowError] = (),
                 now: datetime | None = None) -> dict[str, Any]:
    """Takes the good rows of an upload (the bad ones are reported with their row and
    reason); folds duplicates (in the upload and with the campaign's contacts); stores
    numbers of the blocklist as `skipped_blocklist` and, for `marketing`, contacts
    without documented consent (source, time and text) that are not businesses as
    `skipped_no_consent`. Returns the report."""
    now = now or timezone.now()
    campaign = campaign_locked(campaign)
    if campaign.is_finished:
        raise CampaignFinished(details={"state": campaign.state})
    existing = set(CampaignContact.objects.filter(campaign=campaign, redacted=False).values_list("phone", flat=True))
    blocked = blocked_among(tenant=campaign.tenant, phones={row.phone for row in rows})
    marketing = campaign.purpose == Campaign.Purpose.MARKETING
    first_row_of: dict[str, int] = {}
    new: list[CampaignContact] = []
    folded: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for row in rows:
        if row.phone in first_row_of or row.phone in existing:
            same = first_row_of.get(row.phone)
            folded.append({"row": row.row, "phone": row.phone, "sameAsRow": same,
                           "reason": f"Same number as row {same}." if same else "Already a contact of the campaign."})
            continue
        first_row_of[row.phone] = row.row
        outcome, reason = "", ""
        if row.phone in blocked:
            outcome, reason = Outcome.SKIPPED_BLOCKLIST, "The number is on the tenant's blocklist."
        elif marketing and not row.b2b and not row.has_consent:
            outcome = Outcome.SKIPPED_NO_CONSENT
            missing = [name for name, value in (("consentSource", row.consent_source), ("consentAt", row.consent_at),
                                                ("consentText", row.consent_text)) if not value]
            reason = (f"Marketing calls to consumers need documented prior consent (§ 7 Abs. 2 Nr. 1 UWG); "
                      f"missing: {', '.join(missing)}. Mark businesses with b2b: true.")
        if outcome:
            skipped.append({"row": row.row, "phone": row.phone, "outcome": outcome, "reason": reason})
        new.append(CampaignContact(
            tenant=campaign.tenant, campaign=campaign, phone=row.phone, name=row.name, variables=row.variables,
            b2b=row.b2b, consent_source=row.consent_source, consent_at=row.consent_at, consent_text=row.consent_text,
            row=row.row, due_at=now,
            status=CampaignContact.Status.DONE if outcome else CampaignContact.Status.PENDING, outcome=outcome,
            completed_at=now if outcome else None,
        ))
    if len(existing) + len(new) > MAX_CONTACTS_PER_CAMPAIGN:
        raise TooManyContacts(details={"maxContacts": MAX_CONTACTS_PER_CAMPAIGN, "existing": len(existing),
                                       "new": len(new)})
    if new:
        quota_take(tenant=campaign.tenant, name="contacts", adding=len(new))
    _insert(new)
    errors = [error.as_dict() for error in errors]
    counted = {outcome: sum(1 for entry in skipped if entry["outcome"] == outcome)
               for outcome in (Outcome.SKIPPED_BLOCKLIST, Outcome.SKIPPED_NO_CONSENT)}
    return {
        "campaign": campaign.pk,
        "received": len(rows) + len(errors),
        "added": len(new) - len(skipped),
        "duplicates": len(folded),
        "skippedBlocklist": counted[Outcome.SKIPPED_BLOCKLIST],
        "skippedNoConsent": counted[Outcome.SKIPPED_NO_CONSENT],
        "invalid": len(errors),
        "errors": errors[:REPORT_LIST_LIMIT],
        "skipped": skipped[:REPORT_LIST_LIMIT],
        "folded": folded[:REPORT_LIST_LIMIT],
        "truncated": max(len(errors), len(skipped), len(folded)) > REPORT_LIST_LIMIT,
    }


def _insert(contacts: list[CampaignContact]) -> None:
    """Inserts new contacts with one prepared INSERT run for all rows (executemany): an
    upload of 50,000 contacts spent most of its time in bulk_create's per-field
    preparation of every value (docs/performance.md). The values are prepared as the
    ORM prepares them, field by field, for the fields whose database form differs."""
    if not contacts:
        return
    created = timezone.now()
    fields = [field for field in CampaignContact._meta.concrete_fields]
    prepared = {field.attname for field in fields
                if field.get_internal_type() in ("JSONField", "DateTimeField")}
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {connection.ops.quote_name(CampaignContact._meta.db_table)} ({columns}) VALUES ({placeholders})"
    rows = []
    for contact in contacts:
        contact.created_at = created
        rows.append([field.get_db_prep_save(getattr(contact, field.attname), connection)
                     if field.attname in prepared else getattr(contact, field.attname) for field in fields])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 5000):
            cursor.executemany(sql, rows[start:start + 5000])
