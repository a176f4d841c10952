import pytest

from tests.conftest import error_of
from webhooks_app.models import Endpoint
from webhooks_app.services import event_publish

pytestmark = pytest.mark.django_db
URL = "https://hooks.acme.example/stimmwerk"


def create(api, **body):
    return api.post("/v2/webhooks", {"url": URL, "event_types": ["lead.created"], **body}, format="json")


def test_create_shows_the_secret_once_and_list_and_detail_never(api_a):
    created = create(api_a, description="CRM")
    assert created.status_code == 201
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["url"] == URL and body["event_types"] == ["lead.created"]
    listed = api_a.get("/v2/webhooks").json()["webhooks"]
    assert [w["id"] for w in listed] == [body["id"]] and "secret" not in listed[0]
    assert "secret" not in api_a.get(f"/v2/webhooks/{body['id']}").json()
    assert body["secret"] not in str(Endpoint.objects.values().get())  # derived, never stored


def test_patch_changes_events_and_switches_off_and_delete_removes(api_a):
    endpoint_id = create(api_a).json()["id"]
    patched = api_a.patch(f"/v2/webhooks/{endpoint_id}", {"event_types": ["call.ended", "call.ended"],
                                                          "active": False}, format="json")
    assert patched.status_code == 200 and (patched.json()["event_types"], patched.json()["active"]) == (
        ["call.ended"], False)
    assert api_a.delete(f"/v2/webhooks/{endpoint_id}").status_code == 204
    assert api_a.get(f"/v2/webhooks/{endpoint_id}").status_code == 404


def test_rotation_answers_a_new_secret_and_keeps_the_old_one_unless_told(api_a):
    created = create(api_a).json()
    rotated = api_a.post(f"/v2/webhooks/{created['id']}/rotate-secret")
    assert rotated.status_code == 200 and rotated.json()["secret"] not in ("", created["secret"])
    assert Endpoint.objects.get().previous_secret_expires_at is not None
    leaked = api_a.post(f"/v2/webhooks/{created['id']}/rotate-secret", {"keep_previous": False}, format="json")
    assert leaked.status_code == 200
    assert (Endpoint.objects.get().previous_secret_nonce, Endpoint.objects.get().previous_secret_expires_at) == (
        "", None)
    bad = api_a.post(f"/v2/webhooks/{created['id']}/rotate-secret", {"keep": 1}, format="json")
    assert bad.status_code == 400 and "keep" in error_of(bad)["details"]


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "http://hooks.acme.example/x"}, "url"),
    ({"url": "ftp://hooks.acme.example/x"}, "url"),
    ({"url": "https://user:pw@hooks.acme.example/x"}, "url"),
    ({"event_types": ["lead.deleted"]}, "event_types"),
    ({"event_types": []}, "event_types"),
    ({"secret": "mine"}, "secret"),
])
def test_bad_endpoints_are_400_naming_the_field(api_a, body, field):
    response = create(api_a, **body)
    assert response.status_code == 400 and field in error_of(response)["details"]
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/hook", "https://127.0.0.1/hook", "https://10.0.0.5/hook",
                                 "https://[::1]/hook", "https://169.254.169.254/latest", "http://localhost/hook"])
def test_production_settings_refuse_loopback_and_private_urls(api_a, settings, url):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    response = create(api_a, url=url)
    assert response.status_code == 400 and error_of(response)["code"] == "webhook_url_refused"


def test_development_allows_plain_http_on_loopback_only(api_a):
    assert create(api_a, url="http://127.0.0.1:8000/hook").status_code == 201
    response = create(api_a, url="http://192.168.1.5/hook")
    assert response.status_code == 400 and error_of(response)["code"] == "webhook_url_refused"


def test_deliveries_list_refuses_a_bad_state_and_limit(api_a):
    endpoint_id = create(api_a).json()["id"]
    assert api_a.get(f"/v2/webhooks/{endpoint_id}/deliveries").json() == {"deliveries": [], "next": None}
    for query in ("state=lost", "limit=0", "limit=x", "stat=dead"):
        response = api_a.get(f"/v2/webhooks/{endpoint_id}/deliveries?{query}")
        assert response.status_code == 400, query


def test_deliveries_come_in_cursor_pages_newest_first_bound_to_their_endpoint(api_a, tenant_a):
    endpoint_id, other_id = create(api_a).json()["id"], create(api_a, url=URL + "/other").json()["id"]
    for n in range(5):
        event_publish(tenant=tenant_a, event_type="lead.created", data={"n": n}, key=f"lead.created:{n}")
    pages, cursor = [], None
    while True:
        body = api_a.get(f"/v2/webhooks/{endpoint_id}/deliveries?limit=2" + (f"&cursor={cursor}" if cursor else "")).json()
        pages.append([delivery["id"] for delivery in body["deliveries"]])
        cursor = body["next"]
        if cursor is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    everything = api_a.get(f"/v2/webhooks/{endpoint_id}/deliveries").json()["deliveries"]
    assert sum(pages, []) == [delivery["id"] for delivery in everything]
    first_cursor = api_a.get(f"/v2/webhooks/{endpoint_id}/deliveries?limit=2").json()["next"]
    response = api_a.get(f"/v2/webhooks/{other_id}/deliveries?cursor={first_cursor}")
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_cursor"


