"""The booking flow: an appointment booked, moved or cancelled in the business's calendar
through the calendar's built-in tools (calendars_app.builtin_tools), over as many turns as
it needs.

Booking: the caller's wish ("nächste Woche Dienstag vormittag") goes to `find_slots` in
the caller's own words; when the assistant has more than one appointment type the tool
names them and the caller is asked which; the two nearest free slots are offered in words;
"den ersten", "den zweiten", "ja" or the time of one of them chooses; the name is asked
(spelled when it was not understood); `book_appointment` books it and its answer is read
back ("Dienstag, den dritten Dezember, um halb elf"). A slot taken meanwhile: the next free
ones the tool names are offered. Moving: the name, the new time, the slots, then
`move_appointment`. Cancelling: the name, then `cancel_appointment`. The caller's
appointment is found by the tool through the call's number and the name said — the
policy never names another caller's. A calendar that fails or does not answer in time
(any other failure of these tools): an apology and a callback offered.

Which slot is booked comes from the tool's own answer (its `start`), and only once the
caller chose it by its words; the name is only ever the caller's words.

Where an SMS confirmation after a booking belongs: `booked_reply` is the one place a
successful booking is answered (the hook for the messaging work's `send_sms`).
"""
import re
from dataclasses import dataclass, field
from datetime import datetime, time
from typing import Any

from agent_app.policy.arguments import offered_call, property_name
from agent_app.policy.context import Context
from agent_app.policy.cues import APPOINTMENT, FILLERS, cue
from agent_app.policy.heard import Heard
from agent_app.policy.state import Reply, State
from agent_app.policy.texts import SAY, read_back

TOOLS = ("find_slots", "book_appointment", "move_appointment", "cancel_appointment")
# What the policy asked last in the booking flow.
QUESTIONS = ("book_when", "book_type", "book_slot", "book_name", "book_which", "book_phone", "book_phone_confirm")
MOVE = cue(r"\bverschieb", r"\bverleg", r"\bumbuch", r"\bumleg", r"\banderen termin\b", r"\breschedul",
           r"\bmove (?:my|the)\b")
# A cancellation is recognised by the verb alone ("Termin" is often misheard on the phone
# band) or by the caller saying they cannot come. The phone band also loses the "s" of
# "absagen" (Whisper base: "den Termin am Dienstag ablagen", "… abnagen"): such a word
# counts only after "Termin" in the same sentence — a craft business's caller who speaks of
# "Abnahmen" means them, and no "ab?agen" is said of a Termin but "absagen".
CANCEL = cue(r"\babsag", r"\bstornier", r"\bcancel", r"\btermin\w*\b[^.?!]{0,40}\bab[^\W\d_]agen\b",
             r"\b(?:kann|können|werde|komme)\b[^.?!]{0,40}\bnicht (?:kommen|da sein|wahrnehmen)\b",
             r"\bkomme\b[^.?!]{0,30}\bnicht\b", r"\bcan(?:'t|not) (?:come|make it)\b",
             r"\btermin\w* [^.?!]{0,30}\b(?:ab|streichen)\b")
# A wish with a day or time said, or a question for something free ("Haben Sie Dienstag
# vormittag noch etwas frei?"): an appointment wish when the calendar's tools are offered.
WISH = cue(r"\bhätte gerne?\b", r"\bmöchte\b", r"\bbrauche\b", r"\bwürde gerne?\b", r"\bfrei\b",
           r"\bi(?:'d| would) like\b", r"\bavailable\b", r"\bfree\b")
# …unless it asks about the business ("Ich möchte wissen, ob Sie morgen geöffnet haben"): looked up.
ASKS_ABOUT = cue(r"\bgeöffnet\b", r"\bgeschlossen\b", r"\bauf\s*haben\b", r"\böffnungszeit", r"\bwissen\b",
                 r"\berfahren\b", r"\bopen\b", r"\bclosed\b", r"\bopening hours\b")
FIRST = cue(r"\b(?:erste[nrs]?|ersteren|1\.|früher\w*|first|earlier)\b")
SECOND = cue(r"\b(?:zweite[nrs]?|letztere[nrs]?|2\.|später\w*|second|later|latter)\b")
NAME_CUE = re.compile(r"(?:\bname\s+ist\b|\bnamen\s+ist\b|\bhei(?:ß|ss)e\b|\bname\s+is\b|\bi am\b|\bi'm\b|"
                      r"\bhier\s+(?:ist|spricht)\b|\bauf\s+(?:den\s+namen\s+)?)\s*(.*)", re.IGNORECASE)
