"""The `api` mode of chat lanes: an OpenAI-compatible chat-completions call over HTTP.

`POST <endpoint>` with `{"model", "messages", "max_tokens", "stream": false}` and,
when the lane has a key, `Authorization: Bearer <key>` (model-hub-registry §5); the
answer is `choices[0].message.content` with token counts from `usage`. An endpoint
whose path ends in `/api/chat` speaks Ollama's native dialect instead (`options.
num_predict`, answer in `message.content`, counts in `prompt_eval_count` and
`eval_count`), so the registry's local Llama lane works as it is listed.
"""
import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from registry_app.lanes import http
from registry_app.lanes.failover import LaneFailure


@dataclass(frozen=True)
class ChatResult:
    text: str
    input_tokens: int
    output_tokens: int


# Tokens a chat template adds around each message (role markers, separators, a
# SentencePiece tokenizer's leading space) and before the answer: more than any
# common template (OpenAI's 3 + 3, Llama 3's 4 + 5, Mistral's 2 or 3).
TEMPLATE_TOKENS = 8


def token_bound(text):
    """The most tokens `text` can be: one per byte of UTF-8. Every token of the common
    tokenizers (byte-level BPE as GPT's, Llama 3's and Mistral's tekken; SentencePiece
    with byte fallback) stands for at least one byte, so this is never too low. It
    is four to six times the usual count of English or German text (about four
    characters a token) and close to the real count of CJK text and emoji, which a
    count of characters undercounts by up to seven times."""
    return len(text.encode("utf-8", "surrogatepass"))


def prompt_token_bound(prompt, system=""):
    """The most tokens a chat request of `prompt` (and `system`) can be billed for
    before its answer: every byte a token, plus the template's tokens."""
    texts = [text for text in (system, prompt) if text]
    return sum(token_bound(text) for text in texts) + TEMPLATE_TOKENS * (len(texts) + 1)


def is_ollama(endpoint):
    return urlsplit(endpoint).path.rstrip("/").endswith("/api/chat")


def messages(prompt, system):
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]


def chat_completion(*, endpoint, key, model, prompt, system, max_tokens, timeout):
    ollama = is_ollama(endpoint)
    body = {"model": model, "messages": messages(prompt, system), "stream": False}
    if ollama:
        body["options"] = {"num_predict": max_tokens}
    else:
        body["max_tokens"] = max_tokens
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    answer = http.post(endpoint, body=json.dumps(body).encode(), headers=headers, timeout=timeout)
    try:
        data = json.loads(answer.body)
        if ollama:
            text, usage_in, usage_out = data["message"]["content"], data.get("prompt_eval_count"), data.get("eval_count")
        else:
            usage = data.get("usage") or {}
            text = data["choices"][0]["message"]["content"]
            usage_in, usage_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    except (ValueError, KeyError, IndexError, TypeError):
        raise LaneFailure("bad_response", "not a chat-completions answer") from None
    if not isinstance(text, str) or not text.strip():
        raise LaneFailure("bad_response", "the answer has no text")
    counted = isinstance(usage_in, int) and isinstance(usage_out, int)
    # Without the provider's count, the bounds: its bill is never more than these.
    return ChatResult(
        text=text.strip(),
        input_tokens=usage_in if counted else prompt_token_bound(prompt, system or ""),
        output_tokens=usage_out if counted else min(token_bound(text), max_tokens),
    )
