"""The offline dialogue policy: how the `mock` lane answers a conversation that offers tools.

With no language model configured, the gateway's mock lane answers every turn
(gateway_app.providers.mock). A turn without tools (or with `tool_choice` `none`)
still gets the rule set's fixed answer to its last message, as `/v1/agent` and
`/agent` do; a turn that offers tools is answered by `DialoguePolicy`, registered
from agent_app's AppConfig.ready(): a deterministic German (and English) dialogue
of a business line that acts through the same tools a language model would call.

It is stateless. Each turn it reads the whole history again: the system prompt for
the context lines below, then every user message, tool call and tool result in
order, replaying its own decisions (what it asked, what the caller answered, what
the tools said) to know where the conversation stands; then it answers the last
message. The same history gives the same answer (with `Datum und Uhrzeit` given;
without it "now" is the clock's).

Context lines the conversation core puts into the system prompt (one per line,
anywhere in any system message; every line optional):

    Datum und Uhrzeit: 2026-11-25T16:00:00+01:00 (Europe/Berlin)
    Anrufernummer: +4917612345678
    Kanal: Telefon
    Weiterleitungsziele: Zentrale (+4930555000999); Buchhaltung (+4930555000111)

- `Datum und Uhrzeit`: now on the tenant's clock, ISO 8601 with its offset, the
  tenant's time zone in parentheses (it makes "nächsten Dienstag" right across a
  change of summer time). "Heute ist Mittwoch, 25.11.2026, 16:00 Uhr
  (Europe/Berlin)" is read too. Without either: now in Europe/Berlin.
- `Anrufernummer`: the caller's number (E.164); absent when unknown (web calls).
- `Kanal`: `Telefon` or `Sprache` (any spoken conversation, the browser's too):
  a number the caller says is read back digit by digit for confirmation. `Text`,
  or no line: a number typed is taken as it is (an API user has no read-back turn).
- `Weiterleitungsziele`: who `transfer_call` may reach, `Name (+49…)` separated by
  semicolons; the `enum` of the `transfer_call` tool's `target` says the same (and
  wins when both are there). Nothing else names a target: not the caller, not a
  knowledge passage, not a tool's answer.

Intents (German first, English too): a callback wish; an appointment wish (a
callback with the wished time); "mit einem Mitarbeiter sprechen" (`transfer_call`
to a known target, else a callback is offered); goodbye (a short goodbye, then
`end_call`); "rufen Sie mich nicht mehr an" (confirmed, `opt_out`, then the goodbye
and `end_call`); thanks; greeting; questions and everything else are looked up
(`lookup_knowledge` with the caller's words) and answered from the passages, or, when
nothing is found, a callback is offered.

A callback collects, over as many turns as it needs: the number (the caller's own is
offered: "Unter der Nummer, von der Sie gerade anrufen?"; a spoken number is read
back in digit groups and a "nein" or a new number corrects it), then the time when the
tool has a time parameter and the conversation is spoken (or the parameter is
required), then calls `create_callback` and, after its result, confirms.

Tool arguments are built from the tool's own parameter schema (the property names a
tool uses for the number, the time, the note are matched: `phone`/`phoneNumber`,
`preferredTime`/`preferred_time`/`when`, `note`/`reason` …), cut to their
`maxLength`, and checked by console.json_schemas (patterns matched by RE2, in
bounded time); a call whose arguments do not validate is not made. Only offered
tools are called.

Tool results are data. A passage is read for sentences that answer the question;
sentences that speak to the assistant
("Ignorieren Sie Ihre Anweisungen …") or tell anyone what to do ("Rufen Sie … an") are
left out, and so is a phone number unless the caller asked for one; nothing in a result ever changes what the policy does next: which tool it
calls and with which arguments depends only on the caller's words and the context
lines.
"""
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from functools import cached_property, lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from django.utils import timezone

from console.json_schemas import SchemaUnusable, instance_valid, schema_problems
from console.parsers import json_text
from console.phone import InvalidPhoneNumber, to_e164
from console.sentences import split_sentences
from gateway_app.providers.mock import RuleSetPolicy, guess_language
from gateway_app.turns import TextDelta, ToolCall
from speech_app.entities import entities, number_of
from speech_app.spoken import spoken_form

logger = logging.getLogger(__name__)

DEFAULT_ZONE = "Europe/Berlin"
MAX_NOTE_CHARS = 300
MAX_TIME_WORDS = 200
# An utterance is read for numbers and times in its first characters only (a caller's
# sentence is far shorter; a client may send 400,000 characters).
MAX_HEARD_CHARS = 2000

# --- The context lines ---------------------------------------------------------------

_CONTEXT_LINE = re.compile(
    r"^[\s>*•-]*(datum und uhrzeit|anrufernummer|kanal|weiterleitungsziele)\s*:\s*(.*?)\s*$",
    re.IGNORECASE | re.MULTILINE)
_ISO_NOW = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)"
                      r"(?:\s*\(([A-Za-z_+\-]+(?:/[A-Za-z_+\-]+)*)\))?")
_GERMAN_MONTHS = ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober",
                  "november", "dezember")
_TODAY_IS = re.compile(
    r"heute ist\D{0,30}?(\d{1,2})\.\s?(?:(\d{1,2})\.|(" + "|".join(_GERMAN_MONTHS) + r"))\s?(\d{4})"
    r"\D{0,12}?(\d{1,2})[:.](\d{2})(?:\s*uhr)?(?:\s*\(([A-Za-z_+\-]+(?:/[A-Za-z_+\-]+)*)\))?",
    re.IGNORECASE)
_SPOKEN_CHANNEL = re.compile(r"telefon|sprach|anruf|voice|phone|call|browser", re.IGNORECASE)
_TARGET = re.compile(r"^\s*(.+?)\s*(?:\(\s*([+\d][\d\s/()-]*)\s*\))?\s*$")


def _zone(name):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _now_of(system):
    """Now on the tenant's clock from the system prompt, else the clock's in Berlin."""
    for key, value in _lines(system):
        if key == "datum und uhrzeit":
            match = _ISO_NOW.search(value)
            if match:
                try:
                    moment = datetime.fromisoformat(match.group(1).replace(" ", "T").replace("Z", "+00:00"))
                except ValueError:
                    moment = None
                if moment is not None:
                    zone = _zone(match.group(2)) if match.group(2) else None
                    if moment.tzinfo is None:
                        return moment.replace(tzinfo=zone or ZoneInfo(DEFAULT_ZONE))
                    return moment.astimezone(zone) if zone else moment
    match = _TODAY_IS.search(system)
    if match:
        day, month_digits, month_name, year, hour, minute, zone_name = match.groups()
        month = int(month_digits) if month_digits else _GERMAN_MONTHS.index(month_name.lower()) + 1
        zone = (_zone(zone_name) if zone_name else None) or ZoneInfo(DEFAULT_ZONE)
        try:
            return datetime(int(year), month, int(day), int(hour), int(minute), tzinfo=zone)
        except ValueError:
            pass
    return timezone.now().astimezone(ZoneInfo(DEFAULT_ZONE))


def _lines(system):
    return [(match.group(1).lower(), match.group(2)) for match in _CONTEXT_LINE.finditer(system)]


def _e164(raw):
    try:
        return to_e164(raw)
    except InvalidPhoneNumber:
        return None