_NAME_WORD = re.compile(r"[A-Za-zÄÖÜäöüßéèáàçñ'-]+")
_NOT_NAME = frozenset(("mein", "name", "ist", "heiße", "heisse", "bitte", "gerne", "gern", "danke", "genau",
                       "herr", "frau", "hier", "spricht", "the", "is", "my", "ja", "nein")) | FILLERS
MAX_NAME_CHARS = 80
MAX_WISH_CHARS = 200


@dataclass
class Booking:
    """An appointment being booked, moved or cancelled."""

    action: str  # book, move, cancel
    first_words: str = ""  # the caller's words that began it (which appointment, for move and cancel)
    when: str = ""  # the wish as said, for find_slots
    type: str | None = None
    types: list[str] = field(default_factory=list)
    slots: list[dict[str, str]] = field(default_factory=list)  # [{"start", "said"}] offered, at most two
    chosen: dict[str, str] | None = None
    name: str | None = None
    phone: str | None = None  # said by the caller in a conversation without a caller's number
    phone_confirmed: bool = False


def offers_booking(context: Context) -> bool:
    return "find_slots" in context.tools and "book_appointment" in context.tools


def wants_booking(heard: Heard) -> bool:
    """An appointment to book, move or cancel: "Termin", a cancellation or a move, or a
    wish with a day or time ("Haben Sie Dienstag vormittag noch etwas frei?")."""
    return bool(APPOINTMENT.search(heard.low) or CANCEL.search(heard.low) or MOVE.search(heard.low)
                or (heard.when and (heard.when.day or heard.when.clock) and WISH.search(heard.low)
                    and not ASKS_ABOUT.search(heard.low)))


def booking_start(state: State, context: Context, heard: Heard) -> Reply:
    """The caller wishes an appointment (to book, move or cancel one)."""
    action = "cancel" if CANCEL.search(heard.low) else "move" if MOVE.search(heard.low) else "book"
    needed = {"book": "book_appointment", "move": "move_appointment", "cancel": "cancel_appointment"}[action]
    say = SAY[context.language]
    if needed not in context.tools:
        return Reply(f"{say['no_booking']} {say['else']}", pending="else")
    if action != "book" and not context.caller:
        return Reply(f"{say['call_to_change']} {say['else']}", pending="else")
    booking = state.booking = Booking(action=action, first_words=heard.text[:MAX_WISH_CHARS])
    if action != "book":
        return _ask_name(context, find=True)
    if heard.when:
        booking.when = heard.text[:MAX_WISH_CHARS]
        return _find(booking, context)
    return Reply(say["ask_when_booking"], pending="book_when")


def booking_answer(state: State, context: Context, heard: Heard) -> Reply:
    """The caller's answer to a question of the booking flow."""
    booking, pending, say = state.booking, state.pending, SAY[context.language]
    assert booking is not None  # the dialogue asks only while a booking is under way
    if pending == "book_when":
        if not heard.content and not heard.when:
            return Reply(say["ask_when_move" if booking.action == "move" else "ask_when_booking"],
                         pending="book_when")
        booking.when = heard.text[:MAX_WISH_CHARS]
        return _find(booking, context)
    if pending == "book_type":
        chosen = next((name for name in booking.types if name.lower() in heard.low), None)
        if chosen is None:
            return Reply(say["ask_type"].format(types=_listed(booking.types, say)), pending="book_type")
        booking.type = chosen
        return _find(booking, context)
    if pending == "book_slot":
        return _choose(booking, context, heard)
    if pending == "book_phone":
        number = heard.loose_phone
        if number is None:
            return Reply(say["ask_phone_again"], pending="book_phone")
        booking.phone, booking.phone_confirmed = number, not context.spoken
        return _act(booking, context)
    if pending == "book_phone_confirm":
        number = heard.phone or (None if heard.yes else heard.loose_phone)
        if number and number != booking.phone:
            booking.phone = number
        elif heard.no:
            booking.phone = None
            return Reply(say["ask_phone_corrected"], pending="book_phone")
        elif heard.yes:
            booking.phone_confirmed = True
        return _act(booking, context)
    if pending == "book_which":
        booking.first_words = heard.text[:MAX_WISH_CHARS]
        return _act(booking, context)
    # book_name
    name = name_of(heard.text)
    if name is None:
        return Reply(say["ask_spelled"], pending="book_name")
    booking.name = name
    if booking.action == "move" and booking.chosen is None:
        return Reply(say["ask_when_move"], pending="book_when")
    return _act(booking, context)


