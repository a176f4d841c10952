"""Hostile uploads are refused in bounded time with an error that says what is wrong:
PDF bombs (a page count, nesting, a stream that inflates to 1.5 GB, a content stream
of a million operators), an endless line, binary data posing as text, wrong types.
Nothing is stored, and the server process never holds the PDF's work: a PDF is read
by a process of its own with a memory, CPU and wall-time limit."""
import random
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge_app.models import KnowledgeDocument
from tests.conftest import error_of
from tests.knowledge_app import pdfs

pytestmark = pytest.mark.django_db

# The wall-time bound of one PDF in these tests (the setting's default is 10 s).
PDF_SECONDS = 4.0
# What a refusal may take beyond the bound on a busy machine (process start, the request).
MARGIN = 4.0


@pytest.fixture(autouse=True)
def pdf_deadline(settings):
    settings.KNOWLEDGE_PDF_TIMEOUT_SEC = PDF_SECONDS


def refused(client, name, content, content_type):
    started = time.monotonic()
    response = client.post("/v2/knowledge", {"file": SimpleUploadedFile(name, content, content_type=content_type)},
                           format="multipart")
    elapsed = time.monotonic() - started
    assert not KnowledgeDocument.objects.exists()
    return response, error_of(response), elapsed


@pytest.mark.parametrize(("pdf", "code", "reason"), [
    pytest.param(lambda: pdfs.many_pages_pdf(600), "document_too_complex", "too_many_pages", id="600 pages"),
    pytest.param(lambda: pdfs.inflating_pdf(1500), "document_too_complex", "too_complex", id="inflates to 1.5 GB"),
    pytest.param(lambda: pdfs.nested_pdf(200_000), "unreadable_document", "pdf_unreadable", id="nested 200,000 deep"),
    pytest.param(lambda: pdfs.busy_pdf(1_500_000), "document_too_complex", "too_complex",
                 id="a million operators"),
    pytest.param(lambda: b"%PDF-1.7\n" + random.Random(28).randbytes(50_000), "unreadable_document", "pdf_unreadable",
                 id="noise"),
    pytest.param(lambda: b"%PDF-1.4\n%%EOF\n", "unreadable_document", "pdf_unreadable", id="empty"),
    pytest.param(lambda: pdfs.text_pdf(["", ""]), "unreadable_document", "no_text", id="no text"),
    pytest.param(lambda: pdfs.text_pdf(["x" * 20_000]), "unreadable_document", "line_too_long", id="endless line"),
    pytest.param(lambda: b"PK\x03\x04" + random.Random(29).randbytes(1000), "unreadable_document", "pdf_unreadable",
                 id="a zip named .pdf"),
])
@pytest.mark.slow  # a reader process per file, some working to their limits
def test_hostile_pdfs_are_refused_in_bounded_time(api_a, pdf, code, reason):
    response, error, elapsed = refused(api_a, "bombe.pdf", pdf(), "application/pdf")
    assert response.status_code == 422 and error["code"] == code and error["details"]["reason"] == reason, error
    assert elapsed < PDF_SECONDS + MARGIN


def test_a_pdf_that_takes_too_long_is_stopped_at_its_deadline(api_a, settings):
    settings.KNOWLEDGE_PDF_TIMEOUT_SEC = 0.05  # less than the reader process needs to start
    response, error, elapsed = refused(api_a, "langsam.pdf", pdfs.text_pdf(["Hallo"]), "application/pdf")
    assert response.status_code == 422 and error["code"] == "document_too_complex"
    assert error["details"] == {"reason": "timeout", "maxSeconds": 0.05}
    assert elapsed < MARGIN


def test_a_pdf_over_its_memory_limit_is_stopped(api_a, settings):
    settings.KNOWLEDGE_PDF_MEMORY_MB = 16  # not even enough for Python and pypdf
    response, error, _ = refused(api_a, "gross.pdf", pdfs.text_pdf(["Hallo"]), "application/pdf")
    assert response.status_code == 422 and error["details"] == {"reason": "resources"}


def test_a_huge_single_line_is_refused_at_once(api_a):
    response, error, elapsed = refused(api_a, "eine-zeile.txt", b"a" * (2 * 1024 * 1024 - 10), "text/plain")
    assert response.status_code == 422 and error["code"] == "unreadable_document"
    assert error["details"] == {"reason": "line_too_long", "maxLineCharacters": 10_000}
    assert "Break the text into lines" in error["message"]
    assert elapsed < MARGIN


@pytest.mark.parametrize(("content", "reason"), [
    pytest.param(random.Random(7).randbytes(100_000), "not_utf8", id="random bytes"),
    pytest.param("Öffnungszeiten".encode("latin-1"), "not_utf8", id="latin-1"),
    pytest.param(b"Hallo\x00Welt", "binary", id="NUL"),
    pytest.param(("Hallo \x01\x02\x03 Welt\x1b[0m" * 100).encode(), "binary", id="control characters"),
    pytest.param(b"\x89PNG\r\n\x1a\n" + bytes(100), "not_utf8", id="a PNG named .txt"),
    pytest.param(pdfs.text_pdf(["Hallo"]), "pdf_as_text", id="a PDF named .md"),
    pytest.param(b"   \n\n\t\n", "no_text", id="blank"),
])
def test_binary_data_posing_as_text_is_refused(api_a, content, reason):
    response, error, elapsed = refused(api_a, "text.md", content, "text/markdown")
    assert response.status_code == 422 and error["code"] == "unreadable_document", error
    assert error["details"]["reason"] == reason
    assert elapsed < MARGIN


@pytest.mark.parametrize(("name", "content_type"), [
    ("bild.png", "image/png"), ("brief.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("seite.html", "text/html"), ("daten.bin", "application/octet-stream"), ("ohne-endung", ""),
])
def test_other_types_are_415_naming_the_accepted_ones(api_a, name, content_type):
    response, error, _ = refused(api_a, name, b"Hallo", content_type)
    assert response.status_code == 415 and error["code"] == "unsupported_document_type"
    assert error["details"]["accepted"] == ["text/plain", "text/markdown", "application/pdf"]


def test_a_body_larger_than_any_document_is_refused_before_it_is_read(api_a):
    response = api_a.generic("POST", "/v2/knowledge", b"--x\r\n", content_type="multipart/form-data; boundary=x",
                             CONTENT_LENGTH=str(50 * 1024 * 1024))
    assert response.status_code == 413 and error_of(response)["code"] == "document_too_large"


def test_the_request_body_must_be_json_or_a_form(api_a):
    response = api_a.generic("POST", "/v2/knowledge", b"title=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415 and error_of(response)["code"] == "unsupported_media_type"
