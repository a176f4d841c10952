"""Whisper (faster-whisper, bundled base model, int8, beam 5, 1 thread): German
transcription speed, model load time, memory per worker with Django, two workers at
once against one, and the word error rate with several eSpeak NG voices.

Speech comes from the product's own synthesis (eSpeak NG through pyttsx3, MP3, decoded
back to 16 kHz), the sentences from ../shared/data/german-voicemails.example.json plus
the voicemails of tests/speech_app/test_german_transcription.py. Each measurement runs
in a fresh Django process (manage.py shell), as a gunicorn worker would."""
import json
import subprocess
import sys
import time

from bench.harness import ROOT, sized, smoke, temp_project

EXAMPLES = ROOT.parent / "shared" / "data" / "german-voicemails.example.json"
VOICES = ("de", "de+m3", "de+f3", "de+m1", "de+f2")
CLIP_SECONDS = 60

_CLIP = """
import json
from speech_app.decode import decode_to_pcm
from speech_app.encode import mp3_from_pcm
from speech_app.tts import EspeakSynthesizer
sentences = json.load(open({sentences!r}))
engine, pcm, spoken = EspeakSynthesizer(), b"", []
while len(pcm) < {seconds} * 32000:
    for sentence in sentences:
        speech = engine.synthesize(sentence, voice="de")
        pcm += decode_to_pcm(mp3_from_pcm(speech.pcm, speech.sample_rate)).pcm + b"\\x00\\x00" * 8000
        spoken.append(sentence)
        if len(pcm) >= {seconds} * 32000:
            break
open({path!r}, "wb").write(pcm)
print(json.dumps(" ".join(spoken)))
"""

_MEASURE = """
import json, resource, time
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) / 1024
from speech_app.stt import Deadline, recognizer
django_rss = rss()
engine = recognizer("whisper")
began = time.perf_counter(); engine.model(); load = time.perf_counter() - began
loaded_rss = rss()
pcm = open({path!r}, "rb").read()
print("ready", flush=True)
input()  # the benchmark starts the workers' transcriptions together
cpu, began = time.process_time(), time.perf_counter()
transcript = engine.transcribe(pcm, language="de", deadline=Deadline(900))
wall, cpu = time.perf_counter() - began, time.process_time() - cpu
print(json.dumps({{"load": load, "wall": wall, "cpu": cpu, "seconds": len(pcm) / 32000, "django_rss": django_rss,
                  "loaded_rss": loaded_rss, "rss": rss(), "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "text": transcript.text}}))
"""

_WER = """
import json, time
from speech_app.decode import decode_to_pcm
from speech_app.encode import mp3_from_pcm
from speech_app.stt import Deadline, recognizer
from speech_app.tts import EspeakSynthesizer
from tests.speech_app.wer import word_error_rate
sentences, voices = json.load(open({sentences!r})), {voices!r}
synthesizer, engine, rows = EspeakSynthesizer(), recognizer("whisper"), []
engine.model()
for voice in voices:
    rates, audio, cpu, german = [], 0.0, 0.0, 0
    for sentence in sentences:
        speech = synthesizer.synthesize(sentence, voice=voice)
        pcm = decode_to_pcm(mp3_from_pcm(speech.pcm, speech.sample_rate)).pcm
        began = time.process_time()
        text = engine.transcribe(pcm, language="de", deadline=Deadline(900)).text
        cpu += time.process_time() - began
        audio += len(pcm) / 32000
        rates.append(word_error_rate(sentence, text))
        german += engine.transcribe(pcm, language="auto", deadline=Deadline(900)).language == "de"
    rows.append({{"voice": voice, "sentences": len(sentences), "audio s": round(audio, 1),
                 "WER mean": round(sum(rates) / len(rates), 3), "WER max": round(max(rates), 2),
                 "WER <= 0.30": sum(rate <= 0.30 for rate in rates), "auto picked de": german,
                 "CPU s per audio s": round(cpu / audio, 2)}})
print(json.dumps(rows))
"""


def _sentences(project):
    from tests.speech_app.voicemails import VOICEMAILS

    # The spec's examples where they are at hand (beside the project's checkout), and ours.
    examples = json.loads(EXAMPLES.read_text(encoding="utf-8")) if EXAMPLES.exists() else []
    sentences = examples + VOICEMAILS
    sentences = sentences[:sized(len(sentences))]
    path = project.tmp / "sentences.json"
    path.write_text(json.dumps(sentences, ensure_ascii=False))
    return path


