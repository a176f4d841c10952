"""How long campaign contacts keep their personal data (docs/privacy.md).

A contact with documented consent keeps it — number, name, variables and the consent
itself — five years after the consent was given and after each use of it (§ 7a UWG:
the proof must be kept that long). A contact without consent (service campaigns,
businesses, skipped contacts) keeps its data CAMPAIGN_CONTACT_DAYS after its last use.
Only contacts that are done, or whose campaign is finished, expire; then their
personal data is removed and the row stays, flagged `redacted`, so the campaign's
counts do not change. A contact whose number was erased (privacy_app) is redacted at
once, but keeps the proof of a consent it was called under, under the number's
pseudonym (campaigns_app.services.number_erase); that proof goes here, when its five
years are over. The blocklist is kept as long as the tenant exists: it is what makes
an opt-out last.
"""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from campaigns_app.models import Campaign, CampaignContact

CONSENT_KEPT = timedelta(days=5 * 366)  # five years, leap days included


def expired_contacts(now):
    last_use = Coalesce("last_attempt_at", "created_at")
    closed = Q(status=CampaignContact.Status.DONE) | Q(
        campaign__state__in=(Campaign.State.COMPLETED, Campaign.State.CANCELED))
    with_consent = Q(consent_at__isnull=False, consent_at__lt=now - CONSENT_KEPT, last_use__lt=now - CONSENT_KEPT)
    without = Q(consent_at__isnull=True, last_use__lt=now - timedelta(days=settings.CAMPAIGN_CONTACT_DAYS))
    # Not yet redacted, or erased with its consent proof kept.
    unredacted = Q(redacted=False) | Q(consent_at__isnull=False)
    return (CampaignContact.objects.annotate(last_use=last_use)
            .filter(closed, with_consent | without).filter(unredacted))


def contacts_redact_expired(*, now=None):
    """The periodic job (daily): removes the personal data of expired contacts; returns
    how many."""
    now = now or timezone.now()
    ids = list(expired_contacts(now).values_list("pk", flat=True))
    for start in range(0, len(ids), 1000):
        with transaction.atomic():
            CampaignContact.objects.filter(pk__in=ids[start:start + 1000]).update(
                phone="", name="", variables={}, consent_source="", consent_at=None, consent_text="", redacted=True)
    return len(ids)
