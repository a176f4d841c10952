"""Leads: public lead posts under load, and no lead lost or doubled by concurrent posters."""
import json
import threading
import urllib.error
import urllib.request
from collections import Counter

from bench.harness import compare, create_tenant_with_key, gunicorn, json_request_script, sized, temp_project

POSTERS = 50
LEADS_PER_POSTER = 10
LEAD = {"tenant": "bench", "kind": "callback", "phone": "0171 2345678", "preferred_at": "tomorrow-am",
        "page_url": "https://bench.example/kontakt"}


def _bench_tenant(project):
    """The tenant `bench` with its API key, its public lead limit raised out of the way
    (the default of 30 posts per address per 10 minutes would answer 429s at once)."""
    key = create_tenant_with_key(project, "bench")
    project.django(
        "from console.tenants.models import Tenant\n"
        "Tenant.objects.filter(slug='bench').update(lead_rate_limit=100_000_000)\n"
    )
    return key


def _lead_count(project):
    return int(project.django(
        "from leads_app.models import Lead\nprint(Lead.objects.count())\n").split()[-1])


def public_lead_posts(load):
    """POST /v2/public/leads: lead posts per second beside a bare view (2 workers, SQLite)."""
    with temp_project() as project:
        _bench_tenant(project)
        script = json_request_script(project, "post_lead", "POST", LEAD)
        with gunicorn(project, workers=2) as base_url:
            created = _post(base_url, LEAD)
            assert created[0] == 201, created
            rows = compare(base_url, [
                ("bare view (ceiling)", "/__bench__/empty", None),
                ("POST /v2/public/leads", "/v2/public/leads", None, script),
            ], load)
        # wrk counts answered requests only; every one of them was a 201 (compare
        # refuses error answers), so at least that many leads must be stored.
        answered = sum(r["requests"] for r in rows[1]["_rounds"])
        stored = _lead_count(project)
        assert stored >= answered, f"{answered} posts answered 201 but only {stored} leads stored"
        rows[1]["endpoint"] += f" ({stored} leads stored)"
        return rows


def leads_no_loss_under_concurrency(load):
    """50 concurrent posters (each post sent twice with its Idempotency-Key): leads stored."""
    posters, per_poster = sized(POSTERS, 2), sized(LEADS_PER_POSTER, 2)
    with temp_project() as project:
        _bench_tenant(project)
        with gunicorn(project, workers=2) as base_url:
            answers = _concurrent_posters(base_url, posters, per_poster)
        stored_phones = Counter(phone for phone in project.django(
            "from leads_app.models import Lead\n"
            "print('\\n'.join(Lead.objects.values_list('phone', flat=True)))\n").split()
        if phone.startswith("+"))  # the shell prints a line of its own first
    sent = posters * per_poster
    replays_matching = sum(1 for answer in answers.values() if answer["replay"] == answer["first"])
    lost = sum(1 for phone in answers if stored_phones[phone] == 0)
    doubled = sum(count - 1 for count in stored_phones.values() if count > 1)
    row = {
        "posters": posters,
        "leads sent": sent,
        "answered 201": sum(1 for answer in answers.values() if answer["first"]),
        "replays with the first id": replays_matching,
        "leads stored": sum(stored_phones.values()),
        "lost": lost,
        "doubled": doubled,
    }
    assert lost == 0 and doubled == 0 and row["leads stored"] == sent == replays_matching, row
    return [row]


def _post(base_url, body, idempotency_key=None):
    headers = {"Content-Type": "application/json"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    request = urllib.request.Request(f"{base_url}/v2/public/leads", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def _concurrent_posters(base_url, posters, per_poster):
    """Every poster sends its leads (distinct phone numbers), each one twice with the
    same key, all posters at once. Returns {phone: {"first": id, "replay": id}}."""
    answers, lock = {}, threading.Lock()
    start = threading.Barrier(posters)

    def poster(number):
        start.wait()
        for n in range(per_poster):
            phone = f"+49171{number:03d}{n:04d}"
            key = f"bench-{number}-{n}"
            first = _post(base_url, dict(LEAD, phone=phone), key)
            replay = _post(base_url, dict(LEAD, phone=phone), key)
            with lock:
                answers[phone] = {
                    "first": first[1].get("id") if first[0] == 201 else None,
                    "replay": replay[1].get("id") if replay[0] == 201 else None,
                }

    threads = [threading.Thread(target=poster, args=(number,)) for number in range(posters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers
