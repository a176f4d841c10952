"""A retried lead post with its Idempotency-Key stores one lead, whichever step of
the first post failed: the lead and the stored answer commit together."""
from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.renderers import JSONRenderer

from console.idempotency import services as idempotency
from console.idempotency.models import IdempotencyRecord
from leads_app import services
from leads_app.models import Lead
from tests.conftest import fail_once
from tests.leads_app.helpers import GOOD_LEAD

pytestmark = pytest.mark.django_db


def post(client):
    return client.post("/v2/public/leads", GOOD_LEAD, content_type="application/json",
                       HTTP_IDEMPOTENCY_KEY="lead-retry-1")


@pytest.mark.parametrize("owner, name", [(idempotency, "_claim"), (services, "lead_create"),
                                         (idempotency, "_store")])
def test_a_failure_before_the_lead_commits_stores_nothing_and_the_retry_stores_one(
        public, tenant_a, monkeypatch, owner, name):
    fail_once(monkeypatch, owner, name, RuntimeError("injected"))
    assert post(public).status_code == 500
    assert not Lead.objects.exists() and not IdempotencyRecord.objects.exists()
    retry = post(public)
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry
    assert Lead.objects.count() == 1


def test_an_answer_lost_after_the_commit_is_replayed_even_minutes_later(tenant_a, monkeypatch):
    # The lead committed with its answer; writing the answer out fails (a worker killed
    # here would look the same to the client).
    fail_once(monkeypatch, JSONRenderer, "render", RuntimeError("connection reset"))
    client = Client(raise_request_exception=False)
    assert post(client).status_code == 500
    lead = Lead.objects.get()
    # Later than an abandoned claim's timeout: the stored answer still counts.
    IdempotencyRecord.objects.update(created_at=IdempotencyRecord.objects.get().created_at - timedelta(minutes=3))
    retry = post(client)
    assert retry.status_code == 201 and retry["Idempotent-Replayed"] == "true"
    assert retry.json() == {"id": lead.pk, "status": "new"}
    assert Lead.objects.count() == 1
