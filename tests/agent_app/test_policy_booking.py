"""The offline policy's booking flow (agent_app.policy.booking) over message histories:
what it says and which calendar tools it calls, turn by turn, the tools' answers fed
back as tools_app gives them (results and tool errors)."""
from calendars_app.builtin_tools import TOOLS as CALENDAR_TOOLS
from tests.agent_app.test_policy import SCHEMAS, VOICE, Dialogue, names, tools

BOOKING_SCHEMAS = dict(SCHEMAS, **{tool.name: tool.parameters for tool in CALENDAR_TOOLS})
CALLER = "+4917612345678"
PHONE = f"{VOICE}\nAnrufernummer: {CALLER}"
TUESDAY = [{"start": "2026-12-01T10:30:00+01:00", "said": "Dienstag, den ersten Dezember, um halb elf"},
           {"start": "2026-12-01T11:00:00+01:00", "said": "Dienstag, den ersten Dezember, um elf Uhr"}]


def slots(arguments):
    return {"ok": True, "tool": "find_slots", "result": {"type": "Erstgespräch", "slots": TUESDAY}}


def booked(arguments):
    said = next(slot["said"] for slot in TUESDAY if slot["start"] == arguments["start"])
    return {"ok": True, "tool": "book_appointment", "result": {"appointment": "ap_1", "start": arguments["start"],
                                                               "said": said, "note": "Termin gebucht"}}


def dialogue(**results):
    offered = tools(*BOOKING_SCHEMAS, schemas=BOOKING_SCHEMAS)
    return Dialogue(system=PHONE, offered=offered, results={"find_slots": slots, "book_appointment": booked,
                                                           **results})


def test_a_wish_is_looked_up_in_the_callers_words_and_the_two_nearest_slots_are_offered():
    d = dialogue()
    text, calls = d.say("Ich hätte gern einen Termin nächste Woche Dienstag vormittag")
    assert names(calls) == ["find_slots"]
    assert calls[0].arguments == {"when": "Ich hätte gern einen Termin nächste Woche Dienstag vormittag"}
    assert "um halb elf" in text and "um elf Uhr" in text and "Welcher Termin passt" in text


def test_den_ersten_then_the_name_books_and_reads_the_booking_back():
    d = dialogue()
    d.say("Ich hätte gern einen Termin nächste Woche Dienstag vormittag")
    text, calls = d.say("Den ersten bitte")
    assert calls == [] and "Namen" in text
    text, calls = d.say("Mein Name ist Anna Lehmann.")
    assert names(calls) == ["book_appointment"]
    assert calls[0].arguments == {"name": "Anna Lehmann", "start": "2026-12-01T10:30:00+01:00"}
    assert "Ihr Termin ist gebucht: Dienstag, den ersten Dezember, um halb elf" in text


def test_the_second_slot_and_a_yes_and_a_time_choose():
    for answer, start in (("Den zweiten, bitte.", TUESDAY[1]["start"]), ("Ja, das passt gut.", TUESDAY[0]["start"]),
                          ("Lieber um elf Uhr.", TUESDAY[1]["start"])):
        d = dialogue()
        d.say("Ich hätte gern einen Termin am Dienstag um zehn")
        d.say(answer)
        _, calls = d.say("Lehmann")
        assert calls[0].arguments["start"] == start, answer


def test_a_name_not_understood_is_asked_spelled_and_the_letters_are_joined():
    d = dialogue()
    d.say("Ich hätte gern einen Termin nächste Woche Dienstag vormittag")
    d.say("Den ersten")
    text, calls = d.say("Ja bitte.")
    assert calls == [] and "buchstabieren" in text
    _, calls = d.say("L E H M A N N")
    assert calls[0].arguments["name"] == "Lehmann"


