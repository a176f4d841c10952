"""Every admin page an operator can open renders, on the demo data: the changelist,
the add page where adding is allowed, and the change page of one object."""
import pytest
from django.contrib import admin
from django.core.management import call_command
from django.test import Client

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
