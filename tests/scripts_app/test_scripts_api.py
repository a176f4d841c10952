import pytest

from scripts_app.catalog import catalog
from scripts_app.models import ScriptOverride
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db

GREETING = "inbound.greeting"
URL = f"/v2/audio/scripts/{GREETING}"


def put(client, text, touchpoint=GREETING):
    return client.put(f"/v2/audio/scripts/{touchpoint}", {"text": text}, format="json")


def entry(client, touchpoint):
    scripts = client.get("/v2/audio/scripts").json()["scripts"]
    return next(s for s in scripts if s["touchpoint_id"] == touchpoint)


def test_list_shows_every_touchpoint_as_default(api_a):
    response = api_a.get("/v2/audio/scripts")
    assert response.status_code == 200
    scripts = response.json()["scripts"]
    assert [s["touchpoint_id"] for s in scripts] == list(catalog())
    assert all(s["source"] == "default" for s in scripts)
    first = catalog()[scripts[0]["touchpoint_id"]]
    assert scripts[0] == {"touchpoint_id": first.id, "text": first.text, "source": "default",
                          "maxSeconds": first.max_seconds, "opensCall": first.opens_call}
    assert "analysis" not in response.json()


def test_list_with_analyze_adds_one_analysis_per_script(api_a):
    put(api_a, "Wir rufen Sie zurueck.")
    body = api_a.get("/v2/audio/scripts?analyze=1").json()
    assert [a["id"] for a in body["analysis"]] == [s["touchpoint_id"] for s in body["scripts"]]
    by_id = {a["id"]: a for a in body["analysis"]}
    assert [f["rule"] for f in by_id[GREETING]["findings"]] == ["kundensicht", "umlaute"]
    assert all(set(a) == {"id", "durationSec", "findings"} for a in body["analysis"])
    assert all(a["findings"] == [] for tp, a in by_id.items() if tp != GREETING)


@pytest.mark.parametrize("overrides", [0, 5])
def test_list_query_count_does_not_grow_with_overrides(api_a, tenant_a, overrides):
    for tp in list(catalog())[:overrides]:
        ScriptOverride.objects.create(tenant=tenant_a, touchpoint_id=tp, text="Guten Tag.")
    api_a.get("/v2/audio/scripts")  # the key's first use records last_used_at once
    with assert_query_count(1 + 1):  # API key with its tenant; the tenant's overrides
        response = api_a.get("/v2/audio/scripts?analyze=1")
    assert response.status_code == 200


def test_bad_analyze_value_is_a_400(api_a):
    response = api_a.get("/v2/audio/scripts?analyze=maybe")
    assert response.status_code == 400
    assert "analyze" in error_of(response)["details"]


def test_get_one_has_the_entry_and_its_full_analysis(api_a):
    body = api_a.get(URL).json()
    assert body["touchpoint_id"] == GREETING and body["source"] == "default"
    assert set(body["analysis"]) == {"words", "durationSec", "variables", "findings", "spoken"}
    assert body["analysis"]["variables"] == ["companyName"]


def test_the_analysis_says_how_the_text_will_be_spoken(api_a):
    body = put(api_a, "Rufen Sie {{name}} unter 030 901820 an, Mo–Fr ab 8:30 Uhr.").json()
    assert body["analysis"]["spoken"] == (
        "Rufen Sie {{name}} unter null drei null, neun null eins, acht zwei null an, "
        "Montag bis Freitag ab acht Uhr dreißig.")


def test_put_returns_the_analysis_of_the_new_text(api_a):
    text = "Hallo {{vorname}}, Ihr Termin am {{datum}} steht, {{vorname}}. Wir freuen uns."
    response = put(api_a, text)
    assert response.status_code == 200
    body = response.json()
    assert (body["touchpoint_id"], body["text"], body["source"]) == (GREETING, text, "tenant")
    analysis = body["analysis"]
    assert analysis["variables"] == ["vorname", "datum"]
    assert analysis["words"] == 11 and analysis["durationSec"] == 6.0
    assert [(f["rule"], f["excerpt"]) for f in analysis["findings"]] == [("kundensicht", "Wir"), ("kundensicht", "uns")]
    finding = analysis["findings"][0]
    assert text[finding["offset"]:finding["offset"] + finding["length"]] == "Wir"