def test_without_a_time_the_wish_is_asked_first():
    d = dialogue()
    text, calls = d.say("Ich möchte einen Termin vereinbaren.")
    assert calls == [] and "Für wann" in text
    _, calls = d.say("Übermorgen nachmittag")
    assert calls[0].name == "find_slots" and calls[0].arguments["when"] == "Übermorgen nachmittag"


def test_more_than_one_type_is_asked_for_and_the_type_goes_to_the_tools():
    def typed(arguments):
        if "type" not in arguments:
            return {"ok": False, "tool": "find_slots", "error": "appointment_type_unknown",
                    "message": "Welche Terminart möchten Sie: Erstgespräch, Kontrolle? "
                               "Terminarten: Erstgespräch, Kontrolle."}
        return slots(arguments)

    d = dialogue(find_slots=typed)
    text, _ = d.say("Ich hätte gern einen Termin am Dienstag")
    assert "Erstgespräch oder Kontrolle" in text
    text, calls = d.say("Eine Kontrolle bitte")
    assert calls[0].arguments == {"when": "Ich hätte gern einen Termin am Dienstag", "type": "Kontrolle"}
    d.say("den ersten")
    _, calls = d.say("Neumann")
    assert calls[0].arguments["type"] == "Kontrolle"


def test_a_slot_taken_meanwhile_offers_the_next_ones():
    def taken(arguments):
        return {"ok": False, "tool": "book_appointment", "error": "slot_taken",
                "message": "Dieser Termin ist leider nicht mehr frei. Stattdessen: Dienstag, den ersten Dezember, "
                           "um elf Uhr (2026-12-01T11:00:00+01:00)"}

    d = dialogue(book_appointment=taken)
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("den ersten")
    text, _ = d.say("Lehmann")
    assert "gerade vergeben" in text and "um elf Uhr" in text
    d.results["book_appointment"] = booked
    _, calls = d.say("Ja, gern.")
    assert names(calls) == ["book_appointment"] and calls[0].arguments == {
        "name": "Lehmann", "start": "2026-12-01T11:00:00+01:00"}


def test_a_calendar_that_fails_is_an_apology_and_a_callback_offered():
    down = {"ok": False, "tool": "find_slots", "error": "calendar_unavailable", "message": "nicht erreichbar"}
    d = dialogue(find_slots=down)
    text, _ = d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    assert "Entschuldigen Sie" in text and "Rückruf" in text
    text, calls = d.say("Ja, gerne.")
    assert calls == [] and "Nummer" in text  # the callback is being taken
    text, calls = d.say("Ja.")
    if not calls:  # the callback's time
        _, calls = d.say("Morgen vormittag")
    assert names(calls) == ["create_callback"] and "Kalender nicht erreichbar" in calls[0].arguments["reason"]


def test_a_tool_timeout_is_the_same_apology():
    late = {"ok": False, "tool": "book_appointment", "error": "timeout", "message": "The tool did not answer."}
    d = dialogue(book_appointment=late)
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("den ersten")
    text, _ = d.say("Lehmann")
    assert "nicht erreichbar" in text and "Rückruf" in text


def test_cancelling_asks_the_name_and_cancels_the_callers_appointment():
    cancelled = {"ok": True, "tool": "cancel_appointment",
                 "result": {"appointment": "ap_1", "said": "Dienstag, den ersten Dezember, um halb elf"}}
    d = dialogue(cancel_appointment=cancelled)
    text, calls = d.say("Ich möchte den Termin am Dienstag absagen, bitte.")
    assert calls == [] and "Namen" in text
    text, calls = d.say("Mein Name ist Lehmann.")
    assert names(calls) == ["cancel_appointment"]
    assert calls[0].arguments == {"name": "Lehmann", "current": "Ich möchte den Termin am Dienstag absagen, bitte."}
    assert "Dienstag, den ersten Dezember, um halb elf ist abgesagt" in text


