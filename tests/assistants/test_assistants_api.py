import pytest

from console.assistants.models import Assistant
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


@pytest.fixture
def assistants(tenant_a, tenant_b):
    return {
        "a": Assistant.objects.create(tenant=tenant_a, name="Empfang", language="de"),
        "b": Assistant.objects.create(tenant=tenant_b, name="Globex Empfang"),
    }


def test_list_shows_only_the_tenants_assistants(api_a, assistants):
    response = api_a.get("/v2/assistants")
    assert response.status_code == 200
    assert [a["id"] for a in response.json()["assistants"]] == [assistants["a"].id]


def test_assistant_has_a_prefixed_unguessable_id(api_a, assistants):
    body = api_a.get(f"/v2/assistants/{assistants['a'].id}").json()
    assert body["id"].startswith("as_") and len(body["id"]) == 29
    assert body["name"] == "Empfang" and body["language"] == "de"
    assert body["createdAt"].endswith("Z")


def test_outsider_gets_404_for_foreign_assistant(api_b, assistants):
    response = api_b.get(f"/v2/assistants/{assistants['a'].id}")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_teammate_sees_the_same_assistants_as_the_owner(owner, teammate, assistants):
    seen = []
    for user in (owner, teammate):
        client = make_client(tenant="acme")
        client.force_login(user)
        seen.append(client.get("/v2/assistants").json())
    assert seen[0] == seen[1] and len(seen[0]["assistants"]) == 1


def test_outsider_session_cannot_list_tenant_a(outsider, assistants):
    client = make_client(tenant="acme")
    client.force_login(outsider)
    assert client.get("/v2/assistants").status_code == 403


def test_assistants_are_changed_with_patch_not_put(api_a, assistants):
    response = api_a.put(f"/v2/assistants/{assistants['a'].id}", {"name": "x"}, format="json")
    assert response.status_code == 405 and "PATCH" in error_of(response)["message"]
    assert api_a.delete("/v2/assistants").status_code == 405


def test_list_query_count_does_not_grow_with_assistants(api_a, tenant_a):
    Assistant.objects.create(tenant=tenant_a, name="one")
    api_a.get("/v2/assistants")  # the first use of a key also records when it was last used
    for more in (0, 30):
        Assistant.objects.bulk_create(Assistant(tenant=tenant_a, name=f"n{i}") for i in range(more))
        with assert_query_count(1 + 1):  # the key with its tenant; the list itself
            assert api_a.get("/v2/assistants").status_code == 200
