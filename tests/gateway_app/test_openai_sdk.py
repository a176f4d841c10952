"""The OpenAI-compatible paths as OpenAI's own Python SDK uses them, against the served
views (Django's live server on loopback): the model list a model picker asks first,
OpenAI's model names, the standard fields of a chat request passed on to the lane
(fake OpenAI-compatible and Ollama servers on loopback, tests/openai_fake.py)."""
import openai
import pytest

from tests.gateway_app.conftest import GATEWAY_TOKEN, load_lanes, streaming_lane
from tests.openai_fake import Reply

QUESTION = [{"role": "user", "content": "Wann haben Sie geöffnet?"}]


@pytest.fixture
def client(live_server):
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=GATEWAY_TOKEN, max_retries=0, timeout=30)


@pytest.fixture
def live(settings):
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_FIRST_TOKEN_SEC = 2
    settings.GATEWAY_DEADLINE_SEC = 10


def lane_of(lane_id, url, *, model, priority, provider="Test", **kwargs):
    entry = streaming_lane(lane_id, endpoint=url, priority=priority, **kwargs)
    entry["params"]["model"], entry["provider"] = model, provider
    return entry


def test_models_lists_auto_and_every_callable_chat_lane(client, live, chat_server, refused_url):
    lane = chat_server(Reply(text="Gern."))
    load_lanes(lane_of("chat-local", lane.url, model="llama3.1:8b", priority=10, provider="Meta"),
               lane_of("chat-down", refused_url, model="mistral-small", priority=20),
               lane_of("chat-keyless", "https://api.example.invalid/v1/chat/completions", model="gpt-4.1",
                       priority=30, eur=2.0),
               lane_of("code-local", lane.url, model="qwen2.5-coder", priority=10, capability="code"))
    models = client.models.list()
    # The keyless hosted lane cannot be called: a model picker does not offer it.
    assert [(model.id, model.object, model.owned_by) for model in models.data] == [
        ("auto", "model", "stimmwerk"), ("chat-local", "model", "Meta"), ("chat-down", "model", "Test"),
        ("code-local", "model", "Test")]
    # `created`: the shipped registry document's `updated` day.
    # `created`: the registry document's `updated` day (2026-11-23, UTC midnight).
    assert {model.created for model in models.data} == {1_795_392_000}


def test_a_model_by_its_id_its_provider_name_or_openais_name_and_a_clear_404(client, live, chat_server):
    lane = chat_server(Reply(text="Gern."))
    load_lanes(lane_of("chat-local", lane.url, model="meta-llama/Llama-3.1-8B", priority=10, provider="Meta"))
    assert client.models.retrieve("chat-local").model_dump(exclude_none=True) == {
        "id": "chat-local", "object": "model", "created": 1_795_392_000, "owned_by": "Meta"}
    # A provider's name holds `/`: the path takes it whole.
    assert client.models.retrieve("meta-llama/Llama-3.1-8B").owned_by == "Meta"
    assert client.models.retrieve("gpt-4o-mini").model_dump(exclude_none=True) == {
        "id": "gpt-4o-mini", "object": "model", "created": 1_795_392_000, "owned_by": "stimmwerk"}
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.retrieve("gpt-9-ultra")
    assert (unknown.value.code, unknown.value.body["details"]["models"]) == ("model_not_found", ["auto", "chat-local"])
    # OpenAI's names stand for the router; a provider's name for its lane.
    assert client.chat.completions.create(model="gpt-4o", messages=QUESTION).model == "chat-local"
    assert client.chat.completions.create(model="meta-llama/Llama-3.1-8B", messages=QUESTION).model == "chat-local"
    assert [body["model"] for body in lane.bodies] == ["meta-llama/Llama-3.1-8B"] * 2


def test_the_standard_fields_reach_an_openai_compatible_lane(client, live, chat_server):
    lane = chat_server(Reply(text='{"offen": "8 bis 18 Uhr"}'))
    load_lanes(lane_of("chat-local", lane.url, model="llama3.1:8b", priority=10))
    schema = {"type": "object", "properties": {"offen": {"type": "string"}}, "required": ["offen"]}
    completion = client.chat.completions.create(
        model="auto", messages=QUESTION, temperature=0.2, top_p=0.9, stop=["\n\n", "Ende"], seed=42,
        frequency_penalty=0.5, presence_penalty=-0.5, user="praxis-weber-7", n=1, logprobs=False,
        parallel_tool_calls=True, metadata={"ticket": "39"},
        response_format={"type": "json_schema", "json_schema": {"name": "hours", "schema": schema, "strict": True}})
    assert completion.choices[0].message.content == '{"offen": "8 bis 18 Uhr"}'
    body = lane.bodies[0]
    assert {key: body[key] for key in ("temperature", "top_p", "stop", "seed", "frequency_penalty",
                                       "presence_penalty", "response_format")} == {
        "temperature": 0.2, "top_p": 0.9, "stop": ["\n\n", "Ende"], "seed": 42, "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "response_format": {"type": "json_schema", "json_schema": {"name": "hours", "schema": schema,
                                                                    "strict": True}}}
    # Accepted and not used: the caller's user id never leaves for a lane, nor do the others.
    assert not {"user", "n", "logprobs", "parallel_tool_calls", "metadata"} & set(body)
    client.chat.completions.create(model="auto", messages=QUESTION, stop="Ende", response_format={"type": "json_object"})
    assert (lane.bodies[1]["stop"], lane.bodies[1]["response_format"]) == (["Ende"], {"type": "json_object"})
    # Nothing set: the lane's defaults, nothing sent.
    client.chat.completions.create(model="auto", messages=QUESTION, response_format={"type": "text"})
    assert not {"top_p", "stop", "seed", "response_format", "temperature"} & set(lane.bodies[2])


def test_the_standard_fields_reach_an_ollama_lane_in_its_dialect(client, live, chat_server):
    lane = chat_server(Reply(text='{"offen": "ja"}'), dialect="ollama")
    load_lanes(lane_of("chat-llama", lane.url.replace("/v1/chat/completions", "/api/chat"), model="llama3.1:8b",
                       priority=10))
    schema = {"type": "object", "properties": {"offen": {"type": "string"}}}
    client.chat.completions.create(model="auto", messages=QUESTION, top_p=0.8, seed=7, stop="Ende",
                                   response_format={"type": "json_schema",
                                                    "json_schema": {"name": "x", "schema": schema}})
    client.chat.completions.create(model="auto", messages=QUESTION, response_format={"type": "json_object"})
    first, second = lane.bodies
    assert {key: first["options"][key] for key in ("top_p", "seed", "stop")} == {"top_p": 0.8, "seed": 7,
                                                                                  "stop": ["Ende"]}
    assert (first["format"], second["format"]) == (schema, "json")


def test_a_bad_standard_field_is_a_400_naming_it(client):
    for fields, name in (({"top_p": 1.5}, "top_p"), ({"stop": ["a"] * 5}, "stop"),
                         ({"response_format": {"type": "yaml"}}, "response_format"),
                         ({"response_format": {"type": "json_schema"}}, "response_format"),
                         ({"seed": "7"}, "seed")):
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model="auto", messages=QUESTION, extra_body=fields)
        assert list(bad.value.body["details"]) == [name], fields
