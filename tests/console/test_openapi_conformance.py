"""schemathesis against the live app (in-process WSGI) from /v2/schema: every
operation, with tenant A's credential, a fixed seed and a few examples each.
Checks: no 5xx, every status code documented, bodies and content types as documented."""
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console.wsgi import application

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


schema = schemathesis.openapi.from_wsgi("/v2/schema", application)


@pytest.fixture
def connection_kept(db):
    # As Django's test client does: the test's transaction holds the connection, so a
    # request must not close it when it ends.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
@schema.parametrize()
@seed(20261123)
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_the_app_answers_as_its_document_says(case, connection_kept, tenant_a, key_a, render_cache_dir):
    case.call_and_validate(headers={"Authorization": f"Bearer {key_a}", "X-Tenant": tenant_a.slug}, checks=CHECKS)
