"""The OpenAI-compatible paths as OpenAI's own Python SDK uses them, against the served
views (Django's live server on loopback): the model list a model picker asks first,
OpenAI's model names, the standard fields of a chat request passed on to the lane
(fake OpenAI-compatible and Ollama servers on loopback, tests/openai_fake.py), and the
audio paths on the real engines (eSpeak NG speaks, Whisper base and Vosk hear)."""
import datetime as dt
import json
import re
from urllib.parse import quote

import openai
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from speech_app.decode import MAX_AUDIO_BYTES, decode_to_pcm
from speech_app.remote import wav_from_pcm
from speech_app.services import speech_render
from tests.conftest import error_of
from tests.gateway_app.conftest import GATEWAY_TOKEN, SHIPPED, load_document, load_lanes, streaming_lane
from tests.openai_fake import Reply
from tests.speech_app.conftest import KOREAN_PHRASES, korean_mp3, whisper_ready  # noqa: F401 (a fixture)
from tests.speech_app.voicemails import VOICEMAILS
from tests.speech_app.wer import word_error_rate

QUESTION = [{"role": "user", "content": "Wann haben Sie geöffnet?"}]
# A model's `created`: the shipped registry document's `updated` day, UTC midnight.
CREATED = int(dt.datetime.fromisoformat(SHIPPED["updated"]).replace(tzinfo=dt.UTC).timestamp())


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
    assert {model.created for model in models.data} == {CREATED}


def test_a_model_by_its_id_its_provider_name_or_openais_name_and_a_clear_404(client, live, chat_server):
    lane, hosted = chat_server(Reply(text="Gern.")), chat_server(Reply(text="Gern, gehostet."))
    load_lanes(lane_of("chat-local", lane.url, model="meta-llama/Llama-3.1-8B", priority=10, provider="Meta"),
               lane_of("chat-hosted", hosted.url, model="gpt-4o", priority=20, provider="OpenAI"))
    assert client.models.retrieve("chat-local").model_dump(exclude_none=True) == {
        "id": "chat-local", "object": "model", "created": CREATED, "owned_by": "Meta"}
    # A provider's name holds `/`: the path takes it whole.
    assert client.models.retrieve("meta-llama/Llama-3.1-8B").owned_by == "Meta"
    assert client.models.retrieve("gpt-4o").owned_by == "OpenAI"
    assert client.models.retrieve("gpt-4o-mini").model_dump(exclude_none=True) == {
        "id": "gpt-4o-mini", "object": "model", "created": CREATED, "owned_by": "stimmwerk"}
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.retrieve("gpt-9-ultra")
    assert (unknown.value.code, unknown.value.body["details"]["models"]) == (
        "model_not_found", ["auto", "chat-local", "chat-hosted"])
    # A provider's name names its lane (before OpenAI's names, which stand for the router).
    assert client.chat.completions.create(model="gpt-4o", messages=QUESTION).model == "chat-hosted"
    assert client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION).model == "chat-local"
    assert client.chat.completions.create(model="meta-llama/Llama-3.1-8B", messages=QUESTION).model == "chat-local"
    assert [body["model"] for body in lane.bodies] == ["meta-llama/Llama-3.1-8B"] * 2
    assert [body["model"] for body in hosted.bodies] == ["gpt-4o"]


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


# --- /v1/audio/speech and /v1/audio/transcriptions ---

SPOKEN = "Guten Morgen, hier ist die Praxis Doktor Weber."
# What each format starts with, and its Content-Type.
MAGIC = {"mp3": (b"\xff", "audio/mpeg"), "wav": (b"RIFF", "audio/wav"), "opus": (b"OggS", "audio/ogg"),
         "flac": (b"fLaC", "audio/flac"), "aac": (b"\xff\xf1", "audio/aac")}


@pytest.fixture
def shipped(render_cache_dir):
    load_document(SHIPPED)


def test_speech_in_every_format_of_openais_from_the_local_espeak_lane(client, shipped):
    seconds = {}
    for response_format, (magic, content_type) in MAGIC.items():
        raw = client.audio.speech.with_raw_response.create(model="tts-1", voice="alloy", input=SPOKEN,
                                                           response_format=response_format)
        audio = raw.content
        assert audio.startswith(magic) and raw.headers["Content-Type"] == content_type, response_format
        assert raw.headers["X-Gateway-Lane"] == "tts-espeak-de"
        seconds[response_format] = decode_to_pcm(audio).duration_sec
    # The same speech in each (the encoders' padding aside).
    assert max(seconds.values()) - min(seconds.values()) < 0.15, seconds
    assert seconds["mp3"] > 2
    # pcm: raw 16-bit mono at 24 kHz, as OpenAI's.
    pcm = client.audio.speech.create(model="gpt-4o-mini-tts", voice="nova", input=SPOKEN, response_format="pcm").read()
    assert len(pcm) / 2 / 24000 == pytest.approx(seconds["wav"], abs=0.05)