def test_no_appointment_under_the_number_and_name_is_said_so():
    missing = {"ok": False, "tool": "cancel_appointment", "error": "appointment_not_found", "message": "…"}
    d = dialogue(cancel_appointment=missing)
    d.say("Ich möchte meinen Termin stornieren")
    text, _ = d.say("Schmidt")
    assert "keinen kommenden Termin" in text


def test_moving_asks_the_name_the_new_time_offers_slots_and_moves():
    def moved(arguments):
        return {"ok": True, "tool": "move_appointment",
                "result": {"appointment": "ap_1", "start": arguments["start"],
                           "said": "Dienstag, den ersten Dezember, um elf Uhr"}}

    d = dialogue(move_appointment=moved)
    text, _ = d.say("Ich muss meinen Termin verschieben.")
    assert "Namen" in text
    text, _ = d.say("Lehmann")
    assert "Auf wann" in text
    text, calls = d.say("Dienstag vormittag")
    assert names(calls) == ["find_slots"] and "um halb elf" in text
    text, calls = d.say("den zweiten")
    assert names(calls) == ["move_appointment"]
    assert calls[0].arguments == {"name": "Lehmann", "start": "2026-12-01T11:00:00+01:00",
                                  "current": "Ich muss meinen Termin verschieben."}
    assert "verschoben auf Dienstag, den ersten Dezember, um elf Uhr" in text


def test_without_the_calendar_tools_an_appointment_wish_is_still_a_callback():
    d = Dialogue(system=PHONE)
    _, calls = d.say("Ich hätte gern einen Termin am Dienstag vormittag, rufen Sie mich unter meiner Nummer an")
    assert "find_slots" not in names(calls)


def test_a_question_for_something_free_is_a_booking_wish():
    d = dialogue()
    _, calls = d.say("Haben Sie Dienstag vormittag noch etwas frei?")
    assert names(calls) == ["find_slots"]


def test_a_cancellation_is_heard_by_its_verb_or_by_not_coming():
    for heard in ("Ich muss meinen Demin am Dienstag absagen.", "Bitte stornieren Sie den Termin.",
                  "Ich kann am Dienstag nicht kommen."):
        d = dialogue()
        text, calls = d.say(heard)
        assert calls == [] and "Auf welchen Namen ist der Termin eingetragen" in text, heard


def test_a_cancellation_whose_s_the_phone_band_lost_counts_only_after_termin():
    # What Whisper base heard on the phone band for "Ich möchte den Termin am Dienstag absagen, bitte."
    for heard in ("Ich möchte den Termin am Dienstag ablagen, bitte.", "Ich möchte den Termin am Donnerstag abnagen."):
        text, calls = dialogue().say(heard)
        assert calls == [] and "Auf welchen Namen ist der Termin eingetragen" in text, heard
    _, calls = dialogue().say("Ich brauche einen Termin am Dienstag für die Abnahmen.")
    assert names(calls) == ["find_slots"]  # a booking: "Abnahmen" is no cancellation


def test_a_question_that_says_ab_is_no_cancellation():
    d = dialogue()
    _, calls = d.say("Können Sie mir sagen, ab wann Sie morgen geöffnet haben?")
    assert names(calls) == ["lookup_knowledge"]


def test_a_conversation_without_the_callers_number_asks_for_it_reads_it_back_and_books_with_it():
    d = Dialogue(system=VOICE, offered=tools(*BOOKING_SCHEMAS, schemas=BOOKING_SCHEMAS),
                 results={"find_slots": slots, "book_appointment": booked})
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("Den ersten bitte")
    text, calls = d.say("Lehmann")
    assert calls == [] and "Nummer" in text
    text, calls = d.say("Meine Nummer ist null eins sieben sechs, eins zwei drei vier, fünf sechs sieben acht.")
    assert calls == [] and "Ich wiederhole: null eins sieben sechs" in text
    text, calls = d.say("Ja, das ist richtig.")
    assert names(calls) == ["book_appointment"] and calls[0].arguments == {
        "name": "Lehmann", "start": TUESDAY[0]["start"], "phone": "+4917612345678"}
    assert "Ihr Termin ist gebucht" in text


