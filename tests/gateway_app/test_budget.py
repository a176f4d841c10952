"""The paid lanes' budget holds whatever the script of the prompt: a lane is used only
when its worst case fits (every UTF-8 byte of the prompt a token, plus every answer
token it is allowed), the provider is told that answer cap, and a request that fits
no lane is refused as `over_budget` (422) before anything is spent.

The provider here bills like a byte-level BPE tokenizer: about four characters per
token for ASCII text, one token per byte of anything else (CJK, emoji), plus the
chat template's tokens, and it writes as long an answer as it is allowed (or 4,096
tokens when no cap is sent)."""
import json
import math
import re
import shlex
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gateway_app.models import LaneUsage
from tests.conftest import error_of
from tests.gateway_app.conftest import chat_lane, load_lanes

PRICE = 1.8  # EUR per million tokens, the shipped registry's Mistral
PROVIDER_DEFAULT_ANSWER = 4096  # what a provider writes when no max_tokens is sent
TEMPLATE_TOKENS_PER_MESSAGE, TEMPLATE_TOKENS_REPLY = 4, 3

PROMPTS = {
    "plain": "Bitte fassen Sie das folgende Gespräch kurz zusammen. " * 10,
    "cjk": "請總結以下對話並列出所有約定的時間。" * 20,
    "emoji": "🙂👍🏽🎉🧑‍🤝‍🧑" * 40,
    "mixed": "Termin 明天 um 10 Uhr 🙂 " * 30,
}


def bpe_tokens(text):
    """Tokens of `text` as a byte-level BPE counts them: runs of ASCII at about four
    characters a token, every byte of every other character a token of its own."""
    ascii_runs = re.findall(r"[\x00-\x7f]+", text)
    other = re.sub(r"[\x00-\x7f]+", "", text)
    return sum(math.ceil(len(run) / 4) for run in ascii_runs) + len(other.encode("utf-8"))


