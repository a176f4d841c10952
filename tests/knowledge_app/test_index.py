"""The full-text index is kept by the database: whatever writes or deletes passages
(the services, a cascade from a deleted tenant, an update), the index follows."""
import pytest
from django.db import connection

from knowledge_app import services
from knowledge_app.models import KnowledgePassage
from knowledge_app.selectors import knowledge_search

pytestmark = pytest.mark.django_db

TEXT = "## Lieferung\n\nWir liefern Brennholz frei Haus.\n\n## Lager\n\nDas Holzlager ist im Hof."


def indexed_rows():
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM knowledge_app_passage_fts")
        else:
            cursor.execute("SELECT count(*) FROM knowledge_app_knowledgepassage WHERE search_vector IS NOT NULL")
        return cursor.fetchone()[0]


def test_the_index_is_kept_by_the_database(tenant_a):
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'knowledge_passage_fts_%'")
            # A migration that remakes the passages' table drops these: add them again there.
            assert sorted(row[0] for row in cursor.fetchall()) == [
                "knowledge_passage_fts_delete", "knowledge_passage_fts_insert", "knowledge_passage_fts_update"]
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT is_generated FROM information_schema.columns "
                           "WHERE table_name = 'knowledge_app_knowledgepassage' AND column_name = 'search_vector'")
            assert cursor.fetchone() == ("ALWAYS",)


def test_a_deleted_tenant_takes_its_index_along(tenant_a, tenant_b):
    services.knowledge_document_create(tenant=tenant_a, title="A", content_type="text/markdown", text=TEXT)
    services.knowledge_document_create(tenant=tenant_b, title="B", content_type="text/markdown", text=TEXT)
    assert indexed_rows() == 4

    tenant_a.delete()

    assert indexed_rows() == 2
    assert [p.heading for p in knowledge_search(tenant=tenant_b, query="Brennholz")] == ["Lieferung"]


def test_a_changed_passage_is_found_by_its_new_words(tenant_a):
    services.knowledge_document_create(tenant=tenant_a, title="A", content_type="text/markdown", text=TEXT)
    passage = KnowledgePassage.objects.for_tenant(tenant_a).get(heading="Lager")
    KnowledgePassage.objects.filter(pk=passage.pk).update(text="Die Scheune steht hinter dem Haus.")

    assert knowledge_search(tenant=tenant_a, query="Hof") == []
    assert [p.heading for p in knowledge_search(tenant=tenant_a, query="Scheune")] == ["Lager"]
    assert indexed_rows() == 2


def test_the_title_and_compounds_are_found_with_less_weight(tenant_a):
    services.knowledge_document_create(tenant=tenant_a, title="Preisliste Kaminholz", content_type="text/markdown",
                                       text="## Buche\n\nDer Raummeter kostet 95 Euro.")
    services.knowledge_document_create(tenant=tenant_a, title="Sonstiges", content_type="text/markdown",
                                       text="## Holz\n\nUnser Holz ist zwei Jahre getrocknet.")
    # "Preis" is only in the first document's title (a compound: Preis·liste).
    assert [p.title for p in knowledge_search(tenant=tenant_a, query="Preis")] == ["Preisliste Kaminholz"]
    # "Holz" is the other's heading and text: that weighs more than the first's title's compound.
    assert [p.title for p in knowledge_search(tenant=tenant_a, query="Holz")][0] == "Sonstiges"


def test_postgresql_takes_candidates_by_the_rarer_words_and_falls_back_to_all(tenant_a, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's ranking only (SQLite's bm25 needs no candidates first)")
    from knowledge_app import index

    monkeypatch.setattr(index, "PRUNE_FROM_PASSAGES", 0)
    monkeypatch.setattr(index, "COMMON_SHARE", 0.5)
    services.knowledge_document_create(tenant=tenant_a, title="Holz", content_type="text/markdown", text=(
        "## Eiche\n\nHolz aus Eiche.\n\n## Buche\n\nHolz aus Buche.\n\n## Lärche\n\nHolz aus Lärche, wetterfest."))
    # "Holz" is in every passage: the candidates are those with "wetterfest".
    assert [p.heading for p in knowledge_search(tenant=tenant_a, query="wetterfestes Holz", limit=1)] == ["Lärche"]
    # Fewer candidates than asked for: then all words are searched, the rarer still first.
    assert [p.heading for p in knowledge_search(tenant=tenant_a, query="wetterfestes Holz", limit=3)][0] == "Lärche"
    assert len(knowledge_search(tenant=tenant_a, query="wetterfestes Holz", limit=3)) == 3