def test_a_conversation_without_the_callers_number_cannot_move_or_cancel():
    d = Dialogue(system=VOICE, offered=tools(*BOOKING_SCHEMAS, schemas=BOOKING_SCHEMAS))
    text, calls = d.say("Ich möchte meinen Termin absagen.")
    assert calls == [] and "von Ihrer Nummer aus anrufen" in text


def test_a_number_said_counts_only_in_a_call_without_the_callers_number():
    from calendars_app.builtin_tools import _booking_number
    from console.assistants.builtin_tools import BuiltinCall

    said = {"start": TUESDAY[0]["start"], "name": "Lehmann", "phone": "0151 12345678"}
    assert _booking_number(BuiltinCall(assistant=None, call_id="cl_1", arguments=said, caller_e164=CALLER)) == CALLER
    assert _booking_number(BuiltinCall(assistant=None, call_id="cl_1", arguments=said)) == "+4915112345678"
    assert _booking_number(BuiltinCall(assistant=None, call_id="cl_1", arguments=dict(said, phone="abc"))) == ""


def with_send_sms():
    """The booking tools and `send_sms` as messaging_app shows it (the templates as an enum)."""
    from messaging_app.builtin_tools import SEND_SMS

    sms_schema = SEND_SMS.parameters | {"properties": SEND_SMS.parameters["properties"] | {
        "template": SEND_SMS.parameters["properties"]["template"] | {"enum": ["confirmation", "reminder"]}}}
    return dict(BOOKING_SCHEMAS, send_sms=sms_schema)


def test_a_booking_is_confirmed_by_sms_where_the_assistant_has_send_sms():
    schemas = with_send_sms()
    d = Dialogue(system=PHONE, offered=tools(*schemas, schemas=schemas),
                 results={"find_slots": slots, "book_appointment": booked})
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("Den ersten bitte")
    text, calls = d.say("Lehmann")
    assert names(calls) == ["book_appointment", "send_sms"]
    assert calls[1].arguments == {"template": "confirmation", "variables": {"date": "01.12.2026", "time": "10:30 Uhr"}}
    assert "Ihr Termin ist gebucht" in text and "per SMS" in text and text.endswith("Kann ich sonst noch etwas für Sie tun?")


def test_a_refused_sms_confirmation_is_taken_back():
    from messaging_app.builtin_tools import REFUSALS

    schemas = with_send_sms()
    # What tools_app answers for a call whose carrier sends no SMS (the default provider `carrier`).
    refused = {"ok": False, "tool": "send_sms", "error": "sms_refused",
               "message": REFUSALS["sms_carrier_cannot_send"]}
    d = Dialogue(system=PHONE, offered=tools(*schemas, schemas=schemas),
                 results={"find_slots": slots, "book_appointment": booked, "send_sms": refused})
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("Den ersten bitte")
    text, calls = d.say("Lehmann")
    assert names(calls) == ["book_appointment", "send_sms"]
    assert text.endswith("Die SMS kann ich Ihnen leider doch nicht schicken. Kann ich sonst noch etwas für Sie tun?")


def test_without_send_sms_no_sms_is_promised():
    d = dialogue()
    d.say("Ich hätte gern einen Termin am Dienstag vormittag")
    d.say("Den ersten bitte")
    text, calls = d.say("Lehmann")
    assert names(calls) == ["book_appointment"] and "SMS" not in text


def test_a_question_about_the_opening_hours_with_a_day_is_looked_up_not_booked():
    for question in ("Ich möchte wissen, ob Sie morgen geöffnet haben.", "Haben Sie am Samstag geöffnet?"):
        d = dialogue()
        _, calls = d.say(question)
        assert names(calls) == ["lookup_knowledge"], question
