import pytest
from django.core import mail
from django.db import transaction

from leads_app.notifications import lead_notify
from leads_app.services import lead_create

pytestmark = pytest.mark.django_db


def test_a_new_lead_mails_the_active_members_in_german_after_the_commit(tenant_a, owner, teammate, outsider,
                                                                       django_capture_on_commit_callbacks):
    teammate.is_active = False
    teammate.save(update_fields=["is_active"])
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            lead = lead_create(tenant=tenant_a, kind="callback", phone="+491711234567")
            assert mail.outbox == []  # not from inside the transaction
    [message] = mail.outbox
    assert message.to == [owner.email]
    assert message.subject == "Neuer Lead: Rückrufwunsch (+49171•••••67)"
    assert "ist ein neuer Lead eingegangen" in message.body and lead.phone in message.body
    assert "keine Angabe" in message.body


def test_no_mail_for_a_lead_that_is_gone_or_a_tenant_without_addresses(tenant_b, settings):
    settings.LEADS_NOTIFY_BY_EMAIL = False
    lead = lead_create(tenant=tenant_b, kind="contact", phone="+491711234567")
    assert lead_notify(lead_id=lead.pk) == 0  # globex has no members here
    assert lead_notify(lead_id="ld_missing") == 0
    assert mail.outbox == []