def _workers(project, path, count):
    """`count` Django processes that load the model, then transcribe `path` together."""
    processes = [subprocess.Popen([sys.executable, "manage.py", "shell", "-c", _MEASURE.format(path=str(path))],
                                  cwd=ROOT, env=project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for _ in range(count)]
    for process in processes:  # every worker has loaded its model (the shell may print a banner first)
        while (line := process.stdout.readline()) and line.strip() != "ready":
            pass
        assert line, "a worker ended before it was ready"
    began = time.perf_counter()
    for process in processes:
        process.stdin.write("\n")
        process.stdin.flush()
    results = [json.loads(process.communicate(timeout=900)[0].strip().splitlines()[-1]) for process in processes]
    return results, time.perf_counter() - began


def speed_and_memory(load):
    """Whisper on 60 s of German speech: real-time factor, model load and memory per worker; 2 workers vs 1."""
    from tests.speech_app.wer import word_error_rate

    rows = []
    with temp_project() as project:
        sentences = _sentences(project)
        clip = project.tmp / "clip.pcm"
        reference = json.loads(project.django(_CLIP.format(sentences=str(sentences), seconds=sized(CLIP_SECONDS, 5),
                                                           path=str(clip))).strip().splitlines()[-1])
        for label, count in (("1 worker, first start (joins + verifies the model)", 1),
                             ("1 worker", 1), ("2 workers at once", 2)):
            results, wall = _workers(project, clip, count)
            for result in results:
                rows.append({
                    "run": label, "audio s": round(result["seconds"], 1), "load s": round(result["load"], 2),
                    "transcribe wall s": round(result["wall"], 1), "CPU s": round(result["cpu"], 1),
                    "x real time (wall)": round(result["seconds"] / result["wall"], 1),
                    "x real time (CPU)": round(result["seconds"] / result["cpu"], 1),
                    "RSS Django MB": round(result["django_rss"]), "RSS loaded MB": round(result["loaded_rss"]),
                    "RSS after MB": round(result["rss"]), "peak RSS MB": round(result["peak"]),
                    "WER": round(word_error_rate(reference, result["text"]), 3),
                })
            if count == 2:  # print_table wants the same columns in every row
                rows.append({**{key: "" for key in rows[-1]}, "run": "2 workers at once: both done after",
                             "audio s": round(2 * results[0]["seconds"], 1), "transcribe wall s": round(wall, 1),
                             "x real time (wall)": round(2 * results[0]["seconds"] / wall, 1)})
    return rows


def word_error_rates(load):
    """Whisper word error rate on the product's German speech, per eSpeak NG voice (language de; auto for detection)."""
    with temp_project() as project:
        sentences = _sentences(project)
        # 120 transcriptions: longer than the harness's five-minute limit per command.
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                              _WER.format(sentences=str(sentences), voices=VOICES[:sized(len(VOICES))])],
                             cwd=ROOT, env=project.env, capture_output=True, text=True, timeout=1800, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


_SIZED = """
import json, statistics, time
import jiwer
from agent_app.audio import WireFormat
from speech_app.stt import Deadline, recognizer
from speech_app.tts import EspeakSynthesizer
from tests.speech_app.utterances import UTTERANCES
from tests.speech_app.voicemails import VOICEMAILS
from tests.speech_app.wer import normalised
engine = recognizer("whisper")
engine.model()
pcm16, phone = WireFormat("pcm_s16le", 16000), WireFormat("mulaw", 8000)
synthesizer = EspeakSynthesizer()
speech = b""
for sentence in UTTERANCES[:{sentences}]:
    spoken = synthesizer.synthesize(sentence, voice="de+m3")
    speech += pcm16.from_pcm(spoken.pcm, spoken.sample_rate)
rows = []
for seconds in {seconds}:
    clip = speech[:seconds * 32000]
    timings = {{"full": [], "sized": []}}
    for _ in range({rounds}):
        for name, run in (("full", engine.transcribe), ("sized", engine.hear)):
            began = time.perf_counter()
            run(clip, language="de", deadline=Deadline(300))
            timings[name].append(time.perf_counter() - began)
    full, sized = statistics.median(timings["full"]), statistics.median(timings["sized"])
    rows.append({{"what": f"recognition of {{seconds}} s of speech", "full window": f"{{full:.2f}} s",
                 "sized window": f"{{sized:.2f}} s", "sized / full": round(sized / full, 2)}})
for rate in ("16k", "8k"):
    references, full, sized = [], [], []
    for sentence in (VOICEMAILS + UTTERANCES)[:{sentences}]:
        spoken = synthesizer.synthesize(sentence, voice="de+m3")
        pcm = pcm16.from_pcm(spoken.pcm, spoken.sample_rate)
        if rate == "8k":
            pcm = phone.to_pcm16k(phone.from_pcm(spoken.pcm, spoken.sample_rate))
        references.append(normalised(sentence))
        full.append(normalised(engine.transcribe(pcm, language="de", deadline=Deadline(300)).text) or "<nichts>")
        sized.append(normalised(engine.hear(pcm, language="de", deadline=Deadline(300)).text) or "<nichts>")
    wer_full, wer_sized = jiwer.wer(references, full), jiwer.wer(references, sized)
    rows.append({{"what": f"word error rate, German set ({{len(references)}} utterances, {{rate}})",
                 "full window": round(wer_full, 3), "sized window": round(wer_sized, 3),
                 "sized / full": round(wer_sized / wer_full, 2) if wer_full else "—"}})
print(json.dumps(rows))
"""


def sized_window(load):
    """Whisper on the voice agent's utterances: full 30 s window (transcribe) vs the window sized to the utterance (hear), one engine"""
    with temp_project() as project:
        env = {**project.env, "WHISPER_ENGINES": "1"}
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c", _SIZED.format(
            rounds=sized(3), seconds=(1,) if smoke() else (1, 2, 4, 8), sentences=sized(1000))],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])
