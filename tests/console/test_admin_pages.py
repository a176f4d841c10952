"""Every admin page an operator can open renders, on the demo data: the changelist,
the add page where adding is allowed, and the change page of one object."""
import io
import json
import logging

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.test import Client

from console.request_log import ClientFaultAsWarning

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db, django_user_model):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    user = django_user_model.objects.get(username="operator")
    client = Client()
    client.force_login(user)
    return client


MODEL_ADMINS = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


@pytest.mark.parametrize("model, model_admin", MODEL_ADMINS, ids=[m._meta.label for m, _ in MODEL_ADMINS])
def test_admin_pages_render(operator, model, model_admin):
    meta = model._meta
    base = f"/admin/{meta.app_label}/{meta.model_name}/"
    assert operator.get(base).status_code == 200
    assert operator.get(base + "?q=a").status_code == 200
    obj = model._default_manager.first()
    if obj is not None:
        assert operator.get(f"{base}{obj.pk}/change/").status_code == 200
    add = operator.get(base + "add/")
    assert add.status_code in (200, 403)


def test_a_filter_the_admin_refuses_is_a_400_and_one_warning_line_without_a_traceback(owner):
    client = Client()
    client.force_login(owner)
    handler, = [handler for handler in logging.getLogger("django.security").handlers
                if any(isinstance(found, ClientFaultAsWarning) for found in handler.filters)]
    written = io.StringIO()
    previous = handler.setStream(written)
    try:
        response = client.get("/admin/leads_app/lead/?tenant__memberships__user__password__startswith=p")
    finally:
        handler.setStream(previous)
    assert response.status_code == 400
    line, = [json.loads(text) for text in written.getvalue().splitlines()]
    assert (line["level"], line["logger"]) == ("WARNING", "django.security.DisallowedModelAdminLookup")
    assert "not allowed" in line["message"] and "exc" not in line
