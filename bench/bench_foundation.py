"""Foundation: throughput of the open and a tenant-bound endpoint beside a bare view."""
from bench.harness import compare, create_tenant_with_key, get_json, gunicorn, temp_project


def throughput(load):
    """Throughput and latency of /health and /v2/assistants beside a bare Django view."""
    with temp_project() as project:
        key = create_tenant_with_key(project, "bench")
        count = project.django(
            "from django.db import transaction\n"
            "from console.assistants.models import Assistant\n"
            "from console.tenants.models import Tenant\n"
            "tenant = Tenant.objects.get(slug='bench')\n"
            "with transaction.atomic():\n"
            "    for i in range(50):\n"
            "        Assistant.objects.create(tenant=tenant, name=f'Assistant {i:02d}')\n"
            "print(Assistant.objects.for_tenant(tenant).count())\n"
        )
        assert count.split()[-1] == "50", count
        tenant_headers = {"Authorization": f"Bearer {key}", "X-Tenant": "bench"}
        with gunicorn(project, workers=2) as base_url:
            body = get_json(f"{base_url}/v2/assistants", tenant_headers)
            assert len(body["assistants"]) == 50, body
            return compare(base_url, [
                ("bare view (ceiling)", "/__bench__/empty", None),
                ("GET /health", "/health", None),
                ("GET /v2/assistants (50)", "/v2/assistants", tenant_headers),
            ], load)
