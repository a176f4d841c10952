"""A list declaration (console/listing.py) derives what it can from its serializer and
refuses, when it is declared, every field whose value is not its column's alone; its
reads are statements like any other for whatever watches the database."""
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext
from rest_framework import serializers

from console.listing import PAGE_ORDER, Listing, UnderivableField
from leads_app.models import Lead
from leads_app.serializers import LEADS, LeadListQuerySerializer, LeadSerializer
from leads_app.services import lead_create


class Lead_(serializers.ModelSerializer):
    class Meta:
        model = Lead
        fields = ["id", "phone"]


def declared(**fields):
    """A Listing of leads whose serializer has `fields` beside id and phone."""
    serializer = type("Declared", (Lead_,), {**fields, "Meta": type("Meta", (Lead_.Meta,), {
        "fields": ["id", "phone", *fields]})})
    return Listing("leads", serializer, ordering=PAGE_ORDER)


@pytest.mark.parametrize("fields, refusal", [
    ({"score": serializers.SerializerMethodField()}, "reads the whole object"),
    ({"notes_": serializers.CharField(source="notes.upper")}, "is no column"),
    ({"shown": serializers.CharField(source="get_status_display")}, "no column"),
    ({"tenant_name": serializers.CharField(source="tenant.name")}, None),  # the tenant's: derived
    ({"created": serializers.DateTimeField(source="created_at", format="%d.%m.%Y")}, "ISO 8601"),
    ({"when": serializers.DateTimeField(source="preferred_at")}, "timestamp column"),
    ({"tenant": serializers.PrimaryKeyRelatedField(read_only=True)}, "is no column"),
    ({"phone_": serializers.ModelField(Lead._meta.get_field("phone"), source="phone")}, "not of its value alone"),
    ({"file": serializers.FileField(source="page_url")}, "not of its value alone"),
    ({"files": serializers.ListField(source="notes", child=serializers.FileField())}, "not of its value alone"),
])
def test_a_field_that_is_not_its_columns_alone_is_refused_when_declared(fields, refusal):
    if refusal is None:
        declared(**fields)
        return
    with pytest.raises(UnderivableField, match=refusal):
        declared(**fields)


def test_a_serializer_with_its_own_representation_is_refused():
    class Own(LeadSerializer):
        def to_representation(self, instance):
            return super().to_representation(instance)

    with pytest.raises(UnderivableField, match="to_representation of its own"):
        Listing("leads", Own, ordering=PAGE_ORDER)


def test_the_declaration_names_every_query_parameter_and_a_paged_lists_order():
    with pytest.raises(ImproperlyConfigured, match="filters"):
        Listing("leads", LeadSerializer, query=LeadListQuerySerializer, ordering=PAGE_ORDER,
                filters={"status": "status"})
    with pytest.raises(ImproperlyConfigured, match="cursor's keyset"):
        Listing("leads", LeadSerializer, query=LeadListQuerySerializer, ordering=("id",))


def test_a_fast_list_read_is_a_statement_like_any_other(tenant_a, monkeypatch):
    """Seen by tracing tools that wrap CursorWrapper.execute (with nothing else watching),
    by Django's query log (CaptureQueriesContext, `connection.queries` in DEBUG) and by
    execute wrappers."""
    lead_create(tenant=tenant_a, kind="callback", phone="+491701234567")
    traced, wrapped = [], []
    execute = CursorWrapper.execute
    monkeypatch.setattr(CursorWrapper, "execute", lambda self, sql, params=None: traced.append(sql) or execute(
        self, sql, params))

    def wrapper(execute, sql, params, many, context):
        wrapped.append(sql)
        return execute(sql, params, many, context)

    assert len(LEADS.page(tenant_a, {"limit": 50})["leads"]) == 1
    assert len(traced) == 1 and 'FROM "leads_app_lead"' in traced[0]
    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(wrapper):
        LEADS.page(tenant_a, {"limit": 50})
    assert wrapped == traced[1:] == [traced[0]] and len(captured.captured_queries) == 1
    assert 'FROM "leads_app_lead"' in captured.captured_queries[0]["sql"]