def booking_result(state: State, context: Context, name: str, ok: bool, data: Any) -> Reply:
    """The answer to one of the calendar tools' results."""
    booking, say = state.booking, SAY[context.language]
    if booking is None:
        return Reply(say["else"], pending="else")
    result = data.get("result") if ok and isinstance(data, dict) else None
    code = data.get("error") if isinstance(data, dict) else None
    message = str(data.get("message") or "") if isinstance(data, dict) else ""
    if ok and isinstance(result, dict):
        if name == "find_slots":
            booking.slots = [slot for slot in result.get("slots") or () if _slot(slot)][:2]
            if not booking.slots:
                return Reply(say["nothing_free"], pending="book_when")
            return _offer(booking, context)
        said = str(result.get("said") or "")
        state.booking = None
        if name == "book_appointment":
            return booked_reply(context, booking, said, str(result.get("start") or ""))
        key = "moved" if name == "move_appointment" else "cancelled"
        return Reply(f"{say[key].format(said=said)} {say['else']}", pending="else")
    if code == "appointment_type_unknown":
        booking.types = _listed_after(message, "Terminarten:")
        if booking.types:
            return Reply(say["ask_type"].format(types=_listed(booking.types, say)), pending="book_type")
    if code == "slot_taken":
        booking.chosen, booking.slots = None, _slots_after(message)[:2]
        if booking.slots:
            return Reply(f"{say['slot_gone']} {_offer(booking, context).text}", pending="book_slot")
        return Reply(f"{say['slot_gone']} {say['nothing_free']}", pending="book_when")
    if code == "appointment_not_found":
        state.booking = None
        return Reply(f"{say['not_found']} {say['else']}", pending="else")
    if code == "appointment_ambiguous":
        options = [said for said, _value in _offered_after(message)]
        return Reply(say["which_appointment"].format(options=_listed(options, say)), pending="book_which")
    return _unavailable(state, context, booking)


def booked_reply(context: Context, booking: Booking, said: str, start: str) -> Reply:
    """The read-back of a booking made: the one place the policy answers a successful
    book_appointment, and the SMS confirmation's hook: where the assistant has `send_sms`
    (offered unless the tenant chose no SMS: by default the call's own carrier sends it)
    with the template `confirmation`, it is sent
    with the booked day and time (messaging_app: only to the caller's own mobile number)."""
    say = SAY[context.language]
    text = say["booked"].format(name=booking.name, said=said)
    moment = _start(start)
    schema = context.tools.get("send_sms") or {}
    templates = ((schema.get("properties") or {}).get("template") or {}).get("enum") or ()
    if moment is not None and "confirmation" in templates:
        calls = offered_call(context, "send_sms", {"template": "confirmation", "variables": {
            "date": f"{moment:%d.%m.%Y}", "time": f"{moment:%H:%M} Uhr"}})
        if calls:
            return Reply(f"{text} {say['sms_confirmation']}", calls, pending="sms")
    return Reply(f"{text} {say['else']}", pending="else")


def name_of(text: str) -> str | None:
    """The caller's name in their words: after "Mein Name ist", "Ich heiße", or the
    words themselves; a spelled name ("L E H M A N N") joined. None when no name is there."""
    text = " ".join(text.split())[:MAX_NAME_CHARS * 2]
    match = NAME_CUE.search(text)
    rest = match.group(1) if match else text
    words = _NAME_WORD.findall(rest)
    letters = [word for word in words if len(word) == 1 and word.isalpha()]
    if len(letters) >= 3 and len(letters) >= len(words) - 2:
        return "".join(letters).capitalize()  # spelled
    kept = [word for word in words if word.lower() not in _NOT_NAME and len(word) > 1]
    if not kept or len(kept) > 4:
        return None
    name = " ".join(word if word[:1].isupper() else word.capitalize() for word in kept)
    return name[:MAX_NAME_CHARS]


# --- The steps --------------------------------------------------------------------------

def _find(booking: Booking, context: Context) -> Reply:
    arguments = {"time": booking.when, "kind": booking.type}
    calls = offered_call(context, "find_slots", arguments)
    if not calls:
        return Reply(SAY[context.language]["no_booking"], pending="else")
    return Reply("", calls, pending="booking")


def _offer(booking: Booking, context: Context) -> Reply:
    say = SAY[context.language]
    if len(booking.slots) == 1:
        return Reply(say["offer_one"].format(first=booking.slots[0]["said"]), pending="book_slot")
    return Reply(say["offer_two"].format(first=booking.slots[0]["said"], second=booking.slots[1]["said"]),
                 pending="book_slot")