class BillingProvider:
    """An OpenAI-compatible chat provider on loopback that keeps a bill of every call."""

    def __init__(self):
        self.bills = []  # (prompt tokens, completion tokens, max_tokens sent)
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                cap = request.get("max_tokens")
                prompt_tokens = TEMPLATE_TOKENS_REPLY + sum(
                    TEMPLATE_TOKENS_PER_MESSAGE + bpe_tokens(message["content"]) for message in request["messages"])
                completion_tokens = cap if isinstance(cap, int) else PROVIDER_DEFAULT_ANSWER
                provider.bills.append((prompt_tokens, completion_tokens, cap))
                body = json.dumps({
                    "choices": [{"message": {"role": "assistant", "content": "Zusammenfassung " * 3}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/chat/completions"

    def billed_eur(self, index=-1):
        prompt_tokens, completion_tokens, _ = self.bills[index]
        return PRICE * (prompt_tokens + completion_tokens) / 1_000_000

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def billing(settings, lane_settings):
    """Live mode, and one paid lane (high tier, so every role above trainee may use it)
    at the billing provider."""
    settings.GATEWAY_MODE = "live"
    fake = BillingProvider()
    load_lanes(chat_lane("chat-paid", endpoint=fake.url, eur=PRICE, quality="high", latency="fast"))
    lane_settings("chat-paid", key="sk-paid")
    yield fake
    fake.stop()


def ask(gateway, prompt, **extra):
    return gateway.post("/v1/agent", {"prompt": prompt, **extra}, format="json")


def refused(response, max_eur):
    """The provider was not asked: the request's refusal, in the contract's shape."""
    assert response.status_code == 422, response.content[:300]
    error = error_of(response)
    assert error["code"] == "over_budget"
    assert error["details"]["maxEur"] == max_eur
    assert error["details"]["worstCaseEur"] > max_eur
    assert [(a["lane"], a["outcome"]) for a in error["details"]["attempts"]] == [("chat-paid", "over_budget")]
    return error


@pytest.mark.parametrize("script", PROMPTS)
@pytest.mark.parametrize("repeat", [1, 4, 16, 60])
def test_what_is_billed_never_exceeds_max_eur(gateway, billing, script, repeat):
    prompt = (PROMPTS[script] * repeat)[:20_000]
    response = ask(gateway, prompt, max_eur=0.01)
    if response.status_code == 422:
        refused(response, 0.01)
        assert billing.bills == []
        return
    assert response.status_code == 200, response.content[:300]
    assert billing.billed_eur() <= 0.01
    assert response.json()["costEur"] == pytest.approx(billing.billed_eur(), abs=1e-6)


@pytest.mark.parametrize("script", PROMPTS)
def test_the_longest_prompt_that_is_answered_stays_within_the_budget(gateway, billing, settings, script):
    """Each script's prompt grows until it is refused: every answered one was billed within
    GATEWAY_MAX_EUR (the default budget), and short prompts are answered at all."""
    settings.GATEWAY_MAX_EUR = 0.01
    answered = 0
    for repeat in range(1, 200):
        prompt = (PROMPTS[script] * repeat)[:20_000]
        response = ask(gateway, prompt)
        if response.status_code == 422:
            refused(response, 0.01)
            break
        assert response.status_code == 200, response.content[:300]
        assert billing.billed_eur() <= 0.01, (script, repeat, billing.bills[-1])
        answered += 1
    else:
        pytest.fail(f"a {script} prompt of 20,000 characters was answered")
    assert answered >= 1
    assert len(billing.bills) == answered  # the refused one cost nothing


def test_the_reported_cjk_and_emoji_prompts_are_refused(gateway, billing, settings):
    """Issue 31: 20,000 CJK characters cost 0.036 EUR and emoji 0.072 EUR with a budget of 0.01."""
    settings.GATEWAY_MAX_EUR = 0.01
    for prompt in ("請" * 20_000, "🙂" * 20_000, ("請總結" * 2_000)):
        error = refused(ask(gateway, prompt), 0.01)
        assert "UTF-8" in error["details"]["attempts"][0]["detail"]
    assert billing.bills == []


def test_the_provider_is_told_the_answer_cap_that_the_worst_case_counts(gateway, billing, settings):
    settings.GATEWAY_MAX_TOKENS = 300
    assert ask(gateway, PROMPTS["cjk"], max_eur=0.01).status_code == 200
    assert billing.bills[-1][2] == 300
    # A longer answer no longer fits the same budget: refused, not answered past it.
    settings.GATEWAY_MAX_TOKENS = 6000
    refused(ask(gateway, PROMPTS["cjk"], max_eur=0.01), 0.01)
    assert len(billing.bills) == 1


def test_the_system_prompt_counts_too(gateway, billing):
    prompt = "請總結以下對話" * 10  # 210 bytes
    system = "你是一個簡潔的助手。" * 300  # 3,000 characters, 9,000 bytes
    assert ask(gateway, prompt, max_eur=0.01).status_code == 200
    response = ask(gateway, prompt, max_eur=0.01, system=system)
    refused(response, 0.01)
    assert len(billing.bills) == 1


@pytest.mark.parametrize("role, ceiling", [("junior", 0.005), ("senior", 0.02), ("experte", 0.10)])
@pytest.mark.parametrize("script", ["cjk", "emoji", "plain"])
def test_the_roles_ceilings_hold(gateway, billing, role, ceiling, script):
    """/agent: a role's ceiling is its budget, for its own lanes and the hosted fallback."""
    answered = 0
    for repeat in (1, 3, 10, 30, 100):
        prompt = (PROMPTS[script] * repeat)[:20_000]
        response = gateway.post("/agent", {"role": role, "prompt": prompt}, format="json")
        if response.status_code == 422:
            refused(response, ceiling)
            continue
        assert response.status_code == 200, response.content[:300]
        assert billing.billed_eur() <= ceiling
        answered += 1
    assert answered >= 1
    assert len(billing.bills) == answered


def test_a_refusal_is_over_budget_only_when_a_lane_would_answer_with_more_money(gateway, billing, refused_url):
    # A zero-euro lane that is down could answer on a retry: that stays a 503.
    load_lanes(chat_lane("chat-free", endpoint=refused_url, priority=1),
               chat_lane("chat-paid", endpoint=billing.url, eur=PRICE, quality="high"))
    response = ask(gateway, "請" * 20_000, max_eur=0.01)
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "no_lane_answered"
    assert [(a["lane"], a["outcome"]) for a in error["details"]["attempts"]] == [
        ("chat-free", "connection_error"), ("chat-paid", "over_budget")]
    assert billing.bills == []


def test_usage_books_what_the_provider_billed(gateway, billing):
    ask(gateway, PROMPTS["emoji"], max_eur=0.01)
    row = LaneUsage.objects.get(lane_id="chat-paid")
    prompt_tokens, completion_tokens, _ = billing.bills[0]
    assert (row.input_tokens, row.output_tokens) == (prompt_tokens, completion_tokens)
    assert float(row.eur) == pytest.approx(billing.billed_eur(), abs=1e-6)


def test_a_paid_command_lane_counts_its_output_cap_as_answer_tokens(gateway, settings, lane_settings):
    """A command cannot be told max_tokens: what it may print before it is stopped counts."""
    load_lanes(chat_lane("chat-cli-paid", endpoint="bridge:cli", eur=PRICE, quality="high"))
    lane_settings("chat-cli-paid", cmd=f"{shlex.quote(sys.executable)} -c \"print('Kurz.')\"")
    response = ask(gateway, "Fasse zusammen.", max_eur=0.01)
    assert response.status_code == 422
    detail = error_of(response)["details"]["attempts"][0]["detail"]
    assert f"+ {settings.GATEWAY_CLI_MAX_OUTPUT_BYTES} answer tokens" in detail
    settings.GATEWAY_CLI_MAX_OUTPUT_BYTES = 2000
    answered = ask(gateway, "Fasse zusammen.", max_eur=0.01)
    assert answered.status_code == 200 and answered.json()["text"] == "Kurz."