def test_speech_at_twice_and_half_the_speed(client, shipped):
    def seconds(speed):
        return decode_to_pcm(client.audio.speech.create(model="tts-1", voice="alloy", input=SPOKEN,
                                                        response_format="wav", speed=speed).read()).duration_sec
    normal = seconds(1.0)
    assert seconds(2.0) == pytest.approx(normal / 2, rel=0.05)
    assert seconds(0.5) == pytest.approx(normal * 2, rel=0.05)


def test_speech_requests_out_of_bounds_get_clear_errors(client, shipped):
    for fields, name in (({"speed": 4.5}, "speed"), ({"response_format": "ogg"}, "response_format"),
                         ({"input": "x" * 4097}, "input"), ({"input": "   "}, "input")):
        with pytest.raises(openai.BadRequestError) as bad:
            client.audio.speech.create(**{"model": "tts-1", "voice": "alloy", "input": SPOKEN, **fields})
        assert list(bad.value.body["details"]) == [name], fields
    with pytest.raises(openai.NotFoundError) as unknown:
        client.audio.speech.create(model="eleven-turbo", voice="alloy", input=SPOKEN)
    assert unknown.value.code == "model_not_found"
    # OpenAI's names, then the registry's tts lanes.
    assert unknown.value.body["details"]["models"] == ["tts-1", "tts-1-hd", "gpt-4o-mini-tts", "auto", "tts-espeak-de",
                                                       "tts-piper-de", "tts-elevenlabs", "tts-cartesia-de",
                                                       "tts-azure-de"]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0).audio.speech.create(
            model="tts-1", voice="alloy", input=SPOKEN)


def test_speech_may_name_a_tts_lane_to_try_first(client, shipped, provider, lane_settings):
    # The shipped Azure lane speaks Azure's own protocol (`params.protocol`, streamed by the
    # agent); without it, the lane is a server of the OpenAI audio API like the fake here.
    load_document({**SHIPPED, "models": [
        dict(entry, params={key: value for key, value in entry.get("params", {}).items() if key != "protocol"})
        if entry["id"] == "tts-azure-de" else entry for entry in SHIPPED["models"]]})
    hosted = provider("audio", audio=korean_mp3("안녕하세요"))  # real MP3 bytes
    lane_settings("tts-azure-de", endpoint=hosted.url.replace("chat/completions", "audio/speech"), key="az-key")
    raw = client.audio.speech.with_raw_response.create(model="tts-azure-de", voice="alloy", input=SPOKEN,
                                                       extra_body={"max_eur": 0.01})
    assert raw.headers["X-Gateway-Lane"] == "tts-azure-de" and raw.content.startswith(b"\xff")
    assert len(hosted.requests) == 1
    # OpenAI's names keep the registry's order: the local eSpeak lane first.
    raw = client.audio.speech.with_raw_response.create(model="tts-1", voice="alloy", input=SPOKEN,
                                                       extra_body={"max_eur": 0.01})
    assert raw.headers["X-Gateway-Lane"] == "tts-espeak-de" and len(hosted.requests) == 1


@pytest.fixture(scope="module")
def voicemail_wav(django_db_setup, django_db_blocker):
    """A WAV of our own eSpeak synthesis (the voice Whisper base hears best,
    tests/speech_app/test_german_transcription.py)."""
    with django_db_blocker.unblock():
        rendered, _ = speech_render(text=VOICEMAILS[0], voice="de+m3")
    return wav_from_pcm(decode_to_pcm(rendered.mp3).pcm)


@pytest.fixture
def patient(settings):
    """Whisper's time on a machine busy with other work (what it hears is under test here)."""
    settings.STT_DEADLINE_BASE_SEC = settings.STT_DEADLINE_MAX_SEC = 120
    settings.GATEWAY_DEADLINE_SEC = 120


