"""The admin's "Im Browser testen": an assistant's page links to a page of the admin that
talks to that assistant with the microphone (the operator's session, the tenant's own
assistant); the conversation is a test call — marked as one in the calls, booked against
no minute cap — and the page shows the transcript, the reply and its latency."""
import wave

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import sync_playwright

from calls_app.ledger import period_of
from calls_app.models import Call, UsageCounter
from calls_app.services import call_web_end
from console.assistants.models import Assistant
from console.tenants.models import Membership
from console.tenants.services import membership_add
from tests.agent_app.conftest import silence, spoken
from tests.agent_app.test_conversation import SAID
from tests.browser import CHROMIUM, CHROMIUM_ARGS, needs_chromium

PASSWORD = "Praxis-Test-Passwort-1"
GREETING = "Willkommen in der Praxis Weber. Wie kann ich helfen?"


@pytest.fixture
def practice(tenant_a, django_user_model):
    """A practice whose minutes are used up: a test call must not need any."""
    owner = django_user_model.objects.create_user("weber", "weber@example.com", PASSWORD, is_staff=True)
    membership_add(tenant=tenant_a, user=owner, role=Membership.Role.OWNER)
    UsageCounter.objects.create(tenant=tenant_a, period=period_of(timezone.now(), tenant_a.time_zone),
                                minutes=tenant_a.minute_cap)
    assistant = Assistant.objects.create(tenant=tenant_a, name="Praxis Weber", greeting=GREETING)
    return {"owner": owner, "assistant": assistant, "tenant": tenant_a}


@pytest.mark.django_db
def test_the_assistants_page_links_to_a_test_that_is_a_test_call_outside_the_cap(practice, outsider):
    client = Client()
    client.force_login(practice["owner"])
    assistant = practice["assistant"]
    page = client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    test_url = f"/admin/assistants/assistant/{assistant.pk}/test/"
    assert "Im Browser testen" in page and test_url in page
    test_page = client.get(test_url).content.decode()
    assert "Gespräch beginnen" in test_page and GREETING in test_page

    granted = client.post(test_url + "session")
    assert granted.status_code == 201, granted.content  # though the month's minutes are used up
    call = Call.objects.get(pk=granted.json()["callId"])
    assert (call.is_test, call.assistant_id, call.reserved_minutes) == (True, assistant.pk, 0)
    call.started_at = timezone.now() - timezone.timedelta(seconds=90)
    call.save(update_fields=["started_at"])
    call_web_end(call_id=call.pk)
    counter = UsageCounter.objects.get(tenant=practice["tenant"])
    assert (counter.minutes, counter.calls, counter.reserved_minutes) == (practice["tenant"].minute_cap, 0, 0)
    listed = Client()
    listed.force_login(practice["owner"])
    assert "test-call" in listed.get("/admin/calls_app/call/").content.decode()

    # Another tenant's owner finds no such assistant.
    stranger = Client()
    stranger.force_login(outsider)
    assert stranger.get(test_url).status_code == 404
    assert stranger.post(test_url + "session").status_code == 404


@pytest.fixture
def microphone(tmp_path):
    path = tmp_path / "caller.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(silence(1.0) + spoken(SAID) + silence(2.0))
    return path


@needs_chromium
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_owner_talks_to_the_assistant_in_the_browser(agent_server, settings, practice, microphone,
                                                         instant_speech, whisper_ready, booked_calls):
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    base = f"http://127.0.0.1:{agent_server.port}"
    args = [*CHROMIUM_ARGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={microphone}", "--autoplay-policy=no-user-gesture-required"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = browser.new_page(locale="de-DE")
        problems = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(base + "/admin/login/")
        page.fill("input[name=username]", "weber")
        page.fill("input[name=password]", PASSWORD)
        page.click("[type=submit]")
        page.goto(f"{base}/admin/assistants/assistant/{practice['assistant'].pk}/change/")
        page.get_by_text("Im Browser testen").click()
        page.get_by_role("button", name="Gespräch beginnen").click()
        greeting = page.wait_for_selector("#log .agent", timeout=60_000).text_content()
        heard = page.wait_for_selector("#log .transcript-final", timeout=90_000).text_content()
        latency = page.wait_for_selector("#log .latency", timeout=60_000).text_content()
        page.wait_for_function("document.querySelectorAll('#log .agent').length >= 2", timeout=60_000)
        reply = page.locator("#log .agent").nth(1).text_content()
        call_id = page.text_content("#status").split("(")[1].split(")")[0]
        browser.close()
    assert not problems
    assert greeting.endswith(GREETING) and "montag" in heard.lower(), (greeting, heard)
    assert latency.startswith("Antwort nach ") and reply
    assert booked_calls.wait_for(call_id)
    call = Call.objects.get(pk=call_id)
    assert call.is_test and call.assistant_id == practice["assistant"].pk
    lines = list(call.transcript_entries.values_list("role", "text"))
    assert ("user", heard) in lines and lines[0] == ("assistant", greeting)
