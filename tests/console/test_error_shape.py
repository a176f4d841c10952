"""Every error on the API paths has the JSON shape of CONTRACT §2 — with DEBUG on too."""
import logging

import pytest
from django import db
from django.test import Client, override_settings

from tests.conftest import error_of, make_client

pytestmark = pytest.mark.django_db


def test_validation_error_is_400_with_field_details(api_a):
    response = api_a.post("/v2/numbers", {"e164": "not a number"}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert list(error["details"]) == ["e164"]
    assert isinstance(error["details"]["e164"], list) and error["details"]["e164"][0]


@pytest.mark.parametrize("body", [b"{not json", b"", b"[1, 2", b"\xff\xfe"])
def test_malformed_json_is_400(api_a, body):
    response = api_a.generic("POST", "/v2/numbers", body, content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] in ("malformed_json", "validation_error")


def test_json_that_is_not_an_object_is_400(api_a):
    response = api_a.generic("POST", "/v2/numbers", b"[]", content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "validation_error"


def test_body_over_the_upload_limit_is_413(api_a, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_a.post("/v2/numbers", {"e164": "+493012345678", "label": "x" * 2000}, format="json")
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


def test_wrong_content_type_is_415(api_a):
    response = api_a.generic("POST", "/v2/numbers", b"e164=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


def test_401_has_the_shape(tenant_a):
    assert error_of(make_client(tenant="acme").get("/v2/numbers"))["code"] == "unauthenticated"


def test_403_has_the_shape(key_a, tenant_b):
    assert error_of(make_client(key_a, "globex").get("/v2/numbers"))["code"] == "tenant_forbidden"


@pytest.mark.parametrize("path", ["/v2/does-not-exist", "/v2/numbers/x/y", "/voice/nothing", "/api/voice/nothing",
                                  "/health/extra"])
@pytest.mark.parametrize("debug", [False, True])
def test_unknown_path_is_json_404_also_with_debug(api_a, path, debug):
    with override_settings(DEBUG=debug):
        response = api_a.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert error_of(response)["code"] == "not_found"


def test_unknown_id_is_404(api_a):
    response = api_a.get("/v2/numbers/pn_doesnotexist")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


@pytest.mark.parametrize("method", ["delete", "post", "put", "patch"])
def test_wrong_method_on_health_is_405(db, method):
    response = getattr(Client(), method)("/health")
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


def test_put_on_a_number_is_405(api_a):
    response = api_a.put("/v2/numbers/pn_x", {"label": "x"}, format="json")
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


@override_settings(ROOT_URLCONF="tests.console.urls_failing")
@pytest.mark.parametrize("path", ["/v2/__failing__/drf", "/voice/__failing__/plain"])
@pytest.mark.parametrize("debug", [False, True])
def test_unhandled_exception_is_logged_and_answered_500(db, caplog, path, debug):
    client = Client(raise_request_exception=False)
    with override_settings(DEBUG=debug), caplog.at_level(logging.ERROR):
        response = client.get(path)
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "internal_error"
    assert "boom" not in response.content.decode(), "no internals leak to the client"
    assert any("boom" in str(record.exc_info) for record in caplog.records if record.exc_info), "the error is logged"


def test_non_api_paths_keep_django_pages(db):
    # The admin is HTML: its 404 is not rewritten.
    response = Client().get("/admin/does-not-exist/")
    assert not response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("error", [db.OperationalError("database is locked"),
                                   db.InterfaceError("connection already closed")])
def test_an_unavailable_database_is_503_with_retry_after_on_drf_and_plain_views(api_a, monkeypatch, error):
    from calls_app import event_sql, selectors

    def unavailable(*args, **kwargs):
        raise error

    monkeypatch.setattr(selectors, "usage_for", unavailable)
    monkeypatch.setattr(event_sql, "carrier_nonce", unavailable)
    for response in (api_a.get("/v2/usage"),
                     api_a.post("/voice/webhook/any", b"{}", content_type="application/json")):
        assert response.status_code == 503 and error_of(response)["code"] == "database_unavailable"
        assert response["Retry-After"] == "1"