@dataclass(frozen=True)
class Context:
    """What the policy knows besides the history: the system prompt's lines, the tools."""

    now: datetime
    language: str  # de or en
    spoken: bool
    caller: str | None  # E.164
    targets: tuple  # names transfer_call may reach
    tools: dict  # name → parameters schema, of the offered tools

    @classmethod
    def of(cls, request):
        system = "\n".join(m["content"] or "" for m in request.messages if m["role"] == "system")
        lines = _lines(system)
        caller = next((_e164(value) for key, value in lines if key == "anrufernummer"), None)
        spoken = any(key == "kanal" and _SPOKEN_CHANNEL.search(value) for key, value in lines)
        tools = {tool["function"]["name"]: tool["function"].get("parameters") or {"type": "object"}
                 for tool in request.tools}
        named = []
        for key, value in lines:
            if key == "weiterleitungsziele":
                for part in value.split(";"):
                    match = _TARGET.match(part)
                    if match and match.group(1).strip(" ,"):
                        named.append(match.group(1).strip(" ,"))
        enum = _property(tools.get("transfer_call") or {}, "target").get("enum")
        if isinstance(enum, list):
            targets = tuple(name for name in enum if isinstance(name, str) and name)
        else:
            targets = tuple(named)
        users = " ".join(m["content"] or "" for m in request.messages if m["role"] == "user")
        language = request.language if request.language in ("de", "en") else guess_language(users or system)
        return cls(now=_now_of(system), language=language, spoken=spoken, caller=caller, targets=targets,
                   tools=tools)


# --- Tool arguments from the tool's own schema ------------------------------------------

# The names tools use for what the policy fills in, compared without case, "_" and "-".
_ROLES = {
    "phone": ("phone", "phonenumber", "number", "callbacknumber", "e164", "telefon", "telefonnummer", "rufnummer",
              "nummer", "tel"),
    "time": ("preferredtime", "preferredat", "when", "time", "datetime", "callbacktime", "wunschzeit", "zeit",
             "termin", "date"),
    "note": ("note", "notes", "reason", "message", "summary", "concern", "topic", "anliegen", "notiz", "grund",
             "comment"),
    "query": ("query", "question", "q", "search", "text", "frage", "suchbegriff", "suche"),
    "target": ("target", "name", "to", "destination", "ziel"),
    "reason": ("reason", "note", "grund"),
}


def _key(name):
    return re.sub(r"[_\-\s]", "", name.lower())


def _property_name(schema, role):
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return None
    for alias in _ROLES[role]:
        for name in properties:
            if _key(name) == alias:
                return name
    return None


def _required(schema):
    required = schema.get("required") if isinstance(schema, dict) else None
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def _property(schema, role):
    name = _property_name(schema, role)
    spec = schema["properties"][name] if name else None
    return spec if isinstance(spec, dict) else {}


class _BrokenSchema(Exception):
    pass


@lru_cache(maxsize=256)
def _usable(schema_text):
    """Whether the schema (by its JSON text: a turn asks about the same few schemas
    again and again) can be used: a valid Draft 2020-12 schema of bounded size whose
    patterns RE2 can match (console.json_schemas, the one checker of such schemas)."""
    return not schema_problems(json.loads(schema_text))


def _fits(schema, arguments):
    """Whether `arguments` validate against `schema`; _BrokenSchema when it cannot be
    checked (a client may send any schema) or not within the validation's time bound:
    then its tool is not called at all."""
    if not _usable(json.dumps(schema, sort_keys=True, default=str)):
        raise _BrokenSchema()
    try:
        return instance_valid(schema, arguments)
    except SchemaUnusable as exc:
        raise _BrokenSchema() from exc


def tool_arguments(schema, values):
    """The arguments for a tool with parameters `schema`, from `values` (role → value;
    None left out): each under the tool's own name for it, strings cut to their
    maxLength, checked against the schema. Optional values that do not fit are dropped;
    None when the arguments still do not validate or the schema cannot be checked."""
    arguments = {}
    for role, value in values.items():
        if value in (None, ""):
            continue
        name = _property_name(schema, role)
        if name is None:
            continue
        spec = schema["properties"][name]
        if isinstance(value, str) and isinstance(spec, dict) and isinstance(spec.get("maxLength"), int):
            value = value[:spec["maxLength"]].rstrip()
        arguments[name] = value
    try:
        if _fits(schema, arguments):
            return arguments
        required = _required(schema)
        for name in [name for name in reversed(list(arguments)) if name not in required]:
            del arguments[name]
            if _fits(schema, arguments):
                return arguments
    except _BrokenSchema:
        pass
    return None


# --- Words ------------------------------------------------------------------------------

def _cue(*patterns):
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


# The phone band loses short words and endings: Whisper heard "Bitte rufen mich nicht mehr
# an", "nicht mehr anrufen werden" and "keine weiteren Anrufer" for the wishes themselves
# (tests/agent_app/test_policy.py), so those slips count too.
_OPT_OUT = _cue(
    r"\bruf\w* (?:sie )?mich\b[^.?!]{0,20}\bnicht mehr\b",
    r"\bmich\b[^.?!]{0,20}\bnicht mehr\b[^.?!]{0,12}\ban(?:zu)?rufen\b",
    r"\bnicht mehr angerufen\b", r"\bnicht mehr an(?:ge)?rufen werden\b",
    r"\bkeine (?:weiteren )?(?:werbe)?anrufe mehr\b", r"\bkeine weiteren anrufer?\b",
    r"\bkeine werbeanrufe\b", r"\bnicht mehr kontaktier", r"\bwiderspreche\b",
    r"\b(?:streichen|löschen|entfernen|sperren) sie meine (?:telefon)?nummer\b",
    r"\b(?:don'?t|do not|never) (?:ever )?call me\b", r"\bstop calling\b", r"\bno (?:more|further) calls\b",
    r"\bremove my number\b", r"\btake me off\b", r"\bopt(?:[- ])?out\b", r"\bunsubscribe\b",
    r"\b(?:don'?t|do not) contact me\b")
_GOODBYE = _cue(
    r"\btschü(?:s|ss)\b", r"\bauf wieder(?:hören|sehen)\b", r"\bwiederhören\b", r"\bciao\b", r"\bbye\b",
    r"\bgoodbye\b", r"\bdas (?:war'?s|war es|wär'?s|wäre es|wäre alles|ist alles|war alles)\b",
    r"\bthat'?s all\b", r"\bthat is all\b", r"\bschönen tag noch\b", r"\bhave a nice day\b")
_CALLBACK = _cue(
    r"rückruf", r"zurückruf", r"zurück\s*rufen", r"zurückgerufen", r"\bruf\w*\b[^.?!]{0,40}\bzurück(?:en)?\b",
    r"\brufen (?:sie|die) mich\b[^.?!]{0,30}\ban\b", r"\bmich\b[^.?!]{0,20}\banrufen\b",
    r"\bmelde[nt]? sich\b[^.?!]{0,30}\bbei mir\b", r"\bcall(?:ing)? (?:me )?back\b", r"\bcallback\b",
    r"\bcall me\b", r"\bring me\b", r"\bgive me a (?:call|ring)\b")
_APPOINTMENT = _cue(r"\btermin", r"\bappointment", r"\bbooking\b", r"\bbook (?:a|an|me)\b", r"\breservier",
                    r"\bschedule\b")
_CONNECT = _cue(
    r"\b(?:weiter)?verbinden\b", r"\bdurchstellen\b", r"\bweiterleiten\b",
    r"\bstellen sie mich\b[^.?!]{0,20}\bdurch\b", r"\btransfer me\b", r"\bput me through\b", r"\bconnect me\b")
_PERSON = _cue(r"\bmitarbeiter", r"\bmenschen?\b", r"\bperson\b", r"\bkolleg", r"\bjemand", r"\bberater",
               r"\bsachbearbeiter", r"\bchef", r"\bechte[nm]?\b", r"\bhuman\b", r"\bsomeone\b", r"\bsomebody\b",
               r"\bagent\b", r"\brepresentative\b", r"\boperator\b", r"\bstaff\b", r"\breal person\b",
               r"\bcolleague\b")
