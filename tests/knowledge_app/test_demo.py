"""The demo tenant gets the Demo Praxis's FAQ and synonyms once (make run's seed_demo)."""
import pytest

from console.demo import app_demo_steps
from knowledge_app import demo
from knowledge_app.models import KnowledgeDocument
from knowledge_app.selectors import knowledge_search

pytestmark = pytest.mark.django_db


def test_the_demo_knowledge_is_seeded_once_and_answers(tenant_a):
    assert demo.seed in app_demo_steps()
    demo.seed(tenant_a)
    demo.seed(tenant_a)

    assert KnowledgeDocument.objects.for_tenant(tenant_a).count() == 1
    found = knowledge_search(tenant=tenant_a, query="Wann haben Sie samstags offen?")
    assert found[0].heading == "Demo Praxis › Öffnungszeiten" and "9 bis 13 Uhr" in found[0].text
    assert knowledge_search(tenant=tenant_a, query="Wo kann ich parken?")[0].heading.endswith("Anfahrt und Parken")
