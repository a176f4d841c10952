"""validated_query (console/api.py): a valid query string of a list endpoint is validated
once per process, with the serializer's result; an invalid one answers its 400 every time."""
import pytest
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from console import api
from console.api import validated, validated_query
from console.fields import LimitField
from leads_app.serializers import LeadListQuerySerializer


class Counting(serializers.Serializer):
    status = serializers.ChoiceField(choices=["new", "lost"], required=False)
    limit = LimitField()
    built = 0

    def __init__(self, *args, **kwargs):
        type(self).built += 1
        super().__init__(*args, **kwargs)


def request(query=""):
    return Request(APIRequestFactory().get(f"/v2/leads{query}"))


@pytest.mark.parametrize("query", ["", "?limit=7", "?status=spam&kind=voicemail&limit=500", "?limit=007"])
def test_the_result_is_the_serializers(query):
    assert validated_query(LeadListQuerySerializer, request(query)) == \
        dict(validated(LeadListQuerySerializer, request(query).query_params.dict()))


def test_a_valid_query_is_validated_once_and_each_caller_gets_its_own_dict(monkeypatch):
    monkeypatch.setattr(api, "_valid_queries", {})
    Counting.built = 0
    first = validated_query(Counting, request("?status=new&limit=5"))
    first["limit"] = 99
    assert validated_query(Counting, request("?limit=5&status=new")) == {"status": "new", "limit": 5}
    assert Counting.built == 1


@pytest.mark.parametrize("query", ["?limit=0", "?status=maybe"])
def test_an_invalid_query_is_refused_every_time(monkeypatch, query):
    monkeypatch.setattr(api, "_valid_queries", {})
    Counting.built = 0
    for _ in range(2):
        with pytest.raises(serializers.ValidationError):
            validated_query(Counting, request(query))
    assert Counting.built == 2 and api._valid_queries == {}


def test_an_unknown_parameter_is_refused_naming_it(monkeypatch):
    monkeypatch.setattr(api, "_valid_queries", {})
    with pytest.raises(api.ValidationFailed) as refused:
        validated_query(LeadListQuerySerializer, request("?x=1&status=new"))
    assert refused.value.details == {"x": ["Unknown query parameter. Accepted: limit, cursor, status, kind, phone, "
                                           "since, until."]}
    assert api._valid_queries == {}
