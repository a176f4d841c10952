"""The voice demo page in Debian's Chromium with a fake microphone that plays German
speech of the product's own synthesis: the page's AudioWorklet resamples it to 16 kHz
PCM, the agent hears it, and the page shows the caller's words as they come (partial,
then final), the microphone's level and each reply's latency."""
import time
import wave

import pytest
from playwright.sync_api import sync_playwright

from calls_app.models import Call
from console.tenants.services import tenant_create
from tests.agent_app.conftest import silence, spoken
from tests.agent_app.test_conversation import SAID
from tests.browser import CHROMIUM, CHROMIUM_ARGS, needs_chromium

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def microphone(tmp_path):
    """A WAV file Chromium plays as the microphone (in a loop) from when the page opens it:
    a moment of quiet, the sentence, then a pause."""
    path = tmp_path / "caller.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(silence(1.0) + spoken(SAID) + silence(2.0))
    return path


def test_the_demo_page_hears_the_microphone(agent_server, settings, microphone, instant_speech, whisper_ready,
                                           booked_calls):
    settings.AGENT_VOICE_DEMO = True
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    tenant_create(slug="demo", name="Demo Praxis GmbH")
    args = [*CHROMIUM_ARGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={microphone}", "--autoplay-policy=no-user-gesture-required"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = browser.new_page(locale="de-DE")
        # Partial lines are replaced by the final one: note every one the page shows.
        page.add_init_script("""window.partialsSeen = [];
            new MutationObserver(function (changes) { changes.forEach(function (change) {
              change.addedNodes.forEach(function (node) {
                if (node.classList && node.classList.contains("partial")) window.partialsSeen.push(node.textContent);
              }); }); }).observe(document, {childList: true, subtree: true});""")
        problems = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"http://127.0.0.1:{agent_server.port}/widget/voice-demo")
        page.click("#start")
        page.wait_for_selector("#log .agent", timeout=60_000)
        # The voice on the level meter. Polled through evaluate (the DevTools protocol):
        # wait_for_function builds its predicate with eval, which the page's CSP refuses.
        deadline = time.monotonic() + 60
        while page.evaluate("document.getElementById('level').value") <= 0.05:
            assert time.monotonic() < deadline, "the level meter never showed the agent's voice"
            page.wait_for_timeout(100)
        heard = page.wait_for_selector("#log .transcript-final", timeout=90_000).text_content()
        latency = page.wait_for_selector("#log .latency", timeout=60_000).text_content()
        partials = page.evaluate("window.partialsSeen")
        call_id = page.text_content("#status").split("(")[1].split(")")[0]
        browser.close()
    assert not problems
    assert "montag" in heard.lower(), heard
    assert partials and all(text for text in partials)
    assert latency.startswith("Antwort nach ") and "Erkennung" in latency
    # The closed browser dropped the connection: the call is booked with what was heard.
    assert booked_calls.wait_for(call_id)
    assert Call.objects.filter(pk=call_id, ended_at__isnull=False).exists()
    lines = list(Call.objects.get(pk=call_id).transcript_entries.values_list("role", "text"))
    assert ("user", heard) in lines


def test_what_the_caller_says_while_the_socket_connects_is_heard(agent_server, settings, microphone,
                                                                 instant_speech, whisper_ready):
    """A loaded server accepts the WebSocket late; a caller who speaks at once is still
    heard from their first word: the page keeps what the microphone heard meanwhile."""
    settings.AGENT_VOICE_DEMO = True
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    tenant_create(slug="demo", name="Demo Praxis GmbH")
    args = [*CHROMIUM_ARGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={microphone}", "--autoplay-policy=no-user-gesture-required"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = browser.new_page(locale="de-DE")

        def connect_once_the_caller_has_spoken_a_second(socket):
            # The page's socket stays connecting until this handler connects it.
            deadline = time.monotonic() + 60
            while page.evaluate("document.getElementById('level').value") <= 0.05:
                assert time.monotonic() < deadline, "the microphone never heard the caller"
                page.wait_for_timeout(100)
            page.wait_for_timeout(1000)  # "Ich hätte gerne" is said meanwhile
            socket.connect_to_server()

        page.route_web_socket(f"ws://127.0.0.1:{agent_server.port}/**", connect_once_the_caller_has_spoken_a_second)
        page.goto(f"http://127.0.0.1:{agent_server.port}/widget/voice-demo")
        page.click("#start")
        heard = page.wait_for_selector("#log .transcript-final", timeout=90_000).text_content()
        browser.close()
    assert heard.lower().startswith("ich hätte"), heard