def _choose(booking: Booking, context: Context, heard: Heard) -> Reply:
    say, slots = SAY[context.language], booking.slots
    chosen = None
    if len(slots) > 1 and SECOND.search(heard.low):
        chosen = slots[1]
    elif FIRST.search(heard.low):
        chosen = slots[0]
    elif heard.when and heard.when.clock:
        chosen = next((slot for slot in slots if _clock(slot) == heard.when.clock), None)
    if chosen is None and heard.no:
        return Reply(say["ask_when_move" if booking.action == "move" else "ask_when_booking"],
                     pending="book_when")
    if chosen is None and heard.when and (heard.when.day or heard.when.clock or heard.when.part):
        booking.when = heard.text[:MAX_WISH_CHARS]  # another wish: looked up anew
        return _find(booking, context)
    if chosen is None and heard.yes:
        chosen = slots[0]
    if chosen is None:
        if len(slots) > 1:
            return Reply(say["which_slot"].format(first=slots[0]["said"], second=slots[1]["said"]),
                         pending="book_slot")
        return _offer(booking, context)
    booking.chosen = chosen
    if booking.name is None:
        return _ask_name(context)
    return _act(booking, context)


def _ask_name(context: Context, *, find: bool = False) -> Reply:
    say = SAY[context.language]
    return Reply(say["ask_name_find" if find else "ask_name"], pending="book_name")


def _act(booking: Booking, context: Context) -> Reply:
    """The booking, move or cancellation called (in a conversation without the caller's
    number, the number to book under is asked and read back first)."""
    say = SAY[context.language]
    chosen = booking.chosen or {}
    if booking.action == "cancel":
        name, arguments = "cancel_appointment", {"caller_name": booking.name, "current": booking.first_words}
    elif booking.action == "move":
        name, arguments = "move_appointment", {"caller_name": booking.name, "start": chosen["start"],
                                               "current": booking.first_words}
    else:
        if not context.caller and property_name(context.tools["book_appointment"], "phone"):
            if booking.phone is None:  # a web session: the number the appointment is booked under
                return Reply(say["ask_phone_booking"], pending="book_phone")
            if not booking.phone_confirmed:
                return Reply(say["read_back"].format(digits=read_back(booking.phone, context.language)),
                             pending="book_phone_confirm")
        name, arguments = "book_appointment", {"caller_name": booking.name, "start": chosen["start"],
                                               "kind": booking.type, "phone": booking.phone}
    calls = offered_call(context, name, arguments)
    if not calls:
        return Reply(SAY[context.language]["no_booking"], pending="else")
    return Reply("", calls, pending="booking")


def _unavailable(state: State, context: Context, booking: Booking) -> Reply:
    """The calendar failed: an apology, and a callback offered where one can be taken."""
    say = SAY[context.language]
    state.booking = None
    if "create_callback" in context.tools:
        state.offer_note = say["note_booking"].format(words=booking.when or booking.first_words)
        return Reply(f"{say['calendar_down']} {say['offer_callback_booking']}", pending="offer")
    return Reply(f"{say['calendar_down']} {say['colleague']} {say['else']}", pending="else")


# --- Reading the tools' answers ------------------------------------------------------------

def _slot(slot: Any) -> bool:
    return isinstance(slot, dict) and isinstance(slot.get("said"), str) and _start(slot.get("start")) is not None


def _start(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def _clock(slot: dict[str, Any]) -> time | None:
    moment = _start(slot["start"])
    return moment.time().replace(tzinfo=None) if moment else None


_OFFERED = re.compile(r"([^;()]+?) \((\S+)\)")


def _offered_after(message: str) -> list[tuple[str, str]]:
    """What a refusal offers instead, after "Stattdessen:": [(said, start or id)]."""
    _, found, rest = message.partition("Stattdessen:")
    rest = rest.partition(" Terminarten:")[0]
    return [(said.strip(" ;"), value) for said, value in _OFFERED.findall(rest)] if found else []


def _slots_after(message: str) -> list[dict[str, str]]:
    return [{"said": said, "start": start} for said, start in _offered_after(message) if _start(start)]


def _listed_after(message: str, marker: str) -> list[str]:
    _, found, rest = message.partition(marker)
    return [name.strip(" .") for name in rest.split(",") if name.strip(" .")] if found else []


def _listed(items: list[str], say: dict[str, str]) -> str:
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {say['or']} {items[-1]}"
