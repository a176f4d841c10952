"""Scripts: the linter in process (one core) on a 200-word and a 2,000-word German
script, and PUT /v2/audio/scripts/{touchpoint} under load (2 workers, SQLite)."""
import json
import time

from bench.harness import compare, create_tenant_with_key, get_json, gunicorn, smoke, temp_project
from scripts_app.analysis import analyze, default_lexicon
from scripts_app.analysis.rules import umlaut_positions
from scripts_app.analysis.text import count_words

MEASURE_SECONDS = 3.0
# Real-looking text with something for every rule: substitutions (also in compounds),
# vendor perspective, a disclosure, a one-word line, variables and a URL.
SENTENCES = [
    "Guten Tag {{firstName}}, Sie sind mit der Praxis Dr. Weber in Köln verbunden.",
    "Wir rufen Sie gern zurueck, sobald eine Mitarbeiterin frei ist.",
    "Unsere Oeffnungszeiten haben sich geaendert: montags bis freitags von acht bis achtzehn Uhr.",
    "Die Gebuehr für eine Terminaenderung entfällt, wenn Sie spaeter als vierundzwanzig Stunden absagen.",
    "Sie sprechen mit einem digitalen Assistenten, der Ihr Anliegen gern aufnimmt.",
    "Danke.",
    "Nennen Sie bitte Ihre Kundennummer und den Grund Ihres Anrufs, dann geht es schneller.",
    "Aktuelle Hinweise zu Steuer, Feuerwehr und eventuell neuen Regeln finden Sie unter www.praxis-weber.de.",
    "Während der Ferien koennen Sie uns auch per E-Mail erreichen; die Antwort dauert etwas länger.",
    "Bitte halten Sie Ihre Versichertenkarte bereit und bleiben Sie einen Moment in der Leitung.",
]


def script_of(words):
    """About `words` words of the sentences above, one sentence a line."""
    lines, count, i = [], 0, 0
    while count < words:
        sentence = SENTENCES[i % len(SENTENCES)]
        lines.append(sentence)
        count += count_words(sentence)
        i += 1
    return "\n".join(lines)


def _rate(function, text):
    """Calls per second of function(text) over MEASURE_SECONDS (after one warm-up call)."""
    function(text)
    calls, began = 0, time.perf_counter()
    # At least one measured call (a smoke run measures a tenth of a second).
    while calls == 0 or (elapsed := time.perf_counter() - began) < (0.1 if smoke() else MEASURE_SECONDS):
        function(text)
        calls += 1
    return calls / elapsed


def _cold_analysis(text):
    """The analysis with the word caches emptied first: every word looked up anew."""
    umlaut_positions.cache_clear()
    default_lexicon().is_word.cache_clear()
    return analyze(text, 60)


def linter(load):
    """Linter in process, one core: analyses per second (baseline: counting words only)."""
    began = time.perf_counter()
    default_lexicon()
    load_ms = (time.perf_counter() - began) * 1000
    rows = []
    for words in (200,) if smoke() else (200, 2000):
        text = script_of(words)
        findings = len(analyze(text, 60)["findings"])
        baseline = _rate(count_words, text)
        warm = _rate(lambda t: analyze(t, 60), text)
        cold = _rate(_cold_analysis, text)
        rows.append({
            "script": f"{count_words(text)} words, {findings} findings",
            "count_words/s (baseline)": f"{baseline:.0f}",
            "analyses/s": f"{warm:.0f}",
            "µs per word": f"{1e6 / warm / count_words(text):.2f}",
            "analyses/s, cold caches": f"{cold:.0f}",
            "lexicon load ms (once)": f"{load_ms:.0f}",
        })
    return rows


def put_latency(load):
    """PUT /v2/audio/scripts/{touchpoint} (200-word script) beside GET of the list and a bare view."""
    with temp_project() as project:
        key = create_tenant_with_key(project, "bench")
        headers = {"Authorization": f"Bearer {key}", "X-Tenant": "bench"}
        script = project.tmp / "put_script.lua"
        script.write_text(
            'wrk.method = "PUT"\n'
            f"wrk.body = {json.dumps(json.dumps({'text': script_of(200)}))}\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
        with gunicorn(project, workers=2) as base_url:
            assert len(get_json(f"{base_url}/v2/audio/scripts", headers)["scripts"]) >= 12
            return compare(base_url, [
                ("bare view (ceiling)", "/__bench__/empty", None),
                ("GET /v2/audio/scripts", "/v2/audio/scripts", headers),
                ("GET /v2/audio/scripts?analyze=1", "/v2/audio/scripts?analyze=1", headers),
                ("PUT /v2/audio/scripts/inbound.opening_hours", "/v2/audio/scripts/inbound.opening_hours",
                 headers, script),
            ], load)