def test_put_keeps_the_text_exactly_as_sent(api_a):
    text = "  Guten Tag,\n\nSie sind verbunden.  "
    assert put(api_a, text).json()["text"] == text
    assert api_a.get(URL).json()["text"] == text


def test_override_lifecycle_per_tenant(api_a, api_b):
    default_text = catalog()[GREETING].text
    assert entry(api_a, GREETING) == entry(api_b, GREETING)

    put(api_a, "Guten Tag, hier ist die Praxis Weber.")
    assert entry(api_a, GREETING)["source"] == "tenant"
    assert entry(api_a, GREETING)["text"] == "Guten Tag, hier ist die Praxis Weber."
    assert entry(api_b, GREETING)["source"] == "default"
    assert entry(api_b, GREETING)["text"] == default_text

    put(api_a, "Guten Tag, hier ist die Praxis Weber in Köln.")
    assert entry(api_a, GREETING)["text"] == "Guten Tag, hier ist die Praxis Weber in Köln."
    assert ScriptOverride.objects.count() == 1

    assert api_a.delete(URL).status_code == 204
    assert api_a.get(URL).json()["source"] == "default"
    assert api_a.get(URL).json()["text"] == default_text
    assert api_a.delete(URL).status_code == 204  # idempotent


def test_outsider_cannot_delete_or_see_another_tenants_override(api_a, api_b):
    put(api_a, "Guten Tag, hier ist die Praxis Weber.")
    assert api_b.delete(URL).status_code == 204  # removes globex's (absent) override only
    assert entry(api_a, GREETING)["source"] == "tenant"
    assert api_b.get(URL).json()["source"] == "default"


def test_outsider_key_cannot_select_the_other_tenant(key_b, tenant_a):
    response = make_client(key_b, "acme").get("/v2/audio/scripts")
    assert response.status_code == 403
    assert error_of(response)["code"] == "tenant_forbidden"


def test_scripts_need_credentials(tenant_a):
    response = make_client(None, "acme").put(URL, {"text": "Hallo"}, format="json")
    assert response.status_code == 401
    assert ScriptOverride.objects.count() == 0


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_unknown_touchpoint_is_a_404(api_a, method):
    # A GET sends no body (the test client would make it a query string, refused as unknown).
    body = {"text": "Hallo"} if method != "get" else None
    response = getattr(api_a, method)("/v2/audio/scripts/nope.nope", body, format="json")
    assert response.status_code == 404
    assert error_of(response)["code"] == "unknown_touchpoint"


@pytest.mark.parametrize("body, problem", [
    ({"text": ""}, "empty"),
    ({"text": "   \n "}, "empty"),
    ({}, "required"),
    ({"text": None}, "null"),
    ({"text": 5}, "string"),
    ({"text": ["Hallo"]}, "string"),
    ({"text": "a" * 5001}, "5000"),
    (["Hallo"], "object"),
])
def test_bad_text_is_a_400_and_stores_nothing(api_a, body, problem):
    put(api_a, "Guten Tag.")
    response = api_a.put(URL, body, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert problem in str(error["details"])
    assert ScriptOverride.objects.get().text == "Guten Tag."


def test_text_of_exactly_5000_characters_is_accepted(api_a):
    text = ("Guten Tag. " * 500)[:4999] + "."
    assert len(text) == 5000
    assert put(api_a, text).status_code == 200


def test_non_json_body_is_a_400(api_a):
    response = api_a.put(URL, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"
    assert ScriptOverride.objects.count() == 0


def test_form_body_is_refused_in_the_error_shape(api_a):
    response = api_a.put(URL, "text=Hallo", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    error_of(response)