_TALK = _cue(r"\bsprechen\b", r"\breden\b", r"\bspeak\b", r"\btalk\b")
_THANKS = _cue(r"\bdanke", r"\bvielen dank\b", r"\bthank", r"\bthanks\b", r"\bmerci\b")
_GREETING = _cue(r"\bhallo\b", r"\bguten (?:tag|morgen|abend)\b", r"\bservus\b", r"\bmoin\b", r"\bgrüß gott\b",
                 r"\bhello\b", r"\bhi\b", r"\bhey\b", r"\bgood (?:morning|afternoon|evening)\b")
_NO = _cue(r"^\W*(?:nein|nee|nö|ne|no|nope)\b", r"\bnein\b", r"\bstimmt nicht\b",
           r"\bnicht (?:ganz |so )?(?:richtig|korrekt)\b", r"\bfalsch\b", r"\bnicht nötig\b",
           r"\bnicht notwendig\b", r"\bkein(?:en)? rückruf\b", r"\bbrauche ich nicht\b", r"\bnope\b",
           r"\bwrong\b", r"\bincorrect\b", r"\bnot (?:right|correct)\b", r"\bno need\b", r"\bno thanks?\b")
_YES = _cue(r"\bja\b", r"\bjawohl\b", r"\bjep\b", r"\bjo\b", r"\bgenau\b", r"\brichtig\b", r"\bstimmt\b",
            r"\bkorrekt\b", r"\bgerne?\b", r"\bpasst\b", r"\bokay\b", r"\bok\b", r"\beinverstanden\b",
            r"\bin ordnung\b", r"\bklar\b", r"\byes\b", r"\byeah\b", r"\byep\b", r"\byup\b", r"\bcorrect\b",
            r"\bthat'?s right\b", r"\bright\b", r"\bexactly\b", r"\bsure\b")
_SOON = _cue(r"so ?(?:bald|schnell|früh) wie möglich", r"schnellstmöglich", r"möglichst (?:bald|schnell)",
             r"baldmöglichst",
             r"\bsofort\b", r"\bgleich\b", r"\bjederzeit\b", r"\begal\b", r"\bwann (?:immer )?(?:sie|ihr) "
             r"(?:wollen|möchten|können)\b", r"\bas soon as possible\b", r"\basap\b", r"\bany ?time\b",
             r"\bright away\b", r"\bwhenever\b", r"\bdoesn'?t matter\b")
_PARTS = (("am", _cue(r"vormittag", r"\bmorgens\b", r"\bfrüh\b(?! wie möglich)", r"\bmorning\b")),
          ("pm", _cue(r"nachmittag", r"\bmittags?\b", r"\bafternoon\b", r"\bnoon\b")),
          ("evening", _cue(r"\babends?\b", r"\bevening\b", r"\btonight\b")))
_PART_START = {"am": time(9), "pm": time(14), "evening": time(18)}
_PART_END = {"am": time(12), "pm": time(18), "evening": time(21)}
_WORD = re.compile(r"[a-zäöüß']+")
_FILLERS = frozenset((
    "ja nein ok okay äh ähm hm hmm also bitte danke vielen dank schön sehr gern gerne hallo guten tag morgen abend "
    "servus moin und ich sie mir mich wir ihr ihnen das die der den dem ein eine einen ist es so na nun noch mal "
    "yes no please thanks thank you hello hi hey good the a an and i me my we it so well just").split())
_STOP = frozenset((
    "der die das den dem des ein eine einen einem einer und oder aber ich sie wir ihr ihnen mir mich mein meine es "
    "ist sind war bin hat haben habe hätte hätten wird werden kann können könnte möchte möchten würde würden "
    "gern gerne bitte danke mal noch auch schon nur wie was wann wo wer welche welcher welches wieso warum zu zum "
    "zur im in am an auf aus bei mit von vom für über unter nach vor bis um denn dann doch ja nein nicht kein "
    "keine so sehr da hier dort man sich the a an and or to of in on at for with is are do does you your we our "
    "i me my can could would please what when where how which who").split())
_INSTRUCTIONS = _cue(
    r"\bignorier", r"\b(?:deine|eure|alle|vorherigen|bisherigen|obigen|früheren|neuen) (?:anweisungen|instruktionen|"
    r"regeln|vorgaben)\b", r"\bvergiss\b", r"\bvergessen sie\b", r"\bsystem ?prompt", r"\bprompt\b", r"\bdu bist\b",
    r"\bsie sind (?:jetzt|nun|ab sofort)\b", r"\bsprachmodell", r"\bverbinden sie\b",
    r"\bleiten sie\b[^.!?]{0,40}\bweiter\b",
    r"\bignore\b", r"\bdisregard\b", r"\bforget\b", r"\b(?:your|previous|prior|all|above) (?:instructions|rules)\b",
    r"\byou are now\b", r"\blanguage model\b", r"\btransfer (?:the call|me|this call)\b", r"\btransfer_call\b",
    r"\btool call")
# Sentences that tell someone what to do — the caller or the assistant — are never read
# out of a passage or a tool's answer: a Sie- or du-imperative ("Rufen Sie … an",
# "Bitte nennen Sie …", "Verbinde …"), what someone must or should do, an English
# imperative. What the business says of itself ("Die Praxis ist … geöffnet") is read.
_IMPERATIVE = _cue(
    r"^\W*(?:bitte\s+)?[a-zäöüß]+e?n\s+sie\b(?![^.!?]*\?\W*$)", r"^\W*bitte\b", r"\bbitte\W*$",
    r"\b(?:du|dich|dir|dein\w*|euch|ihr solltet)\b",
    r"\bsie (?:müssen|sollen|sollten|dürfen|haben zu)\b", r"\b(?:der|die) (?:assistent\w*|ki|agent)\b",
    r"\banrufer\w*\b[^.!?]{0,40}\b(?:verbinden|weiterleiten|durchstellen|mitteilen|sagen|nennen)\b",
    r"^\W*(?:please\s+)?(?:call|tell|say|give|read|send|transfer|connect|forward|dial|repeat|ask|reply|respond|"
    r"answer|act|pretend|output|print|write|do|don'?t|never|always|make|use|contact|visit|go)\b",
    r"\byou (?:must|should|will|have to|need to|are to)\b", r"!\W*$")
# A phone number in a sentence (six digits or more, spaced or not): read only when the
# caller asked for a number.
_NUMBER_IN = re.compile(r"\+?\d[\d ()/.-]{4,}\d")
_ASKS_NUMBER = _cue(r"nummer", r"telefon", r"\berreich", r"\banruf", r"\bfax", r"hotline", r"whatsapp",
                    r"\bnumber\b", r"\bphone\b", r"\breach\b", r"\bcontact\b", r"\bkontakt")
_QUESTION = _cue(r"\?", r"^\W*(?:wann|wie|was|wo|wer|welche\w*|warum|wieso|weshalb|wozu|woher|wohin|haben|habt|gibt|"
                 r"kann|können|könnt|ist|sind|bieten|machen|nehmen|muss|brauche|darf|when|what|where|how|who|"
                 r"which|why|do|does|are|is|can|could)\b")
_ANNOUNCED = _cue(r"\b(?:noch )?(?:eine|ne) (?:frage|bitte)\b", r"\bnoch (?:etwas|was)\b",
                  r"\b(?:one more|another|a) question\b", r"\bsomething else\b")
