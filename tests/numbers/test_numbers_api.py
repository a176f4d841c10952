import pytest

from console.assistants.models import Assistant
from console.numbers.models import PhoneNumber
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def assistant_a(tenant_a):
    return Assistant.objects.create(tenant=tenant_a, name="Empfang")


@pytest.fixture
def assistant_b(tenant_b):
    return Assistant.objects.create(tenant=tenant_b, name="Globex")


def create(client, **body):
    return client.post("/v2/numbers", body, format="json")


@pytest.mark.parametrize("raw, e164", [
    ("+493012345678", "+493012345678"),
    ("+49 30 1234 5678", "+493012345678"),
    ("030 12345678", "+493012345678"),
    ("0049 171 2345678", "+491712345678"),
    ("+44 20 7946 0958", "+442079460958"),
])
def test_number_is_stored_in_e164(api_a, raw, e164):
    response = create(api_a, e164=raw, label="Zentrale")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body == {"id": body["id"], "e164": e164, "label": "Zentrale", "assistant": None, "assistantVersion": None}
    assert body["id"].startswith("pn_")
    assert PhoneNumber.objects.get(pk=body["id"]).e164 == e164


@pytest.mark.parametrize("raw", ["", "abc", "030", "+49 30 12ab", "+999 1234567", 4930123456, None])
def test_invalid_number_is_400_and_nothing_is_stored(api_a, raw):
    response = create(api_a, e164=raw)
    assert response.status_code == 400
    assert "e164" in error_of(response)["details"]
    assert not PhoneNumber.objects.exists()


def test_missing_e164_is_400(api_a):
    response = create(api_a, label="x")
    assert response.status_code == 400
    assert "e164" in error_of(response)["details"]


def test_number_taken_by_another_tenant_is_409(api_a, api_b):
    assert create(api_a, e164="+493012345678").status_code == 201
    response = create(api_b, e164="030 1234 5678")
    assert response.status_code == 409
    assert error_of(response)["code"] == "number_taken"
    assert PhoneNumber.objects.count() == 1


def test_number_taken_in_the_same_tenant_is_409(api_a):
    assert create(api_a, e164="+493012345678").status_code == 201
    assert create(api_a, e164="+493012345678").status_code == 409


def test_create_with_assistant_of_own_tenant(api_a, assistant_a):
    response = create(api_a, e164="+493012345678", assistant=assistant_a.id)
    assert response.status_code == 201
    assert response.json()["assistant"] == assistant_a.id


def test_assistant_of_another_tenant_is_rejected(api_a, assistant_b):
    response = create(api_a, e164="+493012345678", assistant=assistant_b.id)
    assert response.status_code == 400
    assert "assistant" in error_of(response)["details"]
    assert not PhoneNumber.objects.exists()


def test_patch_assigns_and_clears_the_assistant(api_a, assistant_a):
    number = create(api_a, e164="+493012345678").json()
    response = api_a.patch(f"/v2/numbers/{number['id']}", {"assistant": assistant_a.id}, format="json")
    assert response.status_code == 200
    assert response.json()["assistant"] == assistant_a.id
    response = api_a.patch(f"/v2/numbers/{number['id']}", {"assistant": None, "label": "Nacht"}, format="json")
    assert response.json() == {**number, "assistant": None, "label": "Nacht"}
    assert api_a.get(f"/v2/numbers/{number['id']}").json() == response.json()


def test_patch_with_foreign_assistant_changes_nothing(api_a, assistant_a, assistant_b):
    number = create(api_a, e164="+493012345678", assistant=assistant_a.id).json()
    response = api_a.patch(f"/v2/numbers/{number['id']}", {"assistant": assistant_b.id, "label": "x"}, format="json")
    assert response.status_code == 400
    assert PhoneNumber.objects.get(pk=number["id"]).assistant_id == assistant_a.id
    assert PhoneNumber.objects.get(pk=number["id"]).label == ""


def test_patch_cannot_change_the_number(api_a):
    number = create(api_a, e164="+493012345678").json()
    response = api_a.patch(f"/v2/numbers/{number['id']}", {"e164": "+493099999999"}, format="json")
    assert response.status_code == 400
    assert "e164" in error_of(response)["details"]


def test_empty_patch_is_400(api_a):
    number = create(api_a, e164="+493012345678").json()
    assert api_a.patch(f"/v2/numbers/{number['id']}", {}, format="json").status_code == 400


def test_delete_removes_the_number_and_frees_it(api_a, api_b):
    number = create(api_a, e164="+493012345678").json()
    assert api_a.delete(f"/v2/numbers/{number['id']}").status_code == 204
    assert api_a.get(f"/v2/numbers/{number['id']}").status_code == 404
    assert create(api_b, e164="+493012345678").status_code == 201


def test_outsider_gets_404_for_foreign_number(api_a, api_b):
    number = create(api_a, e164="+493012345678").json()
    for method in ("get", "patch", "delete"):
        # A GET sends no body (the test client would make it a query string, refused as unknown).
        body = {"label": "mine"} if method != "get" else None
        response = getattr(api_b, method)(f"/v2/numbers/{number['id']}", body, format="json")
        assert response.status_code == 404, method
    assert PhoneNumber.objects.get(pk=number["id"]).label == ""


def test_list_never_leaks_other_tenants_numbers(api_a, api_b):
    mine = create(api_a, e164="+493012345678").json()
    theirs = create(api_b, e164="+494012345678").json()
    assert api_a.get("/v2/numbers").json() == {"numbers": [mine]}
    assert api_b.get("/v2/numbers").json() == {"numbers": [theirs]}
