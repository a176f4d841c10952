from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import mixins, status
from rest_framework.response import Response

from calendars_app import services
from calendars_app.models import Calendar
from calendars_app.serializers import CalendarCreateSerializer, CalendarSerializer, CalendarUpdateSerializer
from console.api import TenantViewSet, validated
from console.openapi import errors

EXAMPLE = {"name": "Praxis", "kind": "caldav", "url": "https://cloud.praxis.example/remote.php/dav/calendars/"
           "praxis/termine/", "username": "praxis", "password": "app-passwort"}


class CalendarViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """`/v2/calendars`: the tenant's calendars that its assistants book appointments in."""

    model = Calendar
    serializer_class = CalendarSerializer
    lookup_value_regex = "[^/]+"
    not_found_message = "No calendar with this id."

    @extend_schema(responses=inline_serializer("CalendarList", {"calendars": CalendarSerializer(many=True)}))
    def list(self, request: Any) -> Response:
        return Response({"calendars": CalendarSerializer(self.get_queryset(), many=True).data})

    @extend_schema(request=CalendarCreateSerializer, responses={201: CalendarSerializer},
                   summary="Connect a calendar (checked: reachable, authorised, calendar found)",
                   extensions=errors(409),
                   examples=[OpenApiExample("A CalDAV calendar", request_only=True, value=EXAMPLE)])
    def create(self, request: Any) -> Response:
        data = validated(CalendarCreateSerializer, request.data)
        calendar = services.calendar_create(tenant=request.tenant, data=data)
        return Response(CalendarSerializer(calendar).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CalendarUpdateSerializer, responses=CalendarSerializer)
    def partial_update(self, request: Any, pk: str | None = None) -> Response:
        calendar = self.get_object()
        data = validated(CalendarUpdateSerializer, request.data)
        return Response(CalendarSerializer(services.calendar_update(calendar=calendar, data=data)).data)

    @extend_schema(responses={204: None}, extensions=errors(409))
    def destroy(self, request: Any, pk: str | None = None) -> Response:
        services.calendar_delete(calendar=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
