"""German numbers said and heard (issue 28, issue 29 §2): number-heavy sentences —
phone numbers, times, dates, prices, reference numbers, addresses — rendered by our
synthesis (eSpeak NG) and transcribed back by Whisper base (int8, beam 5, one thread,
as the agent hears a caller), once from the raw text handed to eSpeak ("before": what
synthesis did before speech_app/spoken.py) and once from the normaliser's spoken form
("after": what every German synthesis says now), and once from the spoken form with
each run of digit words said one by one, a comma after each ("after, digits apart":
a variant the normaliser could adopt for eSpeak, measured to decide). Measured, not a
gate: eSpeak is a poor speaker and Whisper base a small model.

Two figures per voice and mode:

- **digit accuracy**: the numbers of the written sentence against the numbers of what
  was heard, both turned into one string of digits (number words and ordinals as
  their values, ordinals before a month and month names as their numbers, the parts
  of a date, time or price
  without leading zeros and without a part of zeros — "8:00 Uhr" is "8", as it is
  said —, digit groups of phone numbers as written). 1 − edit distance / digits,
  summed over the sentences (a sentence's errors counted up to its length, so that a
  transcript that repeats "9, 9, 9 …" costs that sentence and no more); and how many
  sentences came back with every digit right;
- **entity accuracy**: the entities speech_app.entities finds in the written sentence
  (phone numbers in E.164, dates, times, amounts, reference numbers, resolved on a
  fixed clock) that it finds again, with the same value, in what was heard.

The synthesis and recognition run in a Django process of a throwaway project (the
engines as the product has them); the scoring here."""
import json
import re
import subprocess
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

from bench.harness import RESULTS_DIR, ROOT, sized, temp_project

VOICES = ("de", "de+m3")  # the product's German voice, and the tests' caller voice
NOW = datetime(2026, 11, 25, 16, 0, tzinfo=ZoneInfo("Europe/Berlin"))  # a Wednesday afternoon

# (kind, the sentence as written)
SENTENCES = [
    ("phone", "Rufen Sie mich unter 0221 487693 an."),
    ("phone", "Meine Nummer ist 030 901820."),
    ("phone", "Sie erreichen mich mobil unter 0176 12345678."),
    ("phone", "Die Telefonnummer lautet 089 123456."),
    ("phone", "Bitte rufen Sie zurück unter 040 5566778."),
    ("phone", "Meine Handynummer ist 0151 23456789."),
    ("phone", "Unsere Zentrale hat die Nummer +49 30 901820."),
    ("phone", "Rufen Sie bitte die 0711 2233445 an."),
    ("phone", "Ich bin unter 0201 998877 erreichbar."),
    ("phone", "Die Nummer der Praxis ist 06221 54321."),
    ("phone", "Mobil bin ich unter 0170 9876543 zu erreichen."),
    ("phone", "Mein Festnetz ist 0341 6655443."),
    ("time", "Der Termin ist um 14:30 Uhr."),
    ("time", "Wir öffnen morgens um 8:00 Uhr."),
    ("time", "Kommen Sie bitte um 9:15 Uhr."),
    ("time", "Die Sprechstunde endet um 18:45 Uhr."),
    ("time", "Der Rückruf kommt gegen 11:20 Uhr."),
    ("time", "Treffpunkt ist um 16:00 Uhr am Empfang."),
    ("time", "Die Lieferung kommt zwischen 10 und 12 Uhr."),
    ("time", "Wir haben bis 19:30 Uhr geöffnet."),
    ("date", "Ihr Termin ist am 03.12.2026."),
    ("date", "Die Praxis ist am 24.12. geschlossen."),
    ("date", "Am Montag, 07.12., um 10:00 Uhr passt es mir."),
    ("date", "Die Rechnung vom 15.11.2026 ist noch offen."),
    ("date", "Bitte kommen Sie am 2. Januar wieder."),
    ("date", "Der Vertrag beginnt am 01.01.2027."),
    ("price", "Die Untersuchung kostet 12,50 €."),
    ("price", "Der Preis liegt bei 249,99 Euro."),
    ("price", "Die Anzahlung beträgt 1.200 €."),
    ("price", "Ein Aufmaß kostet 60 Euro."),
    ("price", "Die Versandkosten sind 4,95 €."),
    ("price", "Sie bekommen 15 % Rabatt."),
    ("reference", "Meine Kundennummer ist 4711."),
    ("reference", "Die Bestellnummer lautet 582301."),
    ("reference", "Ihre Rechnungsnummer ist 2026-0345."),
    ("reference", "Das Paket hat die Sendungsnummer 0034 5678 9012."),
    ("address", "Wir sind in der Hauptstr. 12, 50667 Köln."),
    ("address", "Ich wohne in der Bahnhofstraße 7a."),
]

MODES = ("before", "after", "after, digits apart")
_DIGIT_WORD = r"(?:null|eins|zwei|zwo|drei|vier|fünf|sechs|sieben|acht|neun)"
_DIGIT_RUN = re.compile(rf"\b{_DIGIT_WORD}(?:[ ,]+{_DIGIT_WORD})+\b")


def digits_apart(spoken):
    """The spoken form with every run of digit words said one by one, a comma after each
    ("null, zwei, zwei, eins, …" for "null zwei zwei eins, …"): the third mode, which
    eSpeak reads with a pause between the digits."""
    return _DIGIT_RUN.sub(lambda match: ", ".join(re.findall(_DIGIT_WORD, match.group(0))), spoken)


