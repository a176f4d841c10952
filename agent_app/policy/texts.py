"""What the policy says, in German and English, and how it says numbers and times."""
import re

import phonenumbers

from agent_app.policy.cues import EN_WEEKDAYS
from agent_app.policy.heard import moment_of
from speech_app.spoken import spoken_form

SAY = {
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
        "transfer_not_answered": "Leider hat gerade niemand abgenommen.",
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
        # Booking (agent_app.policy.booking)
        "ask_when_booking": "Gern. Für wann wünschen Sie den Termin?",
        "ask_when_move": "Auf wann möchten Sie den Termin verschieben?",
        "ask_type": "Welche Terminart möchten Sie: {types}?",
        "or": "oder",
        "offer_two": "Ich kann Ihnen {first} oder {second} anbieten. Welcher Termin passt Ihnen?",
        "offer_one": "Ich kann Ihnen {first} anbieten. Passt Ihnen das?",
        "nothing_free": "Zu dieser Zeit ist leider nichts mehr frei. Für wann darf ich sonst schauen?",
        "which_slot": "Welchen Termin möchten Sie: {first} oder {second}?",
        "ask_name": "Auf welchen Namen darf ich den Termin eintragen?",
        "ask_name_find": "Gern. Auf welchen Namen ist der Termin eingetragen?",
        "ask_spelled": "Könnten Sie Ihren Namen bitte buchstabieren?",
        "booked": "Vielen Dank, {name}. Ihr Termin ist gebucht: {said}.",
        "moved": "Ihr Termin ist verschoben auf {said}.",
        "cancelled": "Ihr Termin am {said} ist abgesagt.",
        "slot_gone": "Dieser Termin ist leider gerade vergeben worden.",
        "not_found": "Unter Ihrer Nummer und diesem Namen finde ich leider keinen kommenden Termin.",
        "which_appointment": "Sie haben mehrere Termine: {options}. Welchen meinen Sie?",
        "calendar_down": "Entschuldigen Sie bitte, unser Kalender ist gerade nicht erreichbar.",
        "offer_callback_booking": "Darf ich einen Rückruf notieren, damit wir den Termin mit Ihnen vereinbaren?",
        "no_booking": "Das kann ich leider gerade nicht erledigen; bitte rufen Sie uns später noch einmal an.",
        "note_booking": "Terminwunsch (Kalender nicht erreichbar): {words}",
        "ask_phone_booking": "Unter welcher Nummer können wir Sie erreichen?",
        "sms_confirmation": "Die Bestätigung schicke ich Ihnen per SMS.",
        "sms_failed": "Die SMS kann ich Ihnen leider doch nicht schicken.",
        "call_to_change": "Einen bestehenden Termin kann ich nur ändern, wenn Sie uns von Ihrer Nummer aus anrufen.",
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
        "transfer_not_answered": "I am sorry, nobody answered just now.",
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
        # Booking (agent_app.policy.booking)
        "ask_when_booking": "Of course. When would you like the appointment?",
        "ask_when_move": "When would you like to move the appointment to?",
        "ask_type": "Which kind of appointment would you like: {types}?",
        "or": "or",
        "offer_two": "I can offer you {first} or {second}. Which one suits you?",
        "offer_one": "I can offer you {first}. Does that suit you?",
        "nothing_free": "I am afraid nothing is free at that time. When else may I look?",
        "which_slot": "Which one would you like: {first} or {second}?",
        "ask_name": "Under which name may I book the appointment?",
        "ask_name_find": "Of course. Under which name is the appointment booked?",
        "ask_spelled": "Could you spell your name, please?",
        "booked": "Thank you, {name}. Your appointment is booked: {said}.",
        "moved": "Your appointment is moved to {said}.",
        "cancelled": "Your appointment on {said} is cancelled.",
        "slot_gone": "I am sorry, that time has just been taken.",
        "not_found": "I find no coming appointment under your number and this name.",
        "which_appointment": "You have several appointments: {options}. Which one do you mean?",
        "calendar_down": "I am sorry, our calendar cannot be reached right now.",
        "offer_callback_booking": "May I note a callback so that we arrange the appointment with you?",
        "no_booking": "I cannot do that right now; please call us again later.",
        "note_booking": "Appointment request (calendar unreachable): {words}",
        "ask_phone_booking": "Which number can we reach you on?",
        "sms_confirmation": "I will send you the confirmation by text message.",
        "sms_failed": "I am sorry, I cannot send you the text message after all.",
        "call_to_change": "I can only change an existing appointment when you call us from your number.",
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


def display(e164):
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
    shown = display(e164)
    if language == "de":
        return spoken_form(shown)
    groups = [re.sub(r"\D", "", group) for group in shown.split()]
    spoken = []
    for group in groups:
        spoken += [" ".join(_ENGLISH_DIGITS[int(d)] for d in chunk) for chunk in _chunks(group) if chunk]
    return ("plus " if shown.startswith("+") else "") + ", ".join(spoken)


def when_words(when, context):
    """The wished time as the confirmation says it ("morgen um 14:30 Uhr"); "" when
    none was said."""
    say = SAY[context.language]
    moment = moment_of(when, context)
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
        day = (f"on {EN_WEEKDAYS[moment.weekday()].capitalize()}" if ahead < 7
               else f"on {moment.day} {_ENGLISH_MONTHS[moment.month - 1]}")
    if when.clock:
        hour = moment.hour % 12 or 12
        clock = f"{hour}:{moment.minute:02d}" if moment.minute else f"{hour}"
        return f"{day} at {clock} {'am' if moment.hour < 12 else 'pm'}"
    return f"{day} {_ENGLISH_PARTS[when.part]}" if when.part else day

