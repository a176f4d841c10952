"""The `mock` mode: deterministic German and English answers from a small rule set.

The same prompt always gets the same answer, so development, tests and demos work
without any key and without anything leaving the machine. The language is the
request's (`de` or `en`), else guessed from the prompt; German is the default.

A conversation's turn (`gateway_app.services.gateway_chat`) on the mock lane is
answered by its *policy*: by default `RuleSetPolicy`, the rule set's answer to the
last user message, streamed word by word, without tools. A dialogue policy that
calls tools (the offline assistant) takes its place with `register_mock_policy`,
from the AppConfig.ready() of the app that owns it (gateway_app imports no app
above it): it gets the checked ChatRequest (messages, tools, tool_choice, language)
and yields TextDeltas and ToolCalls; the gateway adds the end, the counts and the
lane, exactly as for a real lane.
"""
import re

from gateway_app.turns import LaneEnd, TextDelta, ToolCall, normal_finish

# Words that tell the languages apart in short prompts (umlauts and ß count as German too).
_GERMAN_WORDS = frozenset(
    "der die das und ich sie wir nicht ist sind haben hat wann wie was wo bitte danke ein eine einen mit für "
    "auf zu von den dem bei heute morgen guten tag ihr ihre ihnen können kann möchte würde gern gerne".split())
_ENGLISH_WORDS = frozenset(
    "the and is are you we not when how what where please thanks thank a an with for on to from at today "
    "tomorrow good day your can could would like i my hi hello there yes".split())
_WORD = re.compile(r"[a-zäöüß]+")

# (topic, cues): the first topic with a cue in the prompt answers. A cue matches at the
# start of a word (so stems match inflections: "zusammenfass" in "zusammenfassen");
# `\b` ends a cue that must be a whole word. Cues of both languages count for either:
# "Termin" in an English sentence is still about an appointment.
_RULES = tuple((topic, re.compile(r"\b(?:" + "|".join(cues) + ")")) for topic, cues in (
    ("ping", ("ping\\b",)),
    ("hours", ("geöffnet", "öffnungszeit", "offen\\b", "aufhaben", "sprechzeit", "open", "business hours")),
    ("appointment", ("termin", "appointment", "booking", "book an?\\b")),
    ("callback", ("rückruf", "zurückrufen", "anrufen", "call back", "callback", "call me")),
    ("price", ("preis", "kosten", "kostet", "price", "cost", "how much")),
    ("summary", ("fasse", "zusammenfass", "summar")),
    ("thanks", ("danke", "thank")),
    ("farewell", ("tschüss", "auf wiederhören", "auf wiedersehen", "bye\\b", "goodbye")),
    ("greeting", ("hallo", "guten (?:tag|morgen|abend)", "servus", "moin\\b", "hello", "hi\\b",
                  "good (?:morning|evening)")),
))

_ANSWERS = {
    "de": {
        "ping": "pong",
        "hours": "Die Praxis ist Montag bis Freitag von 8 bis 18 Uhr geöffnet, samstags von 9 bis 13 Uhr.",
        "appointment": "Gern vereinbare ich einen Termin. Welcher Tag passt Ihnen am besten?",
        "callback": "Gern ruft Sie ein Mitarbeiter zurück. Unter welcher Nummer sind Sie erreichbar?",
        "price": "Die Preise hängen von der Leistung ab. Ein Mitarbeiter nennt Ihnen gern die genauen Kosten.",
        "summary": "Zusammenfassung: Der Anrufer hat ein Anliegen geschildert und wünscht eine Rückmeldung.",
        "thanks": "Sehr gern. Kann ich sonst noch etwas für Sie tun?",
        "farewell": "Vielen Dank für Ihren Anruf. Auf Wiederhören!",
        "greeting": "Guten Tag! Wie kann ich Ihnen helfen?",
        "default": "Vielen Dank für Ihre Nachricht ({words} Wörter). Ein Mitarbeiter meldet sich bei Ihnen.",
    },
    "en": {
        "ping": "pong",
        "hours": "The practice is open Monday to Friday from 8 am to 6 pm and on Saturdays from 9 am to 1 pm.",
        "appointment": "I will gladly arrange an appointment. Which day suits you best?",
        "callback": "A colleague will gladly call you back. Which number can you be reached at?",
        "price": "Prices depend on the service. A colleague will gladly tell you the exact cost.",
        "summary": "Summary: the caller described a request and would like a reply.",
        "thanks": "You are welcome. Is there anything else I can do for you?",
        "farewell": "Thank you for calling. Goodbye!",
        "greeting": "Hello! How can I help you?",
        "default": "Thank you for your message ({words} words). A colleague will get back to you.",
    },
}
LANGUAGES = tuple(_ANSWERS)


def guess_language(text):
    lowered = text.lower()
    if any(char in lowered for char in "äöüß"):
        return "de"
    words = _WORD.findall(lowered)
    german = sum(word in _GERMAN_WORDS for word in words)
    english = sum(word in _ENGLISH_WORDS for word in words)
    return "en" if english > german else "de"


def mock_answer(prompt, *, language=None):
    """The rule set's answer to `prompt`; `language` de/en, else guessed."""
    language = language if language in _ANSWERS else guess_language(prompt)
    lowered = prompt.lower()
    for topic, cues in _RULES:
        if cues.search(lowered):
            return _ANSWERS[language][topic]
    return _ANSWERS[language]["default"].format(words=len(prompt.split()))


class RuleSetPolicy:
    """The rule set's answer to the last user message, word by word; no tools."""

    calls_tools = False

    def __call__(self, request):
        text = mock_answer(request.last_user_text(), language=request.language)
        for word in re.findall(r"\S+\s*", text):
            yield TextDelta(word)


_policy = RuleSetPolicy()


def register_mock_policy(policy):
    """Makes `policy` answer the mock lane's turns; returns the one it replaces."""
    global _policy
    previous, _policy = _policy, policy
    return previous


def mock_policy():
    return _policy


def mock_turn(request, policy=None):
    """The mock lane's events of a turn (TextDelta…, ToolCall…, LaneEnd): the policy's,
    the text first and the tool calls after it, as a real lane streams them."""
    policy = policy or _policy
    calls = []
    for event in policy(request):
        if isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, TextDelta):
            if event.text:
                yield event
        else:
            raise TypeError(f"a policy yields TextDelta and ToolCall, not {type(event).__name__}")
    yield from calls
    yield LaneEnd(normal_finish("stop", calls))
