"""A revoked API key stops working on every server process within the stated bound
(API_KEY_CACHE_SECONDS, console/credentials/verified.py): two gunicorn processes share
one SQLite database, both have verified the key, a third process revokes it.

Writes are refused at once. Reads are refused once the bound has passed since the
revocation committed; the test waits for exactly that moment (the wait is what is
tested, not a synchronisation), so a slow machine only makes the check later, never
flaky."""
import json
import time
import urllib.error
import urllib.request
from contextlib import ExitStack

from django.conf import settings

from tests.servers import ServedProject


def call(url, key, method="GET", body=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}", "X-Tenant": "acme",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_revoked_key_is_refused_by_every_process_within_the_bound(tmp_path):
    bound = settings.API_KEY_CACHE_SECONDS
    assert 0 < bound <= 5, "the stated bound is a few seconds"
    project = ServedProject(tmp_path, API_KEY_CACHE_SECONDS=str(bound))  # the default bound, as deployed
    key = project.python("from console.credentials.services import api_key_create\n"
                         "from console.tenants.services import tenant_create\n"
                         "print(api_key_create(tenant=tenant_create(slug='acme', name='Acme'))[1])\n")
    with ExitStack() as stack:
        servers = [project.serve(stack, f"server{n}")[0] for n in (1, 2)]
        for base in servers:  # each process verifies the key and keeps it
            assert [call(f"{base}/v2/usage", key) for _ in range(2)] == [200, 200]

        project.python("from console.credentials.models import ApiKey\n"
                       "from console.credentials.services import api_key_revoke\n"
                       "for api_key in ApiKey.objects.all():\n"
                       "    api_key_revoke(api_key=api_key)\n"
                       "print('revoked')\n")
        revoked_by = time.monotonic()  # the revoking process has committed and exited

        for base in servers:
            assert call(f"{base}/v2/audio/settings", key, "PATCH", {"recordingEnabled": True}) == 401
        time.sleep(max(0.0, revoked_by + bound - time.monotonic()))
        assert [call(f"{base}/v2/usage", key) for base in servers] == [401, 401]
