"""The OpenAI-compatible paths as OpenAI's npm package uses them, run with Node.js
(tests/node: the package pinned by its lock, installed by `make test`, never while the
tests run) against the served views: the model list, a chat completion with the standard
fields (reaching a fake OpenAI-compatible lane), a multipart transcription and speech
(through fake speech servers on loopback, so the test stays fast)."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.gateway_app.conftest import GATEWAY_TOKEN, streaming_lane
from tests.openai_fake import Reply
from tests.speech_app.audio_samples import tone, wav_file
from tests.speech_app.speech_server import SpeechServer, load, remote_lane, stt_lane

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
HEARD = "Haben Sie am Dienstag geöffnet?"

pytestmark = pytest.mark.slow


@pytest.fixture
def speech():
    server = SpeechServer("ok", text=HEARD)
    yield server
    server.stop()


def test_openais_npm_package_lists_chats_hears_and_speaks(live_server, settings, chat_server, speech, render_cache_dir,
                                                         tmp_path):
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_FIRST_TOKEN_SEC = 5
    model = chat_server(Reply(text='{"offen": "Mo–Fr 8–18 Uhr"}'))
    load(streaming_lane("chat-node", endpoint=model.url, priority=1),
         stt_lane("stt-node", speech.url), remote_lane("tts-node", "tts", speech.url, priority=0, voices=["alloy"]))
    wav = tmp_path / "frage.wav"
    wav.write_bytes(wav_file(tone(1.0, rate=16000, hz=220), rate=16000))
    node = shutil.which("node")
    assert node, "node is missing: nodejs is in the Makefile's TEST_SYSTEM_PACKAGES"
    assert (NODE_DIR / "node_modules" / "openai").is_dir(), "tests/node is not installed: `make test` runs npm ci"
    run = subprocess.run([node, str(NODE_DIR / "openai_check.mjs"), f"{live_server.url}/v1", GATEWAY_TOKEN,
                          "chat-node", "stt-node", str(wav)], cwd=NODE_DIR, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["models"]["ok"] and {"auto", "chat-node"} <= set(results["models"]["value"]), results["models"]
    chat = results["chat"]
    assert chat["ok"] and chat["value"]["content"] == '{"offen": "Mo–Fr 8–18 Uhr"}', chat
    assert chat["value"]["model"] == "chat-node"
    (_, _, body), = model.requests  # the standard fields reached the lane
    assert (body["top_p"], body["stop"], body["seed"], body["response_format"]) == (
        0.9, ["\n\n"], 7, {"type": "json_object"})
    assert results["transcription"] == {"ok": True, "value": HEARD}
    speech_result = results["speech"]
    assert speech_result["ok"] and speech_result["value"]["bytes"] > 1000, speech_result
    assert speech_result["value"]["head"].startswith(("ff", "494433")) and speech_result["value"]["type"] == "audio/mpeg"
