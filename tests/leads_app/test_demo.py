import pytest

from console.demo import seed_demo
from leads_app.demo import DEMO_LEADS
from leads_app.models import Lead

pytestmark = pytest.mark.django_db


def test_seed_demo_adds_the_demo_leads_once():
    seed_demo()
    first = set(Lead.objects.values_list("pk", "status"))

    seed_demo()

    assert len(first) == len(DEMO_LEADS)
    assert set(Lead.objects.values_list("pk", "status")) == first
    assert set(Lead.objects.values_list("tenant__slug", flat=True)) == {"demo"}
