"""The console's view of leads: GET /v2/leads, GET/PATCH /v2/leads/{id} (CONTRACT §6)."""
import pytest

from leads_app.models import Lead
from leads_app.services import lead_create
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


def make_lead(tenant, *, kind="callback", phone="+491712345678", status="new"):
    lead = lead_create(tenant=tenant, kind=kind, phone=phone)
    if status != "new":
        Lead.objects.filter(pk=lead.pk).update(status=status)
        lead.refresh_from_db()
    return lead


def ids(response):
    return [lead["id"] for lead in response.json()["leads"]]


def test_stored_lead_has_the_contract_shape(api_a, tenant_a):
    lead = make_lead(tenant_a)

    body = api_a.get(f"/v2/leads/{lead.id}").json()

    assert body == {
        "id": lead.id, "tenant": "acme", "kind": "callback", "phone": "+491712345678", "preferred_at": None,
        "preferred_at_resolved": None, "page_url": None, "status": "new", "created_at": body["created_at"],
        "consent_version": None,
    }
    assert body["created_at"].endswith(("Z", "+00:00"))


def test_list_is_newest_first(api_a, tenant_a):
    first, second, third = (make_lead(tenant_a) for _ in range(3))

    response = api_a.get("/v2/leads")

    assert response.status_code == 200
    assert ids(response) == [third.id, second.id, first.id]


def test_list_filters_by_status_and_kind(api_a, tenant_a):
    new_callback = make_lead(tenant_a)
    contacted_callback = make_lead(tenant_a, status="contacted")
    contacted_voicemail = make_lead(tenant_a, kind="voicemail", status="contacted")

    assert ids(api_a.get("/v2/leads?status=new")) == [new_callback.id]
    assert ids(api_a.get("/v2/leads?status=contacted")) == [contacted_voicemail.id, contacted_callback.id]
    assert ids(api_a.get("/v2/leads?kind=voicemail")) == [contacted_voicemail.id]
    assert ids(api_a.get("/v2/leads?status=contacted&kind=callback")) == [contacted_callback.id]


@pytest.mark.parametrize("query", ["status=bogus", "kind=pizza"])
def test_unknown_filter_value_is_400(api_a, tenant_a, query):
    response = api_a.get(f"/v2/leads?{query}")

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == [query.split("=")[0]]


def test_limit_cuts_the_list(api_a, tenant_a):
    leads = [make_lead(tenant_a) for _ in range(3)]

    assert ids(api_a.get("/v2/leads?limit=2")) == [leads[2].id, leads[1].id]


def test_limit_defaults_to_50_and_is_clamped_to_200(api_a, tenant_a):
    Lead.objects.bulk_create([Lead(tenant=tenant_a, kind="callback", phone="+491712345678") for _ in range(201)])

    assert len(ids(api_a.get("/v2/leads"))) == 50
    assert len(ids(api_a.get("/v2/leads?limit=500"))) == 200


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1.5", "", "²"])
def test_limit_that_is_not_a_positive_integer_is_400(api_a, tenant_a, limit):
    response = api_a.get(f"/v2/leads?limit={limit}")

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["limit"]


def test_list_takes_a_fixed_number_of_queries(api_a, tenant_a):
    for _ in range(5):
        make_lead(tenant_a)
    api_a.get("/v2/leads")  # warm up anything loaded once per process

    with assert_query_count(1 + 1):  # the API key with its tenant; the leads joined with their tenant
        response = api_a.get("/v2/leads")

    assert len(response.json()["leads"]) == 5


def test_patch_changes_the_status_and_returns_the_lead(api_a, tenant_a):
    lead = make_lead(tenant_a)

    response = api_a.patch(f"/v2/leads/{lead.id}", {"status": "contacted"}, format="json")

    assert response.status_code == 200
    assert response.json()["status"] == "contacted" and response.json()["id"] == lead.id
    lead.refresh_from_db()
    assert lead.status == "contacted"


@pytest.mark.parametrize("status", ["new", "contacted", "qualified", "converted", "lost", "spam"])
def test_every_contract_status_can_be_set(api_a, tenant_a, status):
    lead = make_lead(tenant_a, status="qualified")

    assert api_a.patch(f"/v2/leads/{lead.id}", {"status": status}, format="json").json()["status"] == status


@pytest.mark.parametrize("body", [{"status": "bogus"}, {}, {"status": None}, {"status": "contacted", "phone": "+4930"}])
def test_patch_with_unknown_status_or_other_fields_is_400_and_changes_nothing(api_a, tenant_a, body):
    lead = make_lead(tenant_a)

    response = api_a.patch(f"/v2/leads/{lead.id}", body, format="json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "validation_error"
    lead.refresh_from_db()
    assert (lead.status, lead.phone) == ("new", "+491712345678")


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_leads_cannot_be_created_replaced_or_deleted_through_the_console_api(api_a, tenant_a, method):
    lead = make_lead(tenant_a)
    path = "/v2/leads" if method == "post" else f"/v2/leads/{lead.id}"

    response = getattr(api_a, method)(path, {"status": "new"}, format="json")

    assert response.status_code == 405
    assert Lead.objects.filter(pk=lead.pk).exists()


def test_outsider_gets_404_for_foreign_lead(api_b, tenant_a):
    lead = make_lead(tenant_a)

    response = api_b.get(f"/v2/leads/{lead.id}")

    assert response.status_code == 404
    assert error_of(response) == error_of(api_b.get("/v2/leads/ld_00000000000000000000000000"))


def test_outsider_cannot_change_a_foreign_lead(api_b, tenant_a):
    lead = make_lead(tenant_a)

    response = api_b.patch(f"/v2/leads/{lead.id}", {"status": "spam"}, format="json")

    assert response.status_code == 404
    lead.refresh_from_db()
    assert lead.status == "new"


def test_list_shows_only_the_selected_tenants_leads(api_a, api_b, tenant_a, tenant_b):
    own = make_lead(tenant_a)
    make_lead(tenant_b)

    assert ids(api_a.get("/v2/leads")) == [own.id]


def test_key_of_another_tenant_cannot_select_this_tenant(key_b, tenant_a):
    make_lead(tenant_a)

    response = make_client(key_b, "acme").get("/v2/leads")

    assert response.status_code == 403
    assert error_of(response)["code"] == "tenant_forbidden"


def test_leads_need_credentials(tenant_a):
    response = make_client(tenant="acme").get("/v2/leads")

    assert response.status_code == 401


def test_member_session_sees_the_leads(owner, tenant_a):
    make_lead(tenant_a)
    client = make_client(tenant="acme")
    client.force_login(owner)

    assert len(client.get("/v2/leads").json()["leads"]) == 1