@pytest.mark.slow  # real recognition
@pytest.mark.usefixtures("whisper_ready")
def test_transcriptions_in_every_response_format_by_whisper_base(client, shipped, patient, voicemail_wav):
    upload = ("voicemail.wav", voicemail_wav, "audio/wav")
    plain = client.audio.transcriptions.create(model="whisper-1", file=upload, language="de")
    assert word_error_rate(VOICEMAILS[0], plain.text) <= 0.5, plain.text
    verbose = client.audio.transcriptions.create(model="whisper-1", file=upload, language="de",
                                                 response_format="verbose_json", prompt="Praxis Weber",
                                                 timestamp_granularities=["word", "segment"])
    assert (verbose.language, verbose.text) == ("german", plain.text)
    assert verbose.duration == pytest.approx(len(voicemail_wav) / 32000, abs=0.05)
    assert " ".join(segment.text.strip() for segment in verbose.segments) == plain.text
    assert [word.word for word in verbose.words] == plain.text.split()
    assert all(0 <= word.start <= word.end <= verbose.duration + 0.05 for word in verbose.words)
    text = client.audio.transcriptions.create(model="gpt-4o-transcribe", file=upload, language="de",
                                              response_format="text")
    assert text == plain.text + "\n"
    srt = client.audio.transcriptions.create(model="whisper-1", file=upload, language="de", response_format="srt")
    assert re.fullmatch(r"1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n.+\n(\n\d+\n.+\n.+\n)*", srt), srt
    # A stt lane's id names the lane tried first (here the first anyway).
    vtt = client.audio.transcriptions.with_raw_response.create(model="stt-whisper-base", file=upload, language="de",
                                                               response_format="vtt")
    assert vtt.headers["X-Gateway-Lane"] == "stt-whisper-base"
    vtt = vtt.parse()
    assert vtt.startswith("WEBVTT\n\n00:00:") and " --> " in vtt


def test_transcription_uploads_out_of_bounds_get_clear_errors(client, gateway, shipped):
    with pytest.raises(openai.UnprocessableEntityError) as undecodable:
        client.audio.transcriptions.create(model="whisper-1", file=("note.wav", b"not audio at all", "audio/wav"))
    assert undecodable.value.code == "undecodable_audio"
    with pytest.raises(openai.NotFoundError) as unknown:
        client.audio.transcriptions.create(model="nova-3", file=("note.wav", b"RIFF", "audio/wav"))
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        client.audio.transcriptions.create(model="whisper-1", file=("note.wav", b"RIFF", "audio/wav"),
                                           response_format="docx")
    assert list(bad.value.body["details"]) == ["response_format"]
    missing = gateway.post("/v1/audio/transcriptions", {"model": "whisper-1"}, format="multipart")
    assert (missing.status_code, list(error_of(missing)["details"])) == (400, ["file"])
    too_large = gateway.post("/v1/audio/transcriptions", {
        "model": "whisper-1", "file": SimpleUploadedFile("big.wav", b"\0" * (MAX_AUDIO_BYTES + 1))},
        format="multipart")
    assert (too_large.status_code, error_of(too_large)["code"]) == (413, "audio_too_large")


@pytest.mark.slow  # real synthesis and recognition
def test_v1_transcribe_takes_a_whisper_style_upload(gateway, korean_model, render_cache_dir):
    phrases = "&".join(f"phrase={quote(phrase)}" for phrase in KOREAN_PHRASES)
    response = gateway.post(f"/v1/transcribe?language=ko&{phrases}",
                            {"file": SimpleUploadedFile("hallo.mp3", korean_mp3("안녕하세요"), "audio/mpeg"),
                             "model": "whisper-1"}, format="multipart")
    assert response.status_code == 200, response.content
    assert (json.loads(response.content)["text"], response.json()["lane"]) == ("안녕하세요", "stt-local")


FILE_PART = b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n\r\n--zz--\r\n'


@pytest.mark.parametrize("path", ["/v1/transcribe", "/v1/audio/transcriptions"])
@pytest.mark.parametrize(("content_type", "body", "code"), [
    ("multipart/form-data", b"no boundary", "malformed_json"),
    ("multipart/form-data; boundary=zz", b"garbage", "validation_error"),
    ("multipart/form-data; boundary=zz", FILE_PART, "validation_error"),  # an empty file
])
def test_a_broken_form_is_a_400(gateway, path, content_type, body, code):
    response = gateway.generic("POST", path, body, content_type=content_type)
    assert (response.status_code, error_of(response)["code"]) == (400, code)
