"""The lead rate limit holds across processes: two gunicorn servers on one database
let exactly the limit through, and so does one server with two workers (`make run`)."""
import pytest

from tests.live_service import LiveService, request

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("ratelimit"))
    try:
        live.migrate()
        for slug in ("acme", "globex"):
            live.manage("create_tenant", slug, "--name", slug.capitalize())
        yield live
    finally:
        live.stop()


def leads_of(service, slug):
    out = service.manage("shell", "-v0", "-c",
                         f"from leads_app.models import Lead; print(Lead.objects.filter(tenant__slug='{slug}').count())")
    return int(out.split()[-1])


def test_two_server_processes_share_one_window(service):
    first, _ = service.start()
    second, _ = service.start()
    statuses = []
    for i in range(40):
        base = first if i % 2 == 0 else second
        answer = request("POST", base + "/v2/public/leads",
                         {"tenant": "acme", "kind": "callback", "phone": f"0171 23456{i:02d}"})
        statuses.append(answer.status)
    assert statuses[:30] == [201] * 30 and statuses[30:] == [429] * 10, statuses
    assert leads_of(service, "acme") == 30


def test_one_server_with_two_workers_lets_the_limit_through_exactly(service):
    base, master = service.start(workers=2)
    assert len(service.workers_of(master)) == 2
    # Distinct numbers: the same number again would be folded into its first lead.
    statuses = [request("POST", base + "/v2/public/leads",
                        {"tenant": "globex", "kind": "contact", "phone": f"0171 23456{i:02d}"}).status
                for i in range(35)]
    assert statuses.count(201) == 30 and statuses.count(429) == 5, statuses
    assert leads_of(service, "globex") == 30