_EN_DIGITS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
              "seven": "7", "eight": "8", "nine": "9"}
_EN_DOUBLE = re.compile(r"\b(double|triple)\s+(zero|oh|one|two|three|four|five|six|seven|eight|nine|\d)\b",
                        re.IGNORECASE)
_EN_DIGIT = re.compile(r"\b(zero|oh|one|two|three|four|five|six|seven|eight|nine)\b", re.IGNORECASE)
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_DAY = re.compile(r"\b(today|tonight|tomorrow|day after tomorrow|(?:on |next |this )?(?:"
                     + "|".join(_EN_WEEKDAYS) + r"))\b", re.IGNORECASE)
_EN_CLOCK = re.compile(r"\b(?:at|around|after|about)\s+(\d{1,2})(?::(\d{2}))?(?!\d)\s*(am|pm|a\.m\.|p\.m\.|o'?clock)?"
                       r"|\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)(?!\w)", re.IGNORECASE)


def _english_digits(text):
    text = _EN_DOUBLE.sub(lambda m: " ".join([_EN_DIGITS.get(m.group(2).lower(), m.group(2))]
                                             * (2 if m.group(1).lower() == "double" else 3)), text)
    return _EN_DIGIT.sub(lambda m: _EN_DIGITS[m.group(1).lower()], text)


@dataclass
class _When:
    """A wished time, as far as it was said."""

    day: date | None = None
    clock: time | None = None
    part: str | None = None  # am, pm, evening
    soon: bool = False
    words: str = ""  # an answer the policy could not read, kept as said
    said: list = field(default_factory=list)  # the caller's own words for it

    def known(self):
        return bool(self.day or self.clock or self.part or self.soon or self.words)

    def merge(self, other):
        if other.day or other.clock or other.part:
            self.soon, self.words = False, ""
        self.day = other.day or self.day
        self.clock = other.clock or self.clock
        self.part = other.part or (None if other.clock else self.part)
        self.soon = self.soon or (other.soon and not (self.day or self.clock or self.part))
        self.words = other.words or self.words
        self.said += [words for words in other.said if words not in self.said]


# Compounds Whisper writes apart ("zu rücken" for "zurück", "Rück-Ruf"): joined again
# before the caller's words are read for a wish.
_SPLIT_COMPOUND = re.compile(r"\b(zu|rück|zurück)[\s-]+(rück|ruf)", re.IGNORECASE)


class _Heard:
    """One utterance of the caller, read for what the policy needs."""

    def __init__(self, text, context):
        self.text = " ".join((text or "").split())
        self.low = _SPLIT_COMPOUND.sub(r"\1\2", self.text.lower())
        self.context = context

    @cached_property
    def words(self):
        return _WORD.findall(self.low)

    @cached_property
    def content(self):
        """The words that carry something (not greetings, fillers, yes or no)."""
        return [word for word in self.words if word not in _FILLERS]

    @cached_property
    def _entities(self):
        text = self.text[:MAX_HEARD_CHARS]
        return entities(_english_digits(text) if self.context.language == "en" else text, now=self.context.now)

    @cached_property
    def phone(self):
        """The last phone number said, in E.164 (a correction names the right one last)."""
        found = [_e164(entity["value"]) for entity in self._entities if entity["type"] == "phone"]
        found = [number for number in found if number]
        return found[-1] if found else None

    @cached_property
    def loose_phone(self):
        """A number said when one was asked for, in whatever words: all its digits, a
        missing leading zero added."""
        if self.phone:
            return self.phone
        text = self.low[:MAX_HEARD_CHARS]
        text = _english_digits(text) if self.context.language == "en" else text
        digits = ""
        for token in re.findall(r"\+|\d+|[a-zäöüß]+", text):
            if token.isdigit() or token == "+":
                digits += token
            elif token not in ("ein", "eine", "einen", "einer"):
                value = number_of(token)
                if value is not None and value < 100:
                    digits += str(value)
        national = digits.lstrip("+")
        if not 6 <= len(national) <= 15:
            return None
        if not digits.startswith(("+", "0")):
            digits = ("+" if digits.startswith("49") and len(digits) > 11 else "0") + digits
        return _e164(digits)

    @cached_property
    def no(self):
        return bool(_NO.search(self.low))

    @cached_property
    def yes(self):
        return not self.no and bool(_YES.search(self.low))

    @cached_property
    def when(self):
        """The time said in this utterance, or None."""
        found = _When()
        now = self.context.now
        if self.context.language == "en":
            self._english_when(found)
        else:
            for entity in self._entities:
                if entity["type"] == "datetime":
                    moment = datetime.fromisoformat(entity["value"])
                    found.day, found.clock = moment.date(), moment.time().replace(tzinfo=None)
                elif entity["type"] == "date":
                    found.day = date.fromisoformat(entity["value"])
                elif entity["type"] == "time":
                    found.clock = time.fromisoformat(entity["value"])
                else:
                    continue
                found.said.append(entity["text"])
            if re.search(r"\bheute\s+(?:früh|morgen)\b", self.low):
                found.day, found.part = now.date(), "am"
        for part, cue in _PARTS:
            match = cue.search(self.low)
            if match and found.part is None:
                found.part = part
                found.said.append(match.group(0))
        if not (found.day or found.clock or found.part):
            match = _SOON.search(self.low)
            if match:
                found.soon = True
                found.said.append(match.group(0))
        return found if (found.day or found.clock or found.part or found.soon) else None

    def _english_when(self, found):
        today = self.context.now.date()
        low = _english_digits(self.low)
        day = _EN_DAY.search(low)
        if day:
            word = day.group(1).lower()
            if word in ("today", "tonight"):
                found.day = today
            elif word == "tomorrow":
                found.day = today + timedelta(days=1)
            elif word == "day after tomorrow":
                found.day = today + timedelta(days=2)
            else:
                weekday = _EN_WEEKDAYS.index(word.split()[-1])
                ahead = (weekday - today.weekday()) % 7 or 7
                found.day = today + timedelta(days=ahead)
            found.said.append(day.group(0))
        clock = _EN_CLOCK.search(low)
        if clock:
            hour = int(clock.group(1) or clock.group(4))
            minute = int(clock.group(2) or clock.group(5) or 0)
            marker = (clock.group(3) or clock.group(6) or "").replace(".", "")
            if marker == "pm" and hour < 12:
                hour += 12
            elif marker == "am" and hour == 12:
                hour = 0
            elif marker not in ("am", "pm") and 1 <= hour <= 6:
                hour += 12  # a business line's hours: "at three" is 15:00
            if hour <= 23 and minute <= 59:
                found.clock = time(hour, minute)
                found.said.append(clock.group(0).strip())


# --- What the policy says -----------------------------------------------------------

