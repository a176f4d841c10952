"""A revoked API key stops working on every server process within the stated bound
(API_KEY_CACHE_SECONDS, console/credentials/verified.py): two gunicorn processes share
one database (of the run's vendor, tests/live_service.py), both have verified the key,
a third process revokes it.

Writes are refused at once. Reads are refused once the bound has passed since the
revocation committed; the test waits for exactly that moment (the wait is what is
tested, not a synchronisation), so a slow machine only makes the check later, never
flaky."""
import time

import pytest
from django.conf import settings

from tests.live_service import LiveService, request

pytestmark = pytest.mark.slow


def call(url, key, method="GET", body=None):
    answer = request(method, url, body, {"Authorization": f"Bearer {key}", "X-Tenant": "acme"}, timeout=10)
    return answer and answer.status


def test_a_revoked_key_is_refused_by_every_process_within_the_bound(tmp_path):
    bound = settings.API_KEY_CACHE_SECONDS
    assert 0 < bound <= 5, "the stated bound is a few seconds"
    live = LiveService(tmp_path)
    live.env["API_KEY_CACHE_SECONDS"] = str(bound)  # the default bound, as deployed
    try:
        live.migrate()
        key = live.manage("shell", "-c", "from console.credentials.services import api_key_create\n"
                          "from console.tenants.services import tenant_create\n"
                          "print(api_key_create(tenant=tenant_create(slug='acme', name='Acme'))[1])\n"
                          ).strip().splitlines()[-1]
        servers = [live.start()[0] for _server in (1, 2)]
        for base in servers:  # each process verifies the key and keeps it
            assert [call(f"{base}/v2/usage", key) for _ in range(2)] == [200, 200]

        live.manage("shell", "-c", "from console.credentials.models import ApiKey\n"
                    "from console.credentials.services import api_key_revoke\n"
                    "for api_key in ApiKey.objects.all():\n"
                    "    api_key_revoke(api_key=api_key)\n")
        revoked_by = time.monotonic()  # the revoking process has committed and exited

        for base in servers:
            assert call(f"{base}/v2/audio/settings", key, "PATCH", {"recordingEnabled": True}) == 401
        # Poll each process until it refuses the key: no request sent after the bound may
        # still be accepted, and the key stays refused after it.
        for base in servers:
            while True:
                sent = time.monotonic()
                if call(f"{base}/v2/usage", key) != 200:
                    break
                assert sent < revoked_by + bound, "a request sent after the bound was still accepted"
        assert [call(f"{base}/v2/usage", key) for base in servers] == [401, 401]
    finally:
        live.stop()
