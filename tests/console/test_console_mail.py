"""Without a mail server (EMAIL_URL unset) mails are printed into the job worker's log
by the console backend, masked: the log never holds a caller's number or page address
(docs/privacy.md, issue 31 finding 17)."""
import pytest
from django.core import mail
from django.db import transaction

from console.mail import MaskedConsoleEmailBackend
from console.phone import masked_text
from leads_app.services import lead_create
from tests.console.test_production_settings import manage

PHONE = "+491761234567"
PAGE = "https://acme.example/kontakt/anna-schmidt?ref=newsletter"


def test_without_email_url_the_settings_choose_the_masked_console_backend():
    code = "from django.conf import settings; print(settings.EMAIL_BACKEND)"
    result = manage("shell", "--no-imports", "-c", code, SECRET_KEY="x" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "console.mail.MaskedConsoleEmailBackend"


@pytest.mark.django_db
def test_the_lead_notice_printed_by_the_job_shows_neither_number_nor_page(tenant_a, owner, settings, capsys,
                                                                         django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "console.mail.MaskedConsoleEmailBackend"
    with django_capture_on_commit_callbacks(execute=True):  # the notice's job runs after the commit (sync here)
        with transaction.atomic():
            lead_create(tenant=tenant_a, kind="callback", phone=PHONE, page_url=PAGE)

    printed = capsys.readouterr().out
    assert "Subject: Neuer Lead: Rückrufwunsch (+49176•••••67)" in printed
    assert f"To: {owner.email}" in printed
    assert "Telefon: +49176•••••67" in printed and "Seite: https://acme.example/…" in printed
    for secret in (PHONE, "1761234567", "anna-schmidt", "newsletter"):
        assert secret not in printed


def test_numbers_in_any_form_are_masked_and_dates_stay_readable():
    text = ("Telefon: 0176 123 45 67, Zentrale (030) 1234-5678, Kunde 12345678901\n"
            "Eingegangen: 03.03.2025 09:00 UTC, Wunsch 2025-03-04T10:00")
    shown = masked_text(text)
    assert shown == ("Telefon: +49176•••••67, Zentrale +49301•••••78, Kunde •••••••••01\n"
                     "Eingegangen: 03.03.2025 09:00 UTC, Wunsch 2025-03-04T10:00")


def test_alternatives_and_attachments_are_only_counted(capsys):
    message = mail.EmailMultiAlternatives("Neuer Lead (+49176•••••67)", f"Telefon: {PHONE}", "a@example.com",
                                          ["b@example.com"])
    message.attach_alternative(f"<p>{PHONE}</p>", "text/html")
    message.attach("lead.txt", PHONE, "text/plain")
    assert MaskedConsoleEmailBackend().send_messages([message]) == 1

    printed = capsys.readouterr().out
    assert "1761234567" not in printed
    assert "(1 alternative part(s) and 1 attachment(s) not shown)" in printed