_SAY = {
    "de": {
        "hello": "Guten Tag! Wie kann ich Ihnen helfen?",
        "pardon": "Entschuldigung, das habe ich nicht verstanden. Wie kann ich Ihnen helfen?",
        "what": "Gern. Was kann ich für Sie tun?",
        "else": "Kann ich sonst noch etwas für Sie tun?",
        "thanks": "Sehr gern.",
        "ok": "Alles klar.",
        "bye": "Vielen Dank für Ihren Anruf. Auf Wiederhören!",
        "bye_short": "Auf Wiederhören!",
        "intro_callback": "Gern ruft Sie ein Mitarbeiter zurück.",
        "intro_appointment": "Gern nehme ich Ihren Terminwunsch auf; ein Mitarbeiter ruft Sie zur Bestätigung "
                             "zurück.",
        "intro_transfer": "Direkt verbinden kann ich Sie gerade leider nicht, aber gern ruft Sie ein Mitarbeiter "
                          "zurück.",
        "intro_yes": "Gern.",
        "ask_caller": "Unter der Nummer, von der Sie gerade anrufen?",
        "ask_caller_again": "Sollen wir Sie unter der Nummer zurückrufen, von der Sie gerade anrufen? Bitte "
                            "antworten Sie mit Ja oder Nein.",
        "ask_phone": "Unter welcher Nummer sind Sie am besten erreichbar?",
        "ask_phone_again": "Entschuldigung, die Nummer habe ich nicht verstanden. Bitte nennen Sie mir Ihre "
                           "Telefonnummer noch einmal, Ziffer für Ziffer.",
        "ask_phone_corrected": "Bitte nennen Sie mir die Nummer noch einmal, Ziffer für Ziffer.",
        "read_back": "Ich wiederhole: {digits}. Ist das richtig?",
        "read_back_again": "Ist die Nummer {digits} richtig? Bitte antworten Sie mit Ja oder Nein.",
        "ask_time_callback": "Wann passt Ihnen der Rückruf am besten?",
        "ask_time_appointment": "Für wann wünschen Sie den Termin?",
        "no_callback_tool": "Einen Rückruf kann ich in diesem Gespräch leider nicht aufnehmen. Bitte versuchen "
                            "Sie es später noch einmal.",
        "callback_declined": "Alles klar, dann notiere ich keinen Rückruf.",
        "confirm_callback": "Vielen Dank, wir rufen Sie{details} zurück.",
        "confirm_appointment": "Vielen Dank, Ihr Terminwunsch{when} ist notiert; wir rufen Sie{number} zur "
                               "Bestätigung zurück.",
        "for": " für {when}",
        "number_refused": "Diese Nummer konnte ich leider nicht speichern.",
        "callback_failed": "Den Rückruf konnte ich leider nicht anlegen. Bitte rufen Sie später noch einmal an.",
        "no_knowledge": "Dazu liegt mir leider keine Auskunft vor.",
        "offer_callback": "Gern ruft Sie ein Mitarbeiter dazu zurück. Soll ich einen Rückruf notieren?",
        "offer_callback_plain": "Soll ein Mitarbeiter Sie zurückrufen?",
        "colleague": "Bitte wenden Sie sich dazu an unsere Mitarbeiter.",
        "transferring": "Einen Moment bitte, ich verbinde Sie weiter.",
        "transferred": "Sie werden jetzt verbunden.",
        "transfer_failed": "Das Weiterverbinden hat leider nicht geklappt.",
        "no_transfer": "Direkt verbinden kann ich Sie gerade leider nicht. Bitte versuchen Sie es später noch "
                       "einmal.",
        "opt_out": "Selbstverständlich. Ich vermerke, dass Sie keine Anrufe mehr von uns wünschen.",
        "opted_out": "Ihr Wunsch ist vermerkt. Entschuldigen Sie die Störung. Auf Wiederhören!",
        "opt_out_failed": "Ihren Wunsch gebe ich an unsere Mitarbeiter weiter. Entschuldigen Sie die Störung. Auf "
                          "Wiederhören!",
        "opt_out_plain": "Selbstverständlich. Ich gebe weiter, dass Sie keine Anrufe mehr von uns wünschen. "
                         "Entschuldigen Sie die Störung. Auf Wiederhören!",
        "soon": "so bald wie möglich",
        "as_wished": "zu Ihrer Wunschzeit",
        "under": " unter der Nummer {number}",
        "note_callback": "Rückrufwunsch: {words}",
        "note_appointment": "Terminwunsch: {words}",
        "note_transfer": "Möchte mit einem Mitarbeiter sprechen: {words}",
        "note_question": "Frage: {words}",
        "note_when": "Wunschzeit: {words}",
        "reason_bye": "Der Anrufer hat sich verabschiedet.",
        "reason_opt_out": "Der Anrufer wünscht keine weiteren Anrufe.",
        "reason_transfer": "Der Anrufer möchte mit einem Mitarbeiter sprechen.",
    },
    "en": {
        "hello": "Hello! How can I help you?",
        "pardon": "Sorry, I did not catch that. How can I help you?",
        "what": "Of course. What can I do for you?",
        "else": "Is there anything else I can do for you?",
        "thanks": "You are welcome.",
        "ok": "All right.",
        "bye": "Thank you for calling. Goodbye!",
        "bye_short": "Goodbye!",
        "intro_callback": "A colleague will gladly call you back.",
        "intro_appointment": "I will gladly take your appointment request; a colleague will call you back to "
                             "confirm it.",
        "intro_transfer": "I cannot put you through right now, but a colleague will gladly call you back.",
        "intro_yes": "Of course.",
        "ask_caller": "On the number you are calling from?",
        "ask_caller_again": "Shall we call you back on the number you are calling from? Please answer yes or no.",
        "ask_phone": "Which number can we reach you on?",
        "ask_phone_again": "Sorry, I did not catch the number. Please tell me your phone number again, digit by "
                           "digit.",
        "ask_phone_corrected": "Please tell me the number again, digit by digit.",
        "read_back": "Let me repeat: {digits}. Is that right?",
        "read_back_again": "Is the number {digits} right? Please answer yes or no.",
        "ask_time_callback": "When would suit you best for the call?",
        "ask_time_appointment": "When would you like the appointment?",
        "no_callback_tool": "I cannot take a callback request in this conversation, sorry. Please try again later.",
        "callback_declined": "All right, then I will not note a callback.",
        "confirm_callback": "Thank you, we will call you back{details}.",
        "confirm_appointment": "Thank you, your appointment request{when} is noted; we will call you back"
                               "{number} to confirm it.",
        "for": " for {when}",
        "number_refused": "I could not save that number, sorry.",
        "callback_failed": "I could not note the callback, sorry. Please call again later.",
        "no_knowledge": "I am afraid I have no information on that.",
        "offer_callback": "A colleague can call you back about it. Shall I note a callback?",
        "offer_callback_plain": "Shall a colleague call you back?",
        "colleague": "Please ask one of our colleagues about it.",
        "transferring": "One moment please, I will put you through.",
        "transferred": "You are being put through now.",
        "transfer_failed": "I could not put you through, sorry.",
        "no_transfer": "I cannot put you through right now, sorry. Please try again later.",
        "opt_out": "Of course. I am noting that you do not wish to receive any more calls from us.",
        "opted_out": "Your wish is noted. Sorry for the disturbance. Goodbye!",
        "opt_out_failed": "I will pass your wish on to our colleagues. Sorry for the disturbance. Goodbye!",
        "opt_out_plain": "Of course. I will pass on that you do not wish to receive any more calls from us. Sorry "
                         "for the disturbance. Goodbye!",
        "soon": "as soon as possible",
        "as_wished": "at the time you asked for",
        "under": " on {number}",
        "note_callback": "Callback request: {words}",
        "note_appointment": "Appointment request: {words}",
        "note_transfer": "Wants to speak to a colleague: {words}",
        "note_question": "Question: {words}",
        "note_when": "Preferred time: {words}",
        "reason_bye": "The caller said goodbye.",
        "reason_opt_out": "The caller wishes no further calls.",
        "reason_transfer": "The caller wants to speak to a colleague.",
    },
}
_GERMAN_MONTH_NAMES = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
                       "Oktober", "November", "Dezember")
_GERMAN_WEEKDAYS = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag")
_GERMAN_PART_NOUNS = {"am": "Vormittag", "pm": "Nachmittag", "evening": "Abend"}
_ENGLISH_PARTS = {"am": "in the morning", "pm": "in the afternoon", "evening": "in the evening"}
_ENGLISH_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_ENGLISH_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                   "November", "December")


