"""`/v2/knowledge`: documents in as JSON or as files (text, Markdown, PDF), listed, read
and deleted; the search; the synonym groups; the limits per document and per tenant."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from console.audit.models import AuditEntry
from knowledge_app.models import KnowledgeDocument, KnowledgePassage
from tests.conftest import error_of
from tests.knowledge_app import pdfs

pytestmark = pytest.mark.django_db

FAQ = """# Tischlerei Holzmann

## Öffnungszeiten

Die Werkstatt ist Montag bis Freitag von 7 bis 16 Uhr geöffnet.

## Küchen

Wir bauen Einbauküchen nach Maß. Ein Aufmaß bei Ihnen zu Hause kostet 60 Euro.
"""


def upload(client, name, content, content_type, **fields):
    return client.post("/v2/knowledge", {"file": SimpleUploadedFile(name, content, content_type=content_type),
                                         **fields}, format="multipart")


def test_markdown_sent_as_json_is_stored_as_passages_under_its_headings(api_a):
    response = api_a.post("/v2/knowledge", {"title": "FAQ", "text": FAQ}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("kd_") and body["title"] == "FAQ" and body["contentType"] == "text/markdown"
    assert body["sizeBytes"] == len(FAQ.encode()) and body["status"] == "ready" and body["passageCount"] == 2
    assert body["passages"] == [
        {"position": 0, "heading": "Tischlerei Holzmann › Öffnungszeiten",
         "text": "Die Werkstatt ist Montag bis Freitag von 7 bis 16 Uhr geöffnet."},
        {"position": 1, "heading": "Tischlerei Holzmann › Küchen",
         "text": "Wir bauen Einbauküchen nach Maß. Ein Aufmaß bei Ihnen zu Hause kostet 60 Euro."},
    ]
    assert AuditEntry.objects.filter(action="POST /v2/knowledge", object_id=body["id"]).exists()


def test_plain_text_keeps_its_hashes_as_text(api_a):
    response = api_a.post("/v2/knowledge", {"title": "Notiz", "text": "# keine Überschrift\n\nzweiter Absatz",
                                            "contentType": "text/plain"}, format="json")
    assert response.status_code == 201
    assert [p["heading"] for p in response.json()["passages"]] == [""]
    assert response.json()["passages"][0]["text"] == "# keine Überschrift\n\nzweiter Absatz"


def test_files_of_each_type_are_read(api_a):
    text = upload(api_a, "preise.txt", "Ein Aufmaß kostet 60 Euro.".encode(), "text/plain")
    markdown = upload(api_a, "faq.md", FAQ.encode(), "application/octet-stream", title="Häufige Fragen")
    pdf = upload(api_a, "prospekt.pdf", pdfs.text_pdf(["Küchen nach Maß", "Treppen aus Eiche\nund Buche"]),
                 "application/pdf")

    assert (text.status_code, markdown.status_code, pdf.status_code) == (201, 201, 201), pdf.content
    assert (text.json()["title"], text.json()["contentType"]) == ("preise", "text/plain")
    assert (markdown.json()["title"], markdown.json()["contentType"]) == ("Häufige Fragen", "text/markdown")
    assert pdf.json()["contentType"] == "application/pdf"
    assert [(p["heading"], p["text"]) for p in pdf.json()["passages"]] == [
        ("Seite 1", "Küchen nach Maß"), ("Seite 2", "Treppen aus Eiche und Buche")]


def test_list_get_and_delete(api_a):
    first = api_a.post("/v2/knowledge", {"title": "Eins", "text": FAQ}, format="json").json()
    second = api_a.post("/v2/knowledge", {"title": "Zwei", "text": "Nur ein Satz."}, format="json").json()

    listing = api_a.get("/v2/knowledge").json()
    assert [d["id"] for d in listing["documents"]] == [second["id"], first["id"]]  # newest first
    assert "passages" not in listing["documents"][0]
    assert listing["usage"] == {"documents": 2, "bytes": first["sizeBytes"] + second["sizeBytes"],
                                "maxDocuments": 500, "maxBytes": 50 * 1024 * 1024}
    assert api_a.get(f"/v2/knowledge/{first['id']}").json() == first

    assert api_a.delete(f"/v2/knowledge/{first['id']}").status_code == 204
    assert error_of(api_a.get(f"/v2/knowledge/{first['id']}"))["code"] == "not_found"
    assert error_of(api_a.delete(f"/v2/knowledge/{first['id']}"))["message"] == "No knowledge document with this id."
    assert not KnowledgePassage.objects.filter(document_id=first["id"]).exists()
    assert [hit["title"] for hit in api_a.get("/v2/knowledge/search", {"q": "Werkstatt"}).json()["passages"]] == []


def test_search_answers_with_the_best_passages_bounded(api_a):
    document = api_a.post("/v2/knowledge", {"title": "FAQ", "text": FAQ}, format="json").json()
    api_a.post("/v2/knowledge", {"title": "Andere", "text": "Die Küchenplanung ist kostenlos."}, format="json")

    found = api_a.get("/v2/knowledge/search", {"q": "Was kostet eine neue Küche?"}).json()["passages"]
    assert found[0]["heading"] == "Tischlerei Holzmann › Küchen" and found[0]["document"] == document["id"]
    assert set(found[0]) == {"document", "title", "heading", "text", "score"}
    assert found[0]["score"] >= found[-1]["score"]

    one = api_a.get("/v2/knowledge/search", {"q": "Küche", "limit": "1"}).json()["passages"]
    assert len(one) == 1
    short = api_a.get("/v2/knowledge/search", {"q": "Küche", "maxChars": "100"}).json()["passages"]
    assert sum(len(p["text"]) for p in short) <= 100
    only = api_a.get("/v2/knowledge/search", {"q": "Küche", "document": document["id"]}).json()["passages"]
    assert {p["document"] for p in only} == {document["id"]}
    assert api_a.get("/v2/knowledge/search", {"q": "und der die"}).json() == {"passages": []}


@pytest.mark.parametrize(("params", "field"), [
    ({}, "q"), ({"q": ""}, "q"), ({"q": "x" * 501}, "q"), ({"q": "Küche", "limit": "0"}, "limit"),
    ({"q": "Küche", "limit": "21"}, "limit"), ({"q": "Küche", "maxChars": "99"}, "maxChars"),
    ({"q": "Küche", "sort": "x"}, "sort"),
])
def test_search_parameters_are_checked(api_a, params, field):
    error = error_of(api_a.get("/v2/knowledge/search", params))
    assert error["code"] == "validation_error" and field in error["details"]


def test_synonym_groups_are_replaced_and_widen_the_search(api_a):
    api_a.post("/v2/knowledge", {"title": "FAQ", "text": FAQ}, format="json")
    assert api_a.get("/v2/knowledge/search", {"q": "Wann haben Sie auf?"}).json()["passages"] == []

    put = api_a.put("/v2/knowledge/synonyms", {"synonyms": [["offen", " geöffnet ", "Offen"], ["Küche", "Kochnische"]]},
                    format="json")
    assert put.status_code == 200
    assert put.json() == {"synonyms": [["offen", "geöffnet"], ["Küche", "Kochnische"]]}
    assert api_a.get("/v2/knowledge/synonyms").json() == put.json()
    found = api_a.get("/v2/knowledge/search", {"q": "Ist die Werkstatt offen?"}).json()["passages"]
    assert found[0]["heading"].endswith("Öffnungszeiten")
    assert api_a.get("/v2/knowledge/search", {"q": "Kochnische"}).json()["passages"][0]["heading"].endswith("Küchen")

    assert api_a.put("/v2/knowledge/synonyms", {"synonyms": []}, format="json").json() == {"synonyms": []}


@pytest.mark.parametrize("synonyms", [
    [["allein"]], [["a=b", "c"]], [["", "x"]], [["x", "X"]], [["x" * 61, "y"]], [["x", "y"]] * 201, "Küche",
    [[f"w{n}" for n in range(21)]],
])
def test_bad_synonym_groups_are_refused(api_a, synonyms):
    error = error_of(api_a.put("/v2/knowledge/synonyms", {"synonyms": synonyms}, format="json"))
    assert error["code"] == "validation_error" and "synonyms" in error["details"]


@pytest.mark.parametrize(("body", "field"), [
    ({"text": "x"}, "title"), ({"title": "T"}, "text"), ({"title": "", "text": "x"}, "title"),
    ({"title": "T", "text": "x", "contentType": "application/pdf"}, "contentType"),
    ({"title": "T", "text": "x", "author": "me"}, "author"), ({"title": "T\x07", "text": "x"}, "title"),
])
def test_json_bodies_are_checked(api_a, body, field):
    error = error_of(api_a.post("/v2/knowledge", body, format="json"))
    assert error["code"] == "validation_error" and field in error["details"], error


def test_a_form_without_its_file_or_with_other_fields_is_refused(api_a):
    error = error_of(api_a.post("/v2/knowledge", {"title": "T"}, format="multipart"))
    assert error["code"] == "validation_error" and "file" in error["details"]
    error = error_of(upload(api_a, "a.txt", b"Text", "text/plain", author="me"))
    assert "author" in error["details"]


def test_a_document_over_two_megabytes_is_413(api_a, settings):
    big = ("Ein Satz über Holz. " * 110_000).encode()  # 2.2 MB
    for response in (upload(api_a, "gross.txt", big, "text/plain"),
                     api_a.post("/v2/knowledge", {"title": "Groß", "text": big.decode()}, format="json")):
        assert response.status_code == 413
        error = error_of(response)
        assert error["code"] == "document_too_large" and error["details"]["maxBytes"] == 2 * 1024 * 1024
    assert not KnowledgeDocument.objects.exists()


def test_the_tenants_total_and_count_are_bounded(api_a, api_b, settings):
    settings.KNOWLEDGE_MAX_TENANT_BYTES = 1000
    settings.KNOWLEDGE_MAX_DOCUMENTS = 2
    assert api_a.post("/v2/knowledge", {"title": "A", "text": "x" * 600}, format="json").status_code == 201
    full = api_a.post("/v2/knowledge", {"title": "B", "text": "y" * 600}, format="json")
    assert full.status_code == 409
    error = error_of(full)
    assert error["code"] == "knowledge_limit_reached" and error["details"] == {
        "usedBytes": 600, "bytes": 600, "maxBytes": 1000}
    # Another tenant's room is its own.
    assert api_b.post("/v2/knowledge", {"title": "B", "text": "y" * 600}, format="json").status_code == 201

    assert api_a.post("/v2/knowledge", {"title": "C", "text": "z" * 100}, format="json").status_code == 201
    error = error_of(api_a.post("/v2/knowledge", {"title": "D", "text": "z"}, format="json"))
    assert error["code"] == "knowledge_limit_reached" and error["details"]["maxDocuments"] == 2


def test_long_paragraphs_become_bounded_passages(api_a, settings):
    settings.KNOWLEDGE_PASSAGE_MAX_CHARS = 200
    sentence = "Unsere Tischlerei fertigt Möbel aus heimischem Holz. "
    body = api_a.post("/v2/knowledge", {"title": "Lang", "text": "## Über uns\n\n" + sentence * 20},
                      format="json").json()
    assert body["passageCount"] > 4
    assert all(len(p["text"]) <= 200 and p["heading"] == "Über uns" for p in body["passages"])
    assert " ".join(p["text"] for p in body["passages"]) == (sentence * 20).strip()
