import time

import pytest

from scripts_app.selectors import effective_script
from scripts_app.services import effective_text, script_override_put
from speech_app.decode import decode_to_pcm
from speech_app.services import MAX_RENDER_CHARS
from speech_app.tts import MAX_SPEECH_SECONDS, synthesizer
from tests.conftest import error_of, make_client
from tests.speech_app.conftest import BOUNDED_SECONDS, KOREAN_PHRASES, b64

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("render_cache_dir")]

URL = "/v2/audio/render"
GREETING = {"touchpoint": "inbound.greeting", "variables": {"companyName": "Muster GmbH"}}


def is_mp3(data):
    return data[:3] == b"ID3" or (data[0] == 0xFF and data[1] & 0xE0 == 0xE0)


@pytest.mark.parametrize("accept", ["application/json", "audio/mpeg", "text/html", "*/*", None])
def test_render_answers_a_real_mp3_whatever_accept_says(api_a, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = api_a.post(URL, GREETING, format="json", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "audio/mpeg"
    assert is_mp3(response.content)
    decoded = decode_to_pcm(response.content)
    assert float(response["X-Duration-Sec"]) == pytest.approx(decoded.duration_sec, abs=0.15)
    assert response["ETag"].startswith('"') and len(response["ETag"]) == 66


def test_the_same_text_is_synthesised_once(api_a, monkeypatch):
    engine = synthesizer()
    calls = []
    real = type(engine).synthesize
    monkeypatch.setattr(type(engine), "synthesize", lambda self, text, *, voice: calls.append(text) or real(
        self, text, voice=voice))
    first = api_a.post(URL, GREETING, format="json")
    second = api_a.post(URL, GREETING, format="json")
    assert len(calls) == 1
    assert second.content == first.content and second["ETag"] == first["ETag"]
    assert second["X-Duration-Sec"] == first["X-Duration-Sec"]


def test_another_voice_or_text_is_another_cache_entry(api_a):
    etags = {
        api_a.post(URL, GREETING, format="json")["ETag"],
        api_a.post(URL, {**GREETING, "voice": "de+f3"}, format="json")["ETag"],
        api_a.post(URL, {**GREETING, "variables": {"companyName": "Beispiel AG"}}, format="json")["ETag"],
    }
    assert len(etags) == 3


def test_the_disclosure_is_spoken_before_every_call_opener(tenant_a):
    tenant_a.disclosure_text = "Hier spricht eine KI."
    opener = effective_script(tenant_a, "inbound.greeting")
    assert opener.opens_call
    text = effective_text(opener, variables={"companyName": "Muster"}, disclosure=tenant_a.disclosure_text)
    assert text == "Hier spricht eine KI. Guten Tag, Sie sind mit Muster verbunden. Wie kann ich Ihnen helfen?"
    other = effective_script(tenant_a, "callback.offer")
    assert not other.opens_call
    assert effective_text(other, variables={}, disclosure=tenant_a.disclosure_text) == other.text


def test_a_tenant_override_is_rendered_and_heard(api_a, tenant_a, korean_model):
    # The tenant's override is what is spoken; a Korean voice lets the real model check it.
    script_override_put(tenant=tenant_a, touchpoint_id="callback.offer", text="부산 서울")
    response = api_a.post(URL, {"touchpoint": "callback.offer", "voice": "ko+f3"}, format="json")
    assert response.status_code == 200
    heard = api_a.post("/v2/audio/transcribe", {"audio_base64": b64(response.content), "language": "ko",
                                                "phrases": KOREAN_PHRASES}, format="json")
    assert heard.json()["text"] == "부산 서울"


def test_tenants_hear_their_own_scripts(api_a, api_b, tenant_a):
    script_override_put(tenant=tenant_a, touchpoint_id="callback.offer", text="Rufen Sie uns gern zurück.")
    body = {"touchpoint": "callback.offer"}
    assert api_a.post(URL, body, format="json")["ETag"] != api_b.post(URL, body, format="json")["ETag"]


def test_missing_variables_are_named(api_a):
    response = api_a.post(URL, {"touchpoint": "callback.confirmation", "variables": {"phone": "+49301234567"}},
                          format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "missing_variables"
    assert error["details"]["missing"] == ["firstName", "preferredTime"]
    assert "firstName" in error["message"]


def test_unknown_touchpoint_is_404(api_a):
    response = api_a.post(URL, {"touchpoint": "nope.nope"}, format="json")
    assert response.status_code == 404 and error_of(response)["code"] == "unknown_touchpoint"


def test_variable_values_over_500_characters_are_refused(api_a):
    long_value = "Muster " * 70
    variables = {"companyName": long_value.strip()}
    response = api_a.post(URL, {"touchpoint": "inbound.greeting", "variables": variables}, format="json")
    assert response.status_code == 200  # 500 characters per value are fine
    response = api_a.post(URL, {"touchpoint": "inbound.greeting", "variables": {"companyName": "x" * 501}},
                          format="json")
    assert response.status_code == 400 and "variables" in error_of(response)["details"]


def test_an_effective_text_over_the_render_limit_is_refused(api_a, tenant_a):
    words = ("{{a}} {{b}} {{c}} {{d}} {{e}} {{f}} {{g}} {{h}} {{i}} {{j}} {{k}} {{l}} {{m}} ")
    script_override_put(tenant=tenant_a, touchpoint_id="callback.offer", text=words)
    variables = {name: "y" * 480 for name in "abcdefghijklm"}
    response = api_a.post(URL, {"touchpoint": "callback.offer", "variables": variables}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "text_too_long" and error["details"]["maxLength"] == MAX_RENDER_CHARS


@pytest.mark.slow  # real synthesis of ten minutes
def test_a_script_of_one_word_lines_is_refused_past_ten_minutes_in_bounded_time(api_a, tenant_a):
    # 2,495 one-word lines, two of them variables of 250 lines each: about 6,000
    # characters that ran past gunicorn's 30 s timeout, one engine call per line.
    script = "a\n" * 2493 + "{{x}}\n{{y}}"  # 4,997 of 5,000 characters
    script_override_put(tenant=tenant_a, touchpoint_id="callback.offer", text=script)
    body = {"touchpoint": "callback.offer", "variables": {"x": "a\n" * 250, "y": "a\n" * 250}}
    began = time.monotonic()
    response = api_a.post(URL, body, format="json")
    elapsed = time.monotonic() - began
    assert response.status_code == 422, response.content[:200]
    error = error_of(response)
    assert error["code"] == "speech_too_long" and error["details"] == {"maxSeconds": MAX_SPEECH_SECONDS}
    assert elapsed < BOUNDED_SECONDS
    assert api_a.post(URL, GREETING, format="json").status_code == 200


@pytest.mark.parametrize("voice", ["xx", "de; rm -rf", "+f3"])
def test_an_unknown_voice_is_400(api_a, voice):
    response = api_a.post(URL, {**GREETING, "voice": voice}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "unknown_voice"


@pytest.mark.parametrize("variables", [{"companyName": None}, {"companyName": ["a"]}, {"companyName": True}, "x"])
def test_variable_values_are_strings_or_numbers(api_a, variables):
    response = api_a.post(URL, {"touchpoint": "inbound.greeting", "variables": variables}, format="json")
    assert response.status_code == 400 and "variables" in error_of(response)["details"]


def test_render_needs_credentials_and_a_tenant_it_covers(tenant_a, tenant_b, key_a):
    assert make_client().post(URL, GREETING, format="json").status_code == 401
    response = make_client(key_a, "globex").post(URL, GREETING, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "tenant_forbidden"