def _display(e164):
    """A number as a caller writes it: national for German numbers, else international."""
    number = phonenumbers.parse(e164, None)
    if phonenumbers.region_code_for_number(number) == "DE":
        return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)


def _chunks(digits):
    """Digit groups as spoken (speech_app.spoken's rule): up to five digits one group,
    longer ones in threes, the end in fours."""
    if len(digits) <= 5:
        return [digits]
    tail = {0: 0, 1: 4, 2: 8}[len(digits) % 3]
    head = digits[:len(digits) - tail]
    return [head[i:i + 3] for i in range(0, len(head), 3)] + [digits[len(head):][i:i + 4] for i in range(0, tail, 4)]


def read_back(e164, language):
    """The number digit by digit in its groups, as the caller hears it read back:
    "null eins sieben sechs, eins zwei drei vier, fünf sechs sieben acht"."""
    shown = _display(e164)
    if language == "de":
        return spoken_form(shown)
    groups = [re.sub(r"\D", "", group) for group in shown.split()]
    spoken = []
    for group in groups:
        spoken += [" ".join(_ENGLISH_DIGITS[int(d)] for d in chunk) for chunk in _chunks(group) if chunk]
    return ("plus " if shown.startswith("+") else "") + ", ".join(spoken)


# --- The dialogue -------------------------------------------------------------------

# What the policy asked last: a question of a callback's, or one of its own.
_FLOW_QUESTIONS = ("confirm_caller", "phone", "confirm_phone", "time")


@dataclass
class _Flow:
    """A callback being taken down."""

    kind: str  # callback, appointment, transfer
    note: str
    phone: str | None = None
    confirmed: bool = False
    caller_declined: bool = False
    misses: int = 0
    when: _When = field(default_factory=_When)
    time_asked: bool = False
    sent: bool = False
    bye: bool = False  # the caller said goodbye: after the callback, the goodbye and end_call


@dataclass
class _State:
    pending: str | None = None
    flow: _Flow | None = None
    offer_note: str = ""  # the note of the callback offered
    question: str = ""  # what was looked up last
    calls: dict = field(default_factory=dict)  # tool call id → (name, arguments)
    seen: int = 0  # tool calls in the history


@dataclass
class _Reply:
    text: str = ""
    calls: list = field(default_factory=list)  # (name, arguments)
    pending: str | None = None


def _result(content):
    """(ok, data) of a tool message's content: JSON where it is JSON; an `ok: false` or
    an `error` is a failure."""
    try:
        data = json_text(content or "")
    except ValueError:
        return not re.match(r"\s*(?:error|fehler)\b", content or "", re.IGNORECASE), content or ""
    if isinstance(data, dict) and (data.get("ok") is False or ("error" in data and data.get("ok") is not True)):
        return False, data
    return True, data


