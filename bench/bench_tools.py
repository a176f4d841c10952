"""A tool round trip in a turn (issue 28, Benchmark): how much longer a turn of the
assistant's mind takes when the model calls one HTTP tool of the tenant than the same
turn without tools.

The turn is `agent_app.mind.Mind.turn` as the voice agent calls it (the system prompt,
the history, the registry's lane through `gateway_chat`, the tool run by
`tools_app.services.tool_run`, the answer). The lane is a fake OpenAI-compatible
server on loopback (tests/openai_fake.py) streaming server-sent events: once answering
at once ("instant": the gateway's and the tool's own cost), once as a local LLM would
(300 ms to the first token, then 30 tokens a second, as `first_sentence` measures).
With the tool, the model's first answer is the tool call (its arguments in three
deltas), the tool is called (arguments checked against its schema, the POST signed by
the Standard Webhooks scheme, sent through the SSRF guard to a receiver on loopback —
allowed by OUTBOUND_ALLOW_PRIVATE_TARGETS here only —, its JSON answer read), and the
model's second answer is the text; without it, the model answers the text at once.
Both servers run in this process, the turns in a Django process of a throwaway
project; the rounds are interleaved."""
import json
import os
import statistics
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.harness import sized, temp_project
from tests.openai_fake import FakeChatServer, FakeToolCall, Reply

ROUNDS = int(os.environ.get("BENCH_TOOL_ROUNDS", "30"))  # interleaved turns of each kind
FIRST_TOKEN_SEC, TOKENS_PER_SEC = 0.3, 30.0
ANSWER = "Am ersten Dezember ist um neun Uhr und um halb elf ein Termin frei."
TOOL_ANSWER = {"frei": True, "uhrzeiten": ["09:00", "10:30"]}

_TURNS = """
import json, statistics, time
from agent_app.mind import Mind
from calls_app import services as calls
from console.assistants.models import Assistant
from console.tenants.services import tenant_create
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
from tools_app.services import http_tool_create, tool_http_call

document = json.loads(SHIPPED_DOCUMENT.read_text())
mock = next(entry for entry in document["models"] if entry["id"] == "chat-gateway-mock")
lanes = {lanes!r}
fakes = [dict(mock, id=lane_id, name=lane_id, endpoint=url, health=None, priority=n + 1,
              params={{"streaming": True, "languages": ["de", "en"], "model": "fake"}})
         for n, (lane_id, url) in enumerate(lanes.items())]
registry_load(document=dict(document, models=[*fakes, mock]), loaded_by="bench")
tenant = tenant_create(slug="bench", name="Bench", minute_cap=100000)
tool, _ = http_tool_create(tenant=tenant, data={{
    "name": "termin_pruefen", "description": "Prüft, ob an einem Tag ein Termin frei ist.", "url": {receiver!r},
    "parameters": {{"type": "object", "properties": {{"datum": {{"type": "string"}}}}, "required": ["datum"]}},
    "timeoutMs": 5000}})
assistants = {{(lane, tools): Assistant.objects.create(tenant=tenant, name=f"{{lane}} {{tools}}", model_lane=lane,
                                                      tools=[tool.pk] if tools else [])
              for lane in lanes for tools in (False, True)}}
call = calls.call_request_web(tenant=tenant)
calls.call_web_start(call_id=call.pk)

def turn(assistant):
    mind = Mind(tenant=tenant, call_id=call.pk, language="de", assistant=assistant)
    started = time.perf_counter()
    reply = mind.turn("Ist am ersten Dezember ein Termin frei?")
    elapsed = time.perf_counter() - started
    assert reply.text == {answer!r}, reply
    assert len(reply.notes) == (1 if assistant.tools else 0), reply.notes
    return elapsed

def tool_alone():
    started = time.perf_counter()
    result = tool_http_call(tool=tool, call_id=call.pk, arguments={{"datum": "2026-12-01"}})
    assert result["ok"], result
    return time.perf_counter() - started

for _ in range(3):  # warm: the snapshot, the route, the connections, the usage rows
    [turn(assistant) for assistant in assistants.values()]
    tool_alone()
figures = {{f"{{lane}} {{tools}}": [] for lane, tools in assistants}}
figures["tool alone"] = []
for _ in range({rounds}):
    for (lane, tools), assistant in assistants.items():
        figures[f"{{lane}} {{tools}}"].append(turn(assistant))
    figures["tool alone"].append(tool_alone())
print(json.dumps(figures))
"""


class _ToolReceiver:
    """The tenant's tool on loopback: answers every POST with TOOL_ANSWER at once."""

    def __init__(self):
        answer = json.dumps(TOOL_ANSWER).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/tools/termin"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _model(**pace):
    """A fake lane's answers: the tool call while the tool's result is not in the
    conversation yet (and tools are offered), then the text."""
    call = Reply(tool_calls=[FakeToolCall("call_1", "termin_pruefen", json.dumps({"datum": "2026-12-01"}))], **pace)
    text = Reply(text=ANSWER, usage=(60, 16), **pace)

    def answer(body):
        asked_for_tool = body.get("tools") and body["messages"][-1]["role"] != "tool"
        return call if asked_for_tool else text
    return answer


def _ms(values, quantile=None):
    if quantile is None:
        return statistics.median(values) * 1000
    return statistics.quantiles(values, n=20)[quantile] * 1000


def tool_round_trip(load):
    """A turn of the assistant's mind with one HTTP tool round trip (receiver on loopback) vs the same turn without tools"""
    instant = FakeChatServer(_model())
    paced = FakeChatServer(_model(first_token_delay=FIRST_TOKEN_SEC, tokens_per_second=TOKENS_PER_SEC))
    receiver = _ToolReceiver()
    lanes = {"chat-fake-instant": instant.url, "chat-fake-paced": paced.url}
    try:
        with temp_project() as project:
            project.env.update(GATEWAY_MODE="live", OUTBOUND_ALLOW_PRIVATE_TARGETS="1")
            out = project.django(_TURNS.format(lanes=lanes, receiver=receiver.url, answer=ANSWER,
                                                rounds=sized(ROUNDS, 2)))  # quantiles need two
            figures = json.loads(out.strip().splitlines()[-1])
    finally:
        instant.stop()
        paced.stop()
        receiver.stop()
    rows = []
    for lane, label in (("chat-fake-instant", "lane answering at once"),
                        ("chat-fake-paced", "lane of 300 ms + 30 tokens/s")):
        plain, with_tool = figures[f"{lane} False"], figures[f"{lane} True"]
        for name, values in (("turn without tools", plain), ("turn with one HTTP tool round trip", with_tool)):
            rows.append({"lane": label, "turn": name, "p50 ms": f"{_ms(values):.1f}",
                         "p95 ms": f"{_ms(values, 18):.1f}",
                         "added p50 ms": "—" if values is plain else f"{_ms(with_tool) - _ms(plain):.1f}"})
    alone = figures["tool alone"]
    rows.append({"lane": "—", "turn": "the tool call alone (tool_http_call: checked, signed, POSTed, parsed)",
                 "p50 ms": f"{_ms(alone):.1f}", "p95 ms": f"{_ms(alone, 18):.1f}", "added p50 ms": "—"})
    return rows
