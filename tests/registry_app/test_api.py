"""`/v2/registry…`: credential needed, no tenant."""
import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from registry_app.validation import registry_schema
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count
from tests.registry_app.conftest import lane, load


@pytest.fixture
def api(key_a):
    """An API key without X-Tenant: registry endpoints need no tenant."""
    return make_client(key_a)


def ids(response):
    return [model["id"] for model in response.json()["models"]]


@pytest.mark.parametrize("path", ["/v2/registry", "/v2/registry/schema", "/v2/registry/models",
                                  "/v2/registry/models/tts-espeak-de", "/v2/registry/versions",
                                  "/v2/registry/versions/1", "/v2/registry/route?capability=tts"])
def test_every_registry_endpoint_needs_a_credential(loaded, path):
    response = APIClient().get(path)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"


def test_a_bad_key_is_unauthenticated(loaded):
    response = make_client("swk_nope_nope").get("/v2/registry")
    assert response.status_code == 401


def test_any_tenants_key_reads_the_registry_whatever_x_tenant_says(loaded, key_b):
    assert make_client(key_b).get("/v2/registry").status_code == 200
    assert make_client(key_b, "acme").get("/v2/registry").status_code == 200


def test_staff_session_reads_the_registry(loaded, owner):
    client = APIClient()
    client.force_login(owner)
    assert client.get("/v2/registry/models").status_code == 200


def test_session_of_a_user_who_is_not_staff_is_forbidden(loaded):
    user = get_user_model().objects.create_user("visitor", password="pw")
    client = APIClient()
    client.force_login(user)
    response = client.get("/v2/registry")
    assert response.status_code == 403
    assert error_of(response)["code"] == "forbidden"


def test_registry_returns_the_document_as_loaded(loaded, api):
    response = api.get("/v2/registry")
    assert response.status_code == 200
    assert response.json() == loaded
    assert json.loads(response.content)["models"][3]["cost"]["eur"] == 1.8
    assert response["X-Registry-Version"].isdigit()


def test_registry_before_any_load_is_a_404_that_says_so(db, api):
    response = api.get("/v2/registry")
    assert response.status_code == 404
    assert error_of(response)["code"] == "registry_not_loaded"
    assert api.get("/v2/registry/models").json() == {"models": []}


def test_registry_follows_a_new_load(loaded, api):
    api.get("/v2/registry")
    newer = json.loads(json.dumps(loaded))
    newer["version"] = "2026.12.0"
    load(newer)
    assert api.get("/v2/registry").json()["version"] == "2026.12.0"


def test_schema_is_the_shipped_json_schema(db, api):
    response = api.get("/v2/registry/schema")
    assert response.status_code == 200
    assert response.json() == registry_schema()


def test_models_filter_by_capability(loaded, api):
    assert ids(api.get("/v2/registry/models?capability=stt")) == ["stt-whisper-base", "stt-vosk-de", "stt-whisper-local",
                                                                   "stt-deepgram"]


def test_models_filter_by_status_hosting_and_provider(loaded, api):
    assert ids(api.get("/v2/registry/models?status=live&hosting=self-hosted&capability=tts")) == ["tts-espeak-de"]
    assert ids(api.get("/v2/registry/models?provider=openai")) == ["chat-gpt-api", "code-codex-abo",
                                                                  "voice-agent-realtime"]


def test_models_filter_by_language_keeps_lanes_without_languages(loaded, api):
    got = ids(api.get("/v2/registry/models?language=fr"))
    # Mistral lists fr; Codex lists no languages and so matches any.
    assert got == ["chat-mistral-api", "code-codex-abo"]


def test_models_without_filters_lists_every_lane_in_document_order(loaded, api):
    assert ids(api.get("/v2/registry/models")) == [m["id"] for m in loaded["models"]]


@pytest.mark.parametrize("query, field", [("capability=vision", "capability"), ("status=online", "status"),
                                          ("hosting=cloud", "hosting"), ("language=German", "language")])
def test_models_filter_with_an_unknown_value_is_a_field_error(loaded, api, query, field):
    response = api.get(f"/v2/registry/models?{query}")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error" and field in error["details"]


def test_models_list_costs_one_query_once_warm(loaded, api):
    api.get("/v2/registry/models")
    with assert_query_count(2):  # the API key lookup (key + tenant) and the current version check
        response = api.get("/v2/registry/models?capability=tts")
    assert response.status_code == 200


def test_one_model_by_id(loaded, api):
    response = api.get("/v2/registry/models/tts-azure-de")
    assert response.status_code == 200
    assert response.json() == lane(loaded, "tts-azure-de")


def test_unknown_model_is_404(loaded, api):
    response = api.get("/v2/registry/models/tts-nothing")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_versions_list_newest_first_with_current_marked(loaded, api):
    newer = json.loads(json.dumps(loaded))
    newer["version"] = "2026.12.0"
    load(newer, by="olga")
    api.get("/v2/registry/versions")  # the key's first use also records last_used_at
    with assert_query_count(2):  # the key lookup and the versions
        response = api.get("/v2/registry/versions")
    versions = response.json()["versions"]
    assert [(v["version"], v["current"], v["loadedBy"]) for v in versions] == [
        ("2026.12.0", True, "olga"), ("2026.11.5", False, "tests")]
    assert set(versions[0]) == {"number", "version", "updated", "sha256", "lanes", "loadedAt", "loadedBy", "current"}
    assert versions[0]["lanes"] == 17 and versions[0]["loadedAt"].endswith("Z")


def test_version_detail_shows_changes_against_the_version_before(loaded, api):
    newer = json.loads(json.dumps(loaded))
    lane(newer, "tts-azure-de")["status"] = "key-gated"
    number = load(newer).version.number
    body = api.get(f"/v2/registry/versions/{number}").json()
    assert body["current"] is True
    assert body["changes"]["changed"] == {"tts-azure-de": [{"field": "status", "old": "key-ready",
                                                            "new": "key-gated"}]}
    first = api.get(f"/v2/registry/versions/{number - 1}").json()
    assert first["changes"] is None and first["current"] is False


def test_unknown_version_is_404(loaded, api):
    assert api.get("/v2/registry/versions/999999").status_code == 404


def test_registry_is_read_only(loaded, api):
    response = api.post("/v2/registry", {}, format="json")
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"