# In the project's Django: each sentence spoken in each mode, heard back.
_ROUND_TRIP = """
import json, sys
from agent_app.audio import WireFormat
from bench.bench_digits import MODES, digits_apart
from speech_app.spoken import spoken_form
from speech_app.stt import Deadline, recognizer
from speech_app.tts import EspeakSynthesizer, speech_pieces
sentences, voices = json.load(open({sentences!r})), {voices!r}
synthesizer, engine, wire = EspeakSynthesizer(), recognizer("whisper"), WireFormat("pcm_s16le", 16000)
engine.model()
for voice in voices:
    for index, (kind, text) in enumerate(sentences):
        for mode in MODES:
            if mode == "before":  # the text as written, straight to eSpeak
                speech = synthesizer._speak(speech_pieces(text), voice)
            elif mode == "after":  # what every German synthesis says: the normaliser's spoken form
                speech = synthesizer.synthesize(text, voice=voice)
            else:  # the spoken form with the digits one by one
                speech = synthesizer._speak(speech_pieces(digits_apart(spoken_form(text))), voice)
            pcm = wire.from_pcm(speech.pcm, speech.sample_rate)
            heard = engine.transcribe(pcm, language="de", deadline=Deadline(300)).text.strip()
            print(json.dumps({{"voice": voice, "index": index, "mode": mode, "heard": heard}}, ensure_ascii=False),
                  flush=True)
"""

_ARTICLES = frozenset(("ein", "eine", "einen", "einem", "einer", "eines"))
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[a-zäöüß]+")


def _word_value(word, following):
    """The number a word says (a number word; an ordinal before a month's name, as in
    "am dritten Dezember" — elsewhere "achten" is a verb; a month's name), or None."""
    from speech_app.entities import MONTHS, number_of, ordinal_of

    if word in _ARTICLES:
        return None
    if word in MONTHS:
        return MONTHS[word]
    value = number_of(word)
    return value if value is not None or following not in MONTHS else ordinal_of(word)


def digits_of(text):
    """The digits a text says, in order (see the module): "um 14:30 Uhr" and "um
    vierzehn Uhr dreißig" are both "1430"; "0221 487693" and "null zwei zwei eins, vier
    acht sieben, sechs neun drei" both "0221487693"."""
    digits = []
    tokens = _TOKEN.findall(text.lower())
    for index, token in enumerate(tokens):
        if token[0].isdigit():
            parts = re.split(r"[.,:]", token)
            if len(parts) == 1 or all(len(part) == 1 for part in parts):
                # A digit group as written (a phone number's leading zero stays), or
                # digits one by one with commas ("0,2,2,1", as Whisper writes them).
                digits += parts
            else:  # a date, a time, a price: its parts as numbers, a part of zeros unsaid
                digits += [str(int(part)) for part in parts if part and int(part)]
        else:
            value = _word_value(token, tokens[index + 1] if index + 1 < len(tokens) else "")
            if value is not None:
                digits.append(str(value))
    return "".join(digits)


def edit_distance(a, b):
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i]
        for j, right in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (left != right)))
        previous = current
    return previous[-1]


def expected_entities(text):
    from speech_app.entities import entities

    return {(found["type"], found["value"]) for found in entities(text, now=NOW)}


def score(rows):
    """The table's rows from the transcripts: per voice and mode, overall and per kind."""
    expected = [expected_entities(text) for _, text in SENTENCES]
    wanted = [digits_of(text) for _, text in SENTENCES]
    groups = {}
    for row in rows:
        kind = SENTENCES[row["index"]][0]
        for key in ((row["voice"], row["mode"], "all"), (row["voice"], row["mode"], kind)):
            groups.setdefault(key, []).append(row)
    table = []
    for (voice, mode, kind), members in groups.items():
        digits = errors = whole = entity_total = entity_found = entity_sentences = entity_whole = 0
        for row in members:
            reference, heard = wanted[row["index"]], digits_of(row["heard"])
            digits += len(reference)
            wrong = min(edit_distance(reference, heard), len(reference))
            errors += wrong
            whole += wrong == 0
            want = expected[row["index"]]
            if want:
                found = expected_entities(row["heard"]) & want
                entity_total += len(want)
                entity_found += len(found)
                entity_sentences += 1
                entity_whole += found == want
        table.append({
            "voice": voice, "mode": mode, "kind": kind, "sentences": len(members),
            "digit accuracy": f"{1 - errors / digits:.2f}" if digits else "—",
            "sentences, every digit right": f"{whole}/{len(members)}",
            "entity accuracy": f"{entity_found / entity_total:.2f}" if entity_total else "—",
            "sentences, every entity right": f"{entity_whole}/{entity_sentences}",
        })
    order = {kind: n for n, kind in enumerate(["all", *dict.fromkeys(kind for kind, _ in SENTENCES)])}
    table.sort(key=lambda row: (VOICES.index(row["voice"]) if row["voice"] in VOICES else 99,
                                order[row["kind"]], MODES.index(row["mode"])))
    return table


def digits_round_trip(load):
    """Numbers said and heard: digit and entity accuracy of German number sentences through eSpeak NG and Whisper base, before vs after the normaliser"""
    with temp_project() as project:
        path = project.tmp / "number-sentences.json"
        path.write_text(json.dumps(SENTENCES[:sized(len(SENTENCES))], ensure_ascii=False), encoding="utf-8")
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                              _ROUND_TRIP.format(sentences=str(path), voices=VOICES[:sized(len(VOICES))])],
                             cwd=ROOT, env=project.env, capture_output=True, text=True, timeout=3600,
                             check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    # What was heard, sentence by sentence, beside the run's figures (git-ignored).
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "digits_round_trip-transcripts.json").write_text(json.dumps(
        [{**row, "said": SENTENCES[row["index"]][1]} for row in rows], ensure_ascii=False, indent=1) + "\n")
    return score(rows)
