"""The voice demo page in Debian's Chromium with a fake microphone that plays German
speech of the product's own synthesis: the page's AudioWorklet resamples it to 16 kHz
PCM, the agent hears it, and the page shows the caller's words as they come (partial,
then final), the microphone's level and each reply's latency."""
import contextlib
import time
import wave

import numpy
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


@pytest.fixture
def demo_page(agent_server, settings, microphone):
    """Opens the demo page's browser, with the microphone above. The database is used
    after it closes: Playwright's sync API runs an event loop while it is open."""
    settings.AGENT_VOICE_DEMO = True
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    tenant_create(slug="demo", name="Demo Praxis GmbH")
    args = [*CHROMIUM_ARGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={microphone}", "--autoplay-policy=no-user-gesture-required"]

    @contextlib.contextmanager
    def opened():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
            try:
                yield browser.new_page(locale="de-DE")
            finally:
                browser.close()
    return opened


def wait_for_voice_on_the_meter(page):
    """Polled through evaluate (the DevTools protocol): wait_for_function builds its
    predicate with eval, which the page's CSP refuses."""
    deadline = time.monotonic() + 60
    while page.evaluate("document.getElementById('level').value") <= 0.05:
        assert time.monotonic() < deadline, "the level meter never showed the caller's voice"
        page.wait_for_timeout(100)


def test_the_demo_page_hears_the_microphone(agent_server, demo_page, instant_speech, whisper_ready, booked_calls):
    problems = []
    with demo_page() as page:
        # Partial lines are replaced by the final one: note every one the page shows.
        page.add_init_script("""window.partialsSeen = [];
            new MutationObserver(function (changes) { changes.forEach(function (change) {
              change.addedNodes.forEach(function (node) {
                if (node.classList && node.classList.contains("partial")) window.partialsSeen.push(node.textContent);
              }); }); }).observe(document, {childList: true, subtree: true});""")
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"http://127.0.0.1:{agent_server.port}/widget/voice-demo")
        page.click("#start")
        page.wait_for_selector("#log .agent", timeout=60_000)
        wait_for_voice_on_the_meter(page)
        heard = page.wait_for_selector("#log .transcript-final", timeout=90_000).text_content()
        latency = page.wait_for_selector("#log .latency", timeout=60_000).text_content()
        partials = page.evaluate("window.partialsSeen")
        call_id = page.text_content("#status").split("(")[1].split(")")[0]
    assert not problems
    assert "montag" in heard.lower(), heard
    assert partials and all(text for text in partials)
    assert latency.startswith("Antwort nach ") and "Erkennung" in latency
    # The closed browser dropped the connection: the call is booked with what was heard.
    assert booked_calls.wait_for(call_id)
    assert Call.objects.filter(pk=call_id, ended_at__isnull=False).exists()
    lines = list(Call.objects.get(pk=call_id).transcript_entries.values_list("role", "text"))
    assert ("user", heard) in lines


def test_what_the_caller_says_while_the_socket_connects_is_heard(agent_server, demo_page, instant_speech,
                                                                 whisper_ready):
    """A loaded server accepts the WebSocket late; a caller who speaks at once is still
    heard from their first word: the page keeps what the microphone heard meanwhile and
    sends it first, from the microphone file's opening second of quiet."""
    sent = []  # the page's audio frames as the agent received them
    with demo_page() as page:

        def connect_once_the_caller_has_spoken_a_second(socket):
            # The page's socket stays connecting until this handler connects it.
            wait_for_voice_on_the_meter(page)
            page.wait_for_timeout(1000)  # "Ich hätte gerne" is said meanwhile
            agent = socket.connect_to_server()

            def forward(message):
                if isinstance(message, bytes):
                    sent.append(message)
                agent.send(message)
            socket.on_message(forward)

        page.route_web_socket(f"ws://127.0.0.1:{agent_server.port}/**", connect_once_the_caller_has_spoken_a_second)
        page.goto(f"http://127.0.0.1:{agent_server.port}/widget/voice-demo")
        page.click("#start")
        heard = page.wait_for_selector("#log .transcript-final", timeout=90_000).text_content()
    # 16 kHz 16-bit frames: the first 0.8 s sent is the file's quiet, the sentence follows
    # within the next 0.8 s (a page that dropped them would begin mid-sentence).
    audio = numpy.frombuffer(b"".join(sent), dtype="<i2").astype(float)
    loudness = [round(numpy.sqrt(numpy.mean(audio[start:start + 1600] ** 2)))
                for start in range(0, min(len(audio), 25600), 1600)]
    assert len(loudness) == 16 and max(loudness[:8]) < 300 and max(loudness[8:]) > 1000, loudness
    assert heard  # what it heard: the test above