@pytest.mark.parametrize("method, path, body", [
    ("post", "/v2/webhooks", {"url": URL, "event_types": ["lead.created"], "secret": "mine"}),
    ("patch", "/v2/webhooks/{id}", {"active": False, "enabled": True}),
    ("post", "/v2/webhooks/{id}/rotate-secret", {"keep_old": False}),
])
def test_unknown_body_fields_are_refused_by_name(api_a, method, path, body):
    endpoint_id = create(api_a).json()["id"]
    response = getattr(api_a, method)(path.format(id=endpoint_id), body, format="json")
    unknown = (set(body) - {"url", "event_types", "active"}).pop()
    assert response.status_code == 400 and unknown in error_of(response)["details"]
    assert Endpoint.objects.count() == 1 and Endpoint.objects.get().active


@pytest.mark.parametrize("url", [
    "https://hooks.acme.example:99999/h", "https://hooks.acme.example:65536/h", "https://hooks.acme.example:0/h",
    "https://hooks.acme.example:00000/h", "https://[2a00:1450::1]:70000/h",
])
def test_a_port_out_of_1_to_65535_is_a_validation_error_naming_the_url(api_a, url):
    response = create(api_a, url=url)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error" and "65535" in error["details"]["url"][0]
    endpoint_id = create(api_a).json()["id"]
    patched = api_a.patch(f"/v2/webhooks/{endpoint_id}", {"url": url}, format="json")
    assert patched.status_code == 400 and "url" in error_of(patched)["details"]
    assert list(Endpoint.objects.values_list("url", flat=True)) == [URL]


@pytest.mark.parametrize("url", ["https://hooks.acme.example:1/h", "https://hooks.acme.example:65535/h",
                                 "https://[2a00:1450::1]:8443/h"])
def test_ports_from_1_to_65535_are_accepted(api_a, url):
    assert create(api_a, url=url).status_code == 201


@pytest.mark.parametrize("host", [
    "[64:ff9b::a9fe:a9fe]",  # NAT64: 169.254.169.254 behind DNS64
    "[64:ff9b::a00:1]",  # NAT64: 10.0.0.1
    "[64:ff9b:1::808:808]",  # NAT64 local-use prefix, refused whatever it embeds
    "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
    "[2002:c0a8:101::1]",  # 6to4 of 192.168.1.1
    "[::7f00:1]",  # IPv4-compatible (deprecated), 127.0.0.1
    "[::808:808]",  # IPv4-compatible, refused even for a public address
    "[::ffff:a9fe:a9fe]",  # IPv4-mapped 169.254.169.254
    "[2001:0:808:808::80ff:fffe]",  # Teredo, client 127.0.0.1
    "[fec0::1]",  # site-local (deprecated)
    "[fd00::1]", "[fe80::1]", "[ff02::1]", "[2001:db8::1]", "[100::1]",
    "100.64.0.1", "192.0.0.1", "198.18.0.1", "224.0.0.1", "240.0.0.1",
])
def test_production_settings_refuse_translated_and_special_address_literals(api_a, settings, host):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    response = create(api_a, url=f"https://{host}/h")
    assert response.status_code == 400 and error_of(response)["code"] == "webhook_url_refused"
    assert "url" in error_of(response)["details"] and not Endpoint.objects.exists()


@pytest.mark.parametrize("host", ["[64:ff9b::808:808]", "[2002:808:808::1]", "[::ffff:808:808]",
                                  "[2a00:1450:4001:80b::200e]", "8.8.8.8"])
def test_production_settings_accept_public_address_literals_also_when_translated(api_a, settings, host):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    assert create(api_a, url=f"https://{host}/h").status_code == 201


def test_endpoints_per_tenant_are_capped_with_a_409_that_says_how_to_make_room(api_a, api_b, settings):
    settings.WEBHOOK_MAX_ENDPOINTS = 3
    made = [create(api_a, url=f"{URL}/{n}") for n in range(3)]
    assert [response.status_code for response in made] == [201, 201, 201]
    refused = create(api_a, url=f"{URL}/3")
    assert refused.status_code == 409
    error = error_of(refused)
    assert error["code"] == "webhook_limit_reached" and error["details"] == {"maxEndpoints": 3}
    assert "DELETE /v2/webhooks/{id}" in error["message"]
    assert Endpoint.objects.count() == 3
    switched_off = api_a.patch(f"/v2/webhooks/{made[0].json()['id']}", {"active": False}, format="json")
    assert switched_off.status_code == 200 and create(api_a, url=f"{URL}/3").status_code == 409  # counted too
    assert create(api_b).status_code == 201  # another tenant has a cap of its own
    assert api_a.delete(f"/v2/webhooks/{made[0].json()['id']}").status_code == 204
    assert create(api_a, url=f"{URL}/3").status_code == 201


def test_the_default_cap_is_20_endpoints(api_a):
    assert [create(api_a, url=f"{URL}/{n}").status_code for n in range(21)] == [201] * 20 + [409]
