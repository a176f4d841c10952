"""Errors that say how to fix the request: the header the key belongs in, the path
without its trailing slash, the methods allowed, the resource not found."""
from tests.conftest import error_of, make_client


def test_a_key_in_another_header_is_named_in_the_401(tenant_a, key_a):
    for header in ("X-API-Key", "Api-Key", "X-Auth-Token"):
        response = make_client(tenant="acme").get("/v2/calls", headers={header: key_a})
        assert response.status_code == 401
        message = error_of(response)["message"]
        # Django normalises header names (X-Api-Key): named case-insensitively.
        assert header.lower() in message.lower() and "Authorization: Bearer <api key>" in message, message


def test_another_scheme_in_authorization_is_named(tenant_a, key_a):
    response = make_client(tenant="acme").get("/v2/calls", HTTP_AUTHORIZATION=f"Token {key_a}")
    assert response.status_code == 401
    assert "'Token …'" in error_of(response)["message"]
    assert key_a not in error_of(response)["message"]


def test_a_trailing_slash_answers_404_with_the_right_path(api_a):
    response = api_a.get("/v2/calls/")
    assert response.status_code == 404
    assert "use /v2/calls." in error_of(response)["message"]
    assert "trailing slash" not in error_of(api_a.get("/v2/nothing-here/"))["message"]


def test_405_lists_the_allowed_methods_in_the_message_and_allow(api_a):
    number = api_a.post("/v2/numbers", {"e164": "+493055501299"}, format="json").json()
    response = api_a.put(f"/v2/numbers/{number['id']}", {"label": "x"}, format="json")
    assert response.status_code == 405
    error = error_of(response)
    assert "GET, PATCH, DELETE" in error["message"] and "use PATCH" in error["message"]
    assert set(response["Allow"].replace(" ", "").split(",")) >= {"GET", "PATCH", "DELETE"}
    calls = api_a.post("/v2/calls", {}, format="json")
    assert calls.status_code == 405 and "Allowed: GET" in error_of(calls)["message"]


def test_not_found_names_the_resource(api_a):
    assert error_of(api_a.get("/v2/leads/ld_nothing"))["message"] == "No lead with this id."
    assert error_of(api_a.get("/v2/numbers/pn_nothing"))["message"] == "No phone number with this id."
    assert error_of(api_a.get("/v2/assistants/as_nothing"))["message"] == "No assistant with this id."
    assert error_of(api_a.get("/v2/calls/cl_nothing"))["message"] == "No call with this id."


def test_origin_forbidden_names_the_origin_and_how_to_allow_it(tenant_a):
    response = make_client().post("/v2/public/leads", {"tenant": "acme", "kind": "callback", "phone": "0171 2345678"},
                                  format="json", HTTP_ORIGIN="https://evil.example")
    assert response.status_code == 403
    error = error_of(response)
    assert "'https://evil.example'" in error["message"] and "create_tenant --origin" in error["message"]
    assert error["details"] == {"origin": "https://evil.example"}


def test_an_unknown_body_field_is_400_naming_it_and_the_accepted_fields_everywhere(api_a):
    created = api_a.post("/v2/numbers", {"e164": "+493055501298", "lable": "Zentrale"}, format="json")
    assert created.status_code == 400
    assert error_of(created)["details"] == {"lable": ["Unknown field. Accepted: e164, label, assistant, assistantVersion."]}
    assert api_a.get("/v2/numbers").json()["numbers"] == []  # nothing half-written
    settings = error_of(api_a.patch("/v2/audio/settings", {"recordingEnabeld": True}, format="json"))
    assert settings["details"]["recordingEnabeld"] == [
        "Unknown field. Accepted: recordingEnabled, transcriptionEnabled."]


def test_a_misspelled_required_field_is_named_with_the_missing_one(api_a):
    response = api_a.post("/v2/numbers", {"e146": "+493055501298"}, format="json")
    details = error_of(response)["details"]
    assert set(details) == {"e146", "e164"}
    assert "Accepted: e164" in details["e146"][0]