def _passages(data):
    """The passages' texts in a lookup's result: `passages` (strings or objects with
    `text`) at the top or under `result`, or the whole text."""
    if isinstance(data, str):
        return [data] if data.strip() else []
    found = None
    for holder in (data, data.get("result") if isinstance(data, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("passages"), list):
            found = holder["passages"]
            break
    if found is None and isinstance(data, list):
        found = data
    texts = []
    for passage in found or ():
        if isinstance(passage, str):
            texts.append(passage)
        elif isinstance(passage, dict) and isinstance(passage.get("text"), str):
            texts.append(passage["text"])
    return [text for text in texts if text.strip()]


def _stems(text):
    return {word[:5] for word in _WORD.findall(text.lower()) if len(word) > 2 and word not in _STOP}


def _sentences(text):
    """The sentences of a passage (headings left out), by the one German splitter:
    "Praxis Dr. Weber" or "am 3. Dezember" are no sentence ends."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return split_sentences(" ".join(" ".join(lines).split()))


def answer_from(passages, question, *, limit=2, max_chars=320):
    """The sentences of the passages that answer `question` best (most of its word
    stems; the better passage first; with none in common, the first sentence of the
    search's best passage), at most `limit`; "" when none is left. Never taken: sentences that speak to the assistant or tell anyone
    what to do (imperatives), and sentences with a phone number unless the caller
    asked for one — a passage or a tool's answer is data, quoted only as the answer."""
    wanted = _stems(question)
    numbers_wanted = bool(_ASKS_NUMBER.search(question))
    scored = []
    for rank, passage in enumerate(passages[:3]):
        for index, sentence in enumerate(_sentences(passage)):
            if _INSTRUCTIONS.search(sentence) or _IMPERATIVE.search(sentence):
                continue
            if not numbers_wanted and _NUMBER_IN.search(sentence) and _digits_in(sentence) >= 6:
                continue
            overlap = len(wanted & _stems(sentence))
            scored.append((-overlap, rank, index, sentence))
    if not scored:
        return ""
    scored.sort()
    best = scored[0]
    if best[0] == 0:  # no word in common: the search's best passage, its first sentence left
        chosen = [min(scored, key=lambda item: (item[1], item[2]))]
    else:
        chosen = [best] + [item for item in scored[1:limit] if item[0] < 0 and item[1] == best[1]]
    chosen.sort(key=lambda item: (item[1], item[2]))
    text = " ".join(item[3] for item in chosen)
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def _digits_in(text):
    return max((sum(c.isdigit() for c in found) for found in _NUMBER_IN.findall(text)), default=0)


class DialoguePolicy:
    """The mock lane's dialogue over tools (see the module): registered from
    agent_app's AppConfig.ready(); turns without tools get the rule set's answer."""

    calls_tools = True

    def __init__(self):
        self._rule_set = RuleSetPolicy()

    def __call__(self, request):
        if not request.tools or request.tool_choice == "none":
            yield from self._rule_set(request)
            return
        try:
            context = Context.of(request)
            state = _State()
            reply = self._forced(request, context, self.decide(request, context, state))
        except Exception:  # noqa: BLE001 - a turn is never lost to a flaw of the policy: the rule set answers
            logger.exception("The offline dialogue policy failed on a turn; the rule set answers it")
            yield from self._rule_set(request)
            return
        for word in re.findall(r"\S+\s*", reply.text):
            yield TextDelta(word)
        for index, (name, arguments) in enumerate(reply.calls, start=1):
            yield ToolCall(f"call_{state.seen + index}", name, arguments)

    # -- The history, replayed ---------------------------------------------------------
    def decide(self, request, context, state):
        """The answer to the history's last message, every earlier one replayed into `state`."""
        reply, results, users = None, [], 0
        for message in request.messages:
            role = message["role"]
            if role == "system":
                continue
            if role != "tool" and results:
                reply = self._after_tools(state, context, results)
                state.pending, results = reply.pending, []
            if role == "user":
                users += 1
                reply = self._hear(state, context, _Heard(message["content"] or "", context))
                state.pending = reply.pending
            elif role == "assistant":
                for call in message.get("tool_calls") or ():
                    try:
                        arguments = json_text(call["function"]["arguments"] or "{}")
                    except ValueError:
                        arguments = {}
                    state.calls[call["id"]] = (call["function"]["name"], arguments)
                    state.seen += 1
                reply = None
            elif role == "tool":
                name, arguments = state.calls.get(message.get("tool_call_id"), (message.get("name") or "", {}))
                results.append((name, arguments, message["content"] or ""))
        if results:
            reply = self._after_tools(state, context, results)
        if reply is None:
            say = _SAY[context.language]
            reply = _Reply(say["else"], pending="else") if users else _Reply(say["hello"])
        return reply

    def _forced(self, request, context, reply):
        """The answer within `tool_choice`: a named function allows only that one; a
        required tool with nothing to call looks the caller's words up when it can."""
        choice = request.tool_choice
        named = choice["function"]["name"] if isinstance(choice, dict) else None
        if named is not None and any(name != named for name, _ in reply.calls):
            calls = [call for call in reply.calls if call[0] == named]
            reply = _Reply(reply.text or _SAY[context.language]["else"], calls, reply.pending)
        if request.tool_required and not reply.calls and named in (None, "lookup_knowledge"):
            query = request.last_user_text().strip()
            calls = self._call(context, "lookup_knowledge", {"query": query}) if query else []
            if calls:
                return _Reply("", calls, "looking_up")
        return reply

    # -- A caller's utterance ------------------------------------------------------------
    def _hear(self, state, context, heard):
        say = _SAY[context.language]
        if state.flow is not None and state.flow.sent:
            state.flow = None  # sent, and no result came back: that callback is over
        if _OPT_OUT.search(heard.low):
            state.flow = None
            return self._opt_out(context)
        number_said = heard.phone is not None
        pending, flow = state.pending, state.flow
        in_flow = flow is not None and pending in _FLOW_QUESTIONS
        if _GOODBYE.search(heard.low) and not number_said:
            if in_flow and pending in ("confirm_caller", "confirm_phone", "time"):
                flow.bye = True  # "Ja, genau. Tschüss!": the callback first, then the goodbye
                reply = self._answer(state, context, heard)
                if reply.calls:
                    return reply
            state.flow = None
            return self._goodbye(context)
        if self._wants_person(heard, context) and not number_said:
            state.flow = None
            return self._transfer(state, context, heard)
        if in_flow:
            return self._answer(state, context, heard)
        if pending == "offer":
            if heard.no and not number_said:
                state.offer_note = ""
                return _Reply(f"{say['ok']} {say['else']}", pending="else")
            if heard.yes or number_said:
                note = state.offer_note or say["note_callback"].format(words=heard.text)
                return self._start(state, context, heard, "callback", note=note, intro=say["intro_yes"])
        if pending == "else" and not heard.content:
            if heard.no:
                return self._goodbye(context)
            if heard.yes:
                return _Reply(say["what"])
        if _CALLBACK.search(heard.low):
            return self._start(state, context, heard, "callback")
        if _APPOINTMENT.search(heard.low):
            return self._start(state, context, heard, "appointment")
        few = len(heard.content) < 2
        if _ANNOUNCED.search(heard.low) and len(heard.content) <= 4 and "?" not in heard.low:
            return _Reply(say["what"])  # "Ich hätte noch eine Frage." – the question comes next
        if _THANKS.search(heard.low) and few:
            return _Reply(f"{say['thanks']} {say['else']}", pending="else")
        if few and not _QUESTION.search(heard.low):
            if _GREETING.search(heard.low):
                return _Reply(say["hello"])
            if not heard.content:
                return _Reply(say["what"] if heard.yes else say["pardon"])
        return self._look_up(state, context, heard)

    def _wants_person(self, heard, context):
        if _CONNECT.search(heard.low):
            return True
        if not _TALK.search(heard.low):
            return False
        return bool(_PERSON.search(heard.low)) or any(
            re.search(rf"\b{re.escape(name.lower())}\b", heard.low) for name in context.targets)

    # -- A callback ------------------------------------------------------------------------
    def _start(self, state, context, heard, kind, *, note=None, intro=None):
        say = _SAY[context.language]
        if "create_callback" not in context.tools:
            return _Reply(f"{say['no_callback_tool']} {say['else']}", pending="else")
        flow = state.flow = _Flow(kind=kind, note=note or say[f"note_{kind}"].format(words=heard.text))
        if heard.phone:
            flow.phone, flow.confirmed = heard.phone, not context.spoken
        if heard.when:
            flow.when.merge(heard.when)
        return self._next(state, context, intro=say[f"intro_{kind}"] if intro is None else intro)

    def _answer(self, state, context, heard):
        """The caller's answer to a callback's question."""
        say, flow, pending = _SAY[context.language], state.flow, state.pending
        when = heard.when
        if pending == "time":
            if when:
                flow.when.merge(when)
            elif heard.no:
                flow.when.merge(_When(soon=True))
            else:
                words = heard.text[:MAX_TIME_WORDS]
                flow.when.merge(_When(words=words, said=[words]))
            if heard.phone and heard.phone != flow.phone:
                flow.phone, flow.confirmed = heard.phone, not context.spoken
            return self._next(state, context)
        if when:
            flow.when.merge(when)
        if pending == "confirm_caller":
            if heard.phone:
                flow.phone, flow.confirmed = heard.phone, not context.spoken
            elif heard.no:
                flow.caller_declined = True
            elif heard.yes:
                flow.phone, flow.confirmed = context.caller, True
            else:
                return _Reply(say["ask_caller_again"], pending="confirm_caller")
            return self._next(state, context)
        if pending == "phone":
            number = heard.loose_phone
            if number:
                flow.phone, flow.confirmed, flow.misses = number, not context.spoken, 0
                return self._next(state, context)
            if heard.no:
                state.flow = None
                return _Reply(f"{say['callback_declined']} {say['else']}", pending="else")
            flow.misses += 1
            return self._next(state, context)
        # confirm_phone: the number was read back
        number = heard.phone or (None if heard.yes else heard.loose_phone)
        if heard.no:
            if not number:
                flow.phone, flow.misses = None, 0
                return _Reply(say["ask_phone_corrected"], pending="phone")
            flow.phone = number
        elif heard.yes and number in (None, flow.phone):
            flow.confirmed = True
        elif number:
            flow.phone = number
        else:
            return _Reply(say["read_back_again"].format(digits=read_back(flow.phone, context.language)),
                          pending="confirm_phone")
        return self._next(state, context)

    def _next(self, state, context, *, intro=""):
        """The callback's next question, or the call of create_callback."""
        say, flow = _SAY[context.language], state.flow
        schema = context.tools["create_callback"]
        lead = f"{intro} " if intro else ""
        if flow.phone is None and _property_name(schema, "phone"):
            if context.caller and not flow.caller_declined:
                return _Reply(lead + say["ask_caller"], pending="confirm_caller")
            return _Reply(lead + say["ask_phone_again" if flow.misses else "ask_phone"], pending="phone")
        if flow.phone and not flow.confirmed:
            return _Reply(lead + say["read_back"].format(digits=read_back(flow.phone, context.language)),
                          pending="confirm_phone")
        time_name = _property_name(schema, "time")
        wants_time = time_name and (context.spoken or time_name in _required(schema))
        if wants_time and not flow.when.known() and not flow.time_asked and not flow.bye:
            flow.time_asked = True
            question = "ask_time_appointment" if flow.kind == "appointment" else "ask_time_callback"
            return _Reply(lead + say[question], pending="time")
        return self._send(state, context, lead)

    def _send(self, state, context, lead):
        say, flow = _SAY[context.language], state.flow
        note = flow.note
        when_said = ", ".join(flow.when.said)
        if when_said and when_said.lower() not in note.lower():
            note = f"{note} ({say['note_when'].format(words=when_said)})"
        arguments = tool_arguments(context.tools["create_callback"], {
            "phone": flow.phone, "time": self._time_value(flow.when, context), "note": note[:MAX_NOTE_CHARS]})
        if arguments is None:
            state.flow = None
            return _Reply(f"{lead}{say['callback_failed']} {say['else']}", pending="else")
        flow.sent = True
        return _Reply(lead.strip(), [("create_callback", arguments)], pending="sent")

    def _moment(self, when, context):
        """The wished time as a moment on the tenant's clock, or None (not said, or only
        "as soon as possible" or words the policy cannot read)."""
        if not (when.day or when.clock or when.part):
            return None
        now = context.now
        clock = when.clock or _PART_START.get(when.part) or time(9)
        day = when.day
        if day is None:
            end = clock if when.clock else _PART_END.get(when.part, clock)
            later_today = datetime.combine(now.date(), end, tzinfo=now.tzinfo) > now
            day = now.date() if later_today else now.date() + timedelta(days=1)
        moment = datetime.combine(day, clock, tzinfo=now.tzinfo)
        if moment < now:  # a day part already begun: from the next quarter hour
            moment = (now + timedelta(minutes=15 - now.minute % 15)).replace(second=0, microsecond=0)
        return moment

    def _time_value(self, when, context):
        """What create_callback is given as the time: an ISO 8601 moment where one was
        said, "so bald wie möglich" / "as soon as possible", else the caller's words."""
        moment = self._moment(when, context)
        if moment is not None:
            return moment.isoformat()
        if when.soon:
            return _SAY[context.language]["soon"]
        return when.words or None

    def _when_words(self, when, context):
        """The wished time as the confirmation says it ("morgen um 14:30 Uhr"); "" when
        none was said."""
        say = _SAY[context.language]
        moment = self._moment(when, context)
        if moment is None:
            return say["soon"] if when.soon else say["as_wished"] if when.words else ""
        ahead = (moment.date() - context.now.date()).days
        if context.language == "de":
            day = {0: "heute", 1: "morgen", 2: "übermorgen"}.get(ahead)
            if day is None:
                day = (f"am {_GERMAN_WEEKDAYS[moment.weekday()]}" if ahead < 7
                       else f"am {moment.day}. {_GERMAN_MONTH_NAMES[moment.month - 1]}")
            if when.clock:
                clock = f"{moment.hour} Uhr" if not moment.minute else f"{moment.hour}:{moment.minute:02d} Uhr"
                return f"{day} um {clock}"
            return f"{day} {_GERMAN_PART_NOUNS[when.part]}" if when.part else day
        day = {0: "today", 1: "tomorrow"}.get(ahead)
        if day is None:
            day = (f"on {_EN_WEEKDAYS[moment.weekday()].capitalize()}" if ahead < 7
                   else f"on {moment.day} {_ENGLISH_MONTHS[moment.month - 1]}")
        if when.clock:
            hour = moment.hour % 12 or 12
            clock = f"{hour}:{moment.minute:02d}" if moment.minute else f"{hour}"
            return f"{day} at {clock} {'am' if moment.hour < 12 else 'pm'}"
        return f"{day} {_ENGLISH_PARTS[when.part]}" if when.part else day

    def _confirmation(self, flow, context):
        """What is said once the callback is noted."""
        say = _SAY[context.language]
        number = say["under"].format(number=_display(flow.phone)) if flow.phone and not context.spoken else ""
        when = self._when_words(flow.when, context)
        if flow.kind == "appointment":
            if when:  # "für Dienstag Vormittag", "für den 3. Dezember"
                when = re.sub(r"^(?:am|on) (?=\d)", "den " if context.language == "de" else "", when)
                when = say["for"].format(when=re.sub(r"^(?:am|on) ", "", when))
            return say["confirm_appointment"].format(when=when, number=number)
        return say["confirm_callback"].format(details=(f" {when}" if when else "") + number)

    # -- The other intents -------------------------------------------------------------
    def _goodbye(self, context):
        say = _SAY[context.language]
        calls = self._call(context, "end_call", {"reason": say["reason_bye"]})
        return _Reply(say["bye"], calls, pending="ended" if calls else None)

    def _opt_out(self, context):
        say = _SAY[context.language]
        calls = self._call(context, "opt_out", {"reason": say["reason_opt_out"]})
        if calls:
            return _Reply(say["opt_out"], calls, pending="opting_out")
        return _Reply(say["opt_out_plain"], self._call(context, "end_call", {"reason": say["reason_opt_out"]}),
                      pending="ended")

    def _transfer(self, state, context, heard):
        say = _SAY[context.language]
        if "transfer_call" in context.tools and context.targets:
            target = next((name for name in context.targets
                           if re.search(rf"\b{re.escape(name.lower())}\b", heard.low)), context.targets[0])
            calls = self._call(context, "transfer_call", {"target": target, "reason": say["reason_transfer"]})
            if calls:
                return _Reply(say["transferring"], calls, pending="transferring")
        if "create_callback" in context.tools:
            return self._start(state, context, heard, "transfer")
        return _Reply(f"{say['no_transfer']} {say['else']}", pending="else")

    def _look_up(self, state, context, heard):
        state.question = heard.text
        calls = self._call(context, "lookup_knowledge", {"query": heard.text}) if heard.text else []
        if calls:
            return _Reply("", calls, pending="looking_up")
        return self._unknown(state, context, heard.text)

    def _unknown(self, state, context, question):
        """Nothing to answer from: a callback is offered."""
        say = _SAY[context.language]
        if "create_callback" in context.tools:
            state.offer_note = say["note_question"].format(words=question) if question else ""
            return _Reply(f"{say['no_knowledge']} {say['offer_callback']}", pending="offer")
        return _Reply(f"{say['no_knowledge']} {say['colleague']} {say['else']}", pending="else")

    def _call(self, context, name, values):
        if name not in context.tools:
            return []
        arguments = tool_arguments(context.tools[name], values)
        return [] if arguments is None else [(name, arguments)]

    # -- Tool results ----------------------------------------------------------------------
    def _after_tools(self, state, context, results):
        """The answer to a round of tool results (the first result of each tool counts)."""
        say = _SAY[context.language]
        by_name = {}
        for name, _arguments, content in results:
            by_name.setdefault(name, _result(content))
        if "create_callback" in by_name:
            ok, data = by_name["create_callback"]
            flow = state.flow or _Flow(kind="callback", note="")
            state.flow = None
            if ok:
                text = self._confirmation(flow, context)
                if flow.bye:
                    calls = self._call(context, "end_call", {"reason": say["reason_bye"]})
                    return _Reply(f"{text} {say['bye']}", calls, pending="ended")
                return _Reply(f"{text} {say['else']}", pending="else")
            if "phone" in json.dumps(data, ensure_ascii=False).lower():
                flow.phone, flow.confirmed, flow.sent, flow.caller_declined = None, False, False, True
                state.flow = flow
                return _Reply(f"{say['number_refused']} {say['ask_phone']}", pending="phone")
            return _Reply(f"{say['callback_failed']} {say['else']}", pending="else")
        if "opt_out" in by_name:
            calls = self._call(context, "end_call", {"reason": say["reason_opt_out"]})
            return _Reply(say["opted_out" if by_name["opt_out"][0] else "opt_out_failed"], calls, pending="ended")
        if "transfer_call" in by_name:
            if by_name["transfer_call"][0]:
                return _Reply(say["transferred"], pending="transferred")
            if "create_callback" in context.tools:
                state.offer_note = say["reason_transfer"]
                return _Reply(f"{say['transfer_failed']} {say['offer_callback_plain']}", pending="offer")
            return _Reply(f"{say['transfer_failed']} {say['else']}", pending="else")
        if "lookup_knowledge" in by_name:
            ok, data = by_name["lookup_knowledge"]
            text = answer_from(_passages(data), state.question) if ok else ""
            if text:
                return _Reply(f"{text} {say['else']}", pending="else")
            return self._unknown(state, context, state.question)
        if "end_call" in by_name:
            return _Reply(say["bye_short"], pending="ended")
        return _Reply(say["else"], pending="else")
