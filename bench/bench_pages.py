"""Cursor pages of GET /v2/calls (issue 12): the first page against a page 90,000
calls deep, in a tenant of 100,000 calls; the deep page should cost what the first
does (keyset pagination, console/pagination.py). 2 gunicorn workers, SQLite."""
from bench.bench_calls import _SEED, _setup
from bench.harness import compare, gunicorn, sized, temp_project

TOTAL, DEPTH = 100_000, 90_000

# The cursor a client holds after reading DEPTH calls: the position of the last one read.
_CURSOR = """
from calls_app.models import Call
from console.pagination import cursor_encode
from console.tenants.models import Tenant
tenant = Tenant.objects.get(slug="bench")
last = Call.objects.for_tenant(tenant).newest_first().values("created_at", "id")[{depth} - 1]
print(cursor_encode(tenant=tenant, scope="calls", created_at=last["created_at"], pk=last["id"]))
"""


def deep_page(load):
    """GET /v2/calls?limit=200: the first page and a page 90,000 calls deep (of 100,000)."""
    total, depth = sized(TOTAL, 1_000), sized(DEPTH, 900)
    with temp_project() as project:
        headers, _secret = _setup(project)
        project.django(_SEED.format(total=total))
        cursor = project.django(_CURSOR.format(depth=depth)).strip().splitlines()[-1]
        with gunicorn(project) as base_url:
            rows = compare(base_url, [
                ("GET /v2/calls?limit=200 (first page)", "/v2/calls?limit=200", headers),
                (f"GET /v2/calls?limit=200&cursor=… ({depth:,} deep)", f"/v2/calls?limit=200&cursor={cursor}",
                 headers),
            ], load)
    for row in rows:
        row["share of first page"] = row.pop("share of ceiling")
    return [{"calls": f"{total:,}", **{k: v for k, v in row.items() if not k.startswith("_")}} for row in rows]
