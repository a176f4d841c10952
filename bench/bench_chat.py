"""A conversation's turn through the gateway (gateway_chat, issue 28 §4): how soon the
first complete sentence of the answer is there, on a streaming lane and on the mock.

The streaming lane is a fake OpenAI-compatible server on loopback (tests/openai_fake.py)
that models a local LLM: 300 ms to the first token, then 30 tokens a second, one word
a token, server-sent events over chunked HTTP. It runs in this process; the gateway
runs in a throwaway project (the registry: that lane, then the gateway's mock lane),
in process as the voice agent calls it, and over HTTP as an OpenAI client does
(`POST /v1/chat/completions` with `stream: true`, gunicorn).

"First sentence": the time from the call until the streamed text holds a complete
sentence (up to `.`, `!` or `?` followed by a space or the end), which is what the
agent hands to synthesis."""
import json
import re
import statistics
import time

from bench.harness import gunicorn, sized, temp_project
from tests.openai_fake import FakeChatServer, Reply

TOKEN = "bench-chat-token-0123456789abcdef"
FIRST_TOKEN_SEC, TOKENS_PER_SEC = 0.3, 30.0
ANSWER = ("Gern, ich notiere Ihren Rückrufwunsch für morgen Vormittag. Ein Mitarbeiter meldet sich dann unter der "
          "Nummer, die Sie genannt haben. Kann ich sonst noch etwas für Sie tun?")
MESSAGES = [{"role": "system", "content": "Du bist die Telefonassistenz der Praxis Dr. Weber. Antworte kurz."},
            {"role": "user", "content": "Bitte rufen Sie mich morgen Vormittag zurück."}]
TURNS = 15
SENTENCE_END = re.compile(r"[.!?](?:\s|$)")

# In the project's Django (manage.py shell): the shipped registry with a streaming lane
# at {url} (a fake LLM) before its mock lane; bench_agent loads the same.
STREAMING_REGISTRY = """
import json
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
document = json.loads(SHIPPED_DOCUMENT.read_text())
mock = next(entry for entry in document["models"] if entry["id"] == "chat-gateway-mock")
fake = dict(mock, id="chat-fake-stream", name="Fake streaming LLM", endpoint={url!r}, health=None, priority=1,
            params={{"streaming": True, "languages": ["de", "en"], "model": "fake"}})
registry_load(document=dict(document, models=[fake, mock]), loaded_by="bench")
"""
# The registry, then the turns in process.
_IN_PROCESS = STREAMING_REGISTRY + """
import re, time
from gateway_app.services import gateway_chat
from gateway_app.turns import ChatDone, TextDelta

sentence_end = re.compile({pattern!r})

def turn(lane):
    started = time.perf_counter()
    text, first_token, first_sentence = "", None, None
    stream = gateway_chat(messages={messages!r}, lane=lane)
    for event in stream:
        if isinstance(event, TextDelta):
            first_token = first_token or time.perf_counter() - started
            text += event.text
            if first_sentence is None and sentence_end.search(text):
                first_sentence = time.perf_counter() - started
        elif isinstance(event, ChatDone):
            assert event.lane == lane, event
    return first_token, first_sentence, time.perf_counter() - started

for lane in ("chat-gateway-mock", "chat-fake-stream"):
    turn(lane)  # warm: the snapshot, the route, the usage row
figures = {{lane: [turn(lane) for _ in range({turns})] for lane in ("chat-gateway-mock", "chat-fake-stream")}}
print(json.dumps(figures))
"""


def _over_http(base_url):
    """One streamed turn through POST /v1/chat/completions with the openai client."""
    import openai

    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=TOKEN, max_retries=0, timeout=30)
    started = time.perf_counter()
    text, first_token, first_sentence = "", None, None
    for chunk in client.chat.completions.create(model="chat-fake-stream", messages=MESSAGES, stream=True):
        piece = chunk.choices[0].delta.content if chunk.choices else None
        if piece:
            first_token = first_token or time.perf_counter() - started
            text += piece
            if first_sentence is None and SENTENCE_END.search(text):
                first_sentence = time.perf_counter() - started
    return first_token, first_sentence, time.perf_counter() - started


def _ideal():
    """When the fake lane's schedule alone puts the first token, the first sentence and
    the last word on the wire (seconds): the floor of any client."""
    words = ANSWER.split(" ")
    first_sentence_words = len(SENTENCE_END.split(ANSWER, maxsplit=1)[0].split(" "))
    return (FIRST_TOKEN_SEC, FIRST_TOKEN_SEC + (first_sentence_words - 1) / TOKENS_PER_SEC,
            FIRST_TOKEN_SEC + (len(words) - 1) / TOKENS_PER_SEC)


def _p50_ms(values):
    return statistics.median(values) * 1000


def _p95_ms(values):
    return statistics.quantiles(values, n=20)[18] * 1000


def _row(label, samples, ideal=None):
    first_tokens, first_sentences, wholes = zip(*samples, strict=True)
    return {"lane": label, "first token p50 ms": f"{_p50_ms(first_tokens):.1f}",
            "first sentence p50 ms": f"{_p50_ms(first_sentences):.1f}",
            "first sentence p95 ms": f"{_p95_ms(first_sentences):.1f}",
            "whole answer p50 ms": f"{_p50_ms(wholes):.1f}",
            "added to the lane's schedule (first sentence) ms":
                "—" if ideal is None else f"{_p50_ms(first_sentences) - ideal[1] * 1000:.1f}"}


def first_sentence(load):
    """Chat turns: time to the first complete sentence through gateway_chat, streaming lane (300 ms + 30 tok/s) vs the mock"""
    fake = FakeChatServer(Reply(text=ANSWER, first_token_delay=FIRST_TOKEN_SEC, tokens_per_second=TOKENS_PER_SEC,
                                usage=(60, 30)))
    try:
        with temp_project() as project:
            project.env["GATEWAY_STATIC_TOKEN"] = TOKEN
            project.env["GATEWAY_MODE"] = "live"
            figures = json.loads(project.django(_IN_PROCESS.format(
                url=fake.url, pattern=SENTENCE_END.pattern, messages=MESSAGES, turns=sized(TURNS, 2))).strip().splitlines()[-1])
            with gunicorn(project, workers=2) as base_url:
                _over_http(base_url)  # warm
                http = [_over_http(base_url) for _ in range(sized(TURNS, 2))]  # p95 needs two
    finally:
        fake.stop()
    ideal = _ideal()
    schedule = {"lane": "the fake lane's own schedule (floor)", "first token p50 ms": f"{ideal[0] * 1000:.1f}",
                "first sentence p50 ms": f"{ideal[1] * 1000:.1f}", "first sentence p95 ms": "—",
                "whole answer p50 ms": f"{ideal[2] * 1000:.1f}",
                "added to the lane's schedule (first sentence) ms": "—"}
    return [
        _row("mock lane, gateway_chat in process", figures["chat-gateway-mock"]),
        schedule,
        _row("streaming lane, gateway_chat in process", figures["chat-fake-stream"], ideal),
        _row("streaming lane, POST /v1/chat/completions (openai client, gunicorn)", http, ideal),
    ]
