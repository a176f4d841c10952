"""Knowledge in the admin, in German to the last label: an owner uploads a document
(read, split and indexed at once), sees its passages, is told in German why a file is
refused, and edits synonym groups; members of another tenant see none of it (the
isolation matrix walks every page)."""
import gettext
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from console.audit.models import AuditEntry
from knowledge_app.models import KnowledgeDocument, KnowledgeSynonym
from knowledge_app.selectors import knowledge_search

pytestmark = pytest.mark.django_db

ADD = "/admin/knowledge_app/knowledgedocument/add/"
FAQ = "# Fragen\n\n## Öffnungszeiten\n\nMontag bis Freitag von 8 bis 18 Uhr.\n"


def logged_in(user, **headers):
    client = Client(**headers)
    client.force_login(user)
    return client


def test_an_owner_uploads_a_document_and_reads_its_passages(owner, tenant_a):
    client = logged_in(owner)
    page = client.get(ADD).content.decode()
    assert "Wissensdokument hinzufügen" in page and "Datei" in page and "Ohne Angabe: der Dateiname" in page

    response = client.post(ADD, {"tenant": tenant_a.pk, "title": "",
                                 "file": SimpleUploadedFile("faq.md", FAQ.encode(), content_type="text/markdown")})

    assert response.status_code == 302, response.content.decode()[:2000]
    document = KnowledgeDocument.objects.for_tenant(tenant_a).get()
    assert (document.title, document.passage_count) == ("faq", 1)
    assert knowledge_search(tenant=tenant_a, query="Öffnungszeiten")[0].heading == "Fragen › Öffnungszeiten"
    assert AuditEntry.objects.filter(action="admin.add knowledge_app.knowledgedocument", object_id=document.pk).exists()

    listing = client.get("/admin/knowledge_app/knowledgedocument/").content.decode()
    for label in ("Wissensdokumente", "Titel", "Dateityp", "Größe", "Abschnitte", "Angelegt", "Markdown", "Fertig"):
        assert label in listing, label
    detail = client.get(f"/admin/knowledge_app/knowledgedocument/{document.pk}/change/").content.decode()
    assert "Montag bis Freitag von 8 bis 18 Uhr." in detail and "Fragen › Öffnungszeiten" in detail

    client.post(f"/admin/knowledge_app/knowledgedocument/{document.pk}/delete/", {"post": "yes"})
    assert not KnowledgeDocument.objects.exists() and knowledge_search(tenant=tenant_a, query="Öffnungszeiten") == []


@pytest.mark.parametrize(("name", "content", "content_type", "message"), [
    ("daten.txt", bytes(range(256)) * 4, "text/plain", "Die Datei ist kein UTF-8-Text."),
    ("bild.png", b"\x89PNG", "image/png", "Laden Sie reinen Text (.txt), Markdown (.md) oder PDF (.pdf) hoch."),
    ("zeile.txt", b"x" * 20_000, "text/plain", "Eine Zeile des Textes ist endlos lang."),
    ("kaputt.pdf", b"%PDF-1.4\nkaputt", "application/pdf", "Die Datei ist kein lesbares PDF."),
])
def test_a_refused_file_is_explained_in_german(owner, tenant_a, name, content, content_type, message):
    response = logged_in(owner).post(ADD, {"tenant": tenant_a.pk, "title": "X",
                                           "file": SimpleUploadedFile(name, content, content_type=content_type)})
    assert response.status_code == 200 and message in response.content.decode()
    assert not KnowledgeDocument.objects.exists()


def test_synonym_groups_are_edited_with_checks(owner, tenant_a):
    client = logged_in(owner)
    url = "/admin/knowledge_app/knowledgesynonym/add/"
    assert "Synonymgruppe hinzufügen" in client.get(url).content.decode()

    bad = client.post(url, {"tenant": tenant_a.pk, "terms": "allein"})
    assert "Geben Sie 2 bis 20 verschiedene Wörter" in bad.content.decode()
    good = client.post(url, {"tenant": tenant_a.pk, "terms": " Sprechzeiten =Öffnungszeiten= geöffnet "})
    assert good.status_code == 302
    assert KnowledgeSynonym.objects.for_tenant(tenant_a).get().terms == "Sprechzeiten = Öffnungszeiten = geöffnet"
    assert "Synonymgruppen" in client.get("/admin/knowledge_app/knowledgesynonym/").content.decode()


def test_the_app_is_called_wissen_and_english_on_request(owner):
    assert "Wissen" in logged_in(owner).get("/admin/").content.decode()
    english = logged_in(owner, HTTP_ACCEPT_LANGUAGE="en").get("/admin/knowledge_app/knowledgedocument/")
    assert "Knowledge documents" in english.content.decode()


FOLDER = Path(__file__).resolve().parents[2] / "knowledge_app" / "locale" / "de" / "LC_MESSAGES"
ENTRY = re.compile(r'^(?:msgctxt "(?P<ctx>[^"]*)"\n)?msgid "(?P<id>(?:[^"\\]|\\.)+)"\nmsgstr "(?P<str>(?:[^"\\]|\\.)*)"$',
                   re.M)


def test_the_compiled_catalogue_matches_its_source():
    entries = list(ENTRY.finditer((FOLDER / "django.po").read_text()))
    assert len(entries) > 40
    with open(FOLDER / "django.mo", "rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)
    for entry in entries:
        msgid, msgstr = (entry["id"].replace('\\"', '"'), entry["str"].replace('\\"', '"'))
        assert msgstr, msgid
        got = catalogue.pgettext(entry["ctx"], msgid) if entry["ctx"] else catalogue.gettext(msgid)
        assert got == msgstr, msgid
