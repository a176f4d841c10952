"""The callback flow: a callback (or an appointment wish, or a transfer that cannot be
made) taken down over as many turns as it needs — the number (the caller's own offered,
a spoken one read back), the time when the tool has a time parameter and the
conversation is spoken (or the parameter is required) — then `create_callback`, and
after its result the confirmation."""
import json
import re

from agent_app.policy.arguments import offered_call, property_name, required_names, tool_arguments
from agent_app.policy.heard import When, moment_of
from agent_app.policy.state import Flow, Reply
from agent_app.policy.texts import SAY, display, read_back, when_words

MAX_NOTE_CHARS = 300
MAX_TIME_WORDS = 200


def callback_start(state, context, heard, kind, *, note=None, intro=None):
    say = SAY[context.language]
    if "create_callback" not in context.tools:
        return Reply(f"{say['no_callback_tool']} {say['else']}", pending="else")
    flow = state.flow = Flow(kind=kind, note=note or say[f"note_{kind}"].format(words=heard.text))
    if heard.phone:
        flow.phone, flow.confirmed = heard.phone, not context.spoken
    if heard.when:
        flow.when.merge(heard.when)
    return _next(state, context, intro=say[f"intro_{kind}"] if intro is None else intro)


def callback_answer(state, context, heard):
    """The caller's answer to a callback's question."""
    say, flow, pending = SAY[context.language], state.flow, state.pending
    when = heard.when
    if pending == "time":
        if when:
            flow.when.merge(when)
        elif heard.no:
            flow.when.merge(When(soon=True))
        else:
            words = heard.text[:MAX_TIME_WORDS]
            flow.when.merge(When(words=words, said=[words]))
        if heard.phone and heard.phone != flow.phone:
            flow.phone, flow.confirmed = heard.phone, not context.spoken
        return _next(state, context)
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
            return Reply(say["ask_caller_again"], pending="confirm_caller")
        return _next(state, context)
    if pending == "phone":
        number = heard.loose_phone
        if number:
            flow.phone, flow.confirmed, flow.misses = number, not context.spoken, 0
            return _next(state, context)
        if heard.no:
            state.flow = None
            return Reply(f"{say['callback_declined']} {say['else']}", pending="else")
        flow.misses += 1
        return _next(state, context)
    # confirm_phone: the number was read back
    number = heard.phone or (None if heard.yes else heard.loose_phone)
    if heard.no:
        if not number:
            flow.phone, flow.misses = None, 0
            return Reply(say["ask_phone_corrected"], pending="phone")
        flow.phone = number
    elif heard.yes and number in (None, flow.phone):
        flow.confirmed = True
    elif number:
        flow.phone = number
    else:
        return Reply(say["read_back_again"].format(digits=read_back(flow.phone, context.language)),
                 pending="confirm_phone")
    return _next(state, context)


def _next(state, context, *, intro=""):
    """The callback's next question, or the call of create_callback."""
    say, flow = SAY[context.language], state.flow
    schema = context.tools["create_callback"]
    lead = f"{intro} " if intro else ""
    if flow.phone is None and property_name(schema, "phone"):
        if context.caller and not flow.caller_declined:
            return Reply(lead + say["ask_caller"], pending="confirm_caller")
        return Reply(lead + say["ask_phone_again" if flow.misses else "ask_phone"], pending="phone")
    if flow.phone and not flow.confirmed:
        return Reply(lead + say["read_back"].format(digits=read_back(flow.phone, context.language)),
                 pending="confirm_phone")
    time_name = property_name(schema, "time")
    wants_time = time_name and (context.spoken or time_name in required_names(schema))
    if wants_time and not flow.when.known() and not flow.time_asked and not flow.bye:
        flow.time_asked = True
        question = "ask_time_appointment" if flow.kind == "appointment" else "ask_time_callback"
        return Reply(lead + say[question], pending="time")
    return _send(state, context, lead)


def _send(state, context, lead):
    say, flow = SAY[context.language], state.flow
    note = flow.note
    when_said = ", ".join(flow.when.said)
    if when_said and when_said.lower() not in note.lower():
        note = f"{note} ({say['note_when'].format(words=when_said)})"
    arguments = tool_arguments(context.tools["create_callback"], {
        "phone": flow.phone, "time": _time_value(flow.when, context), "note": note[:MAX_NOTE_CHARS]})
    if arguments is None:
        state.flow = None
        return Reply(f"{lead}{say['callback_failed']} {say['else']}", pending="else")
    flow.sent = True
    return Reply(lead.strip(), [("create_callback", arguments)], pending="sent")


def _time_value(when, context):
    """What create_callback is given as the time: an ISO 8601 moment where one was
    said, "so bald wie möglich" / "as soon as possible", else the caller's words."""
    moment = moment_of(when, context)
    if moment is not None:
        return moment.isoformat()
    if when.soon:
        return SAY[context.language]["soon"]
    return when.words or None


def _confirmation(flow, context):
    """What is said once the callback is noted."""
    say = SAY[context.language]
    number = say["under"].format(number=display(flow.phone)) if flow.phone and not context.spoken else ""
    when = when_words(flow.when, context)
    if flow.kind == "appointment":
        if when:  # "für Dienstag Vormittag", "für den 3. Dezember"
            when = re.sub(r"^(?:am|on) (?=\d)", "den " if context.language == "de" else "", when)
            when = say["for"].format(when=re.sub(r"^(?:am|on) ", "", when))
        return say["confirm_appointment"].format(when=when, number=number)
    return say["confirm_callback"].format(details=(f" {when}" if when else "") + number)



def callback_result(state, context, ok, data):
    """The answer to create_callback's result: the confirmation (and the goodbye when the
    caller said it), a refused number asked again, or the apology."""
    say = SAY[context.language]
    flow = state.flow or Flow(kind="callback", note="")
    state.flow = None
    if ok:
        text = _confirmation(flow, context)
        if flow.bye:
            calls = offered_call(context, "end_call", {"reason": say["reason_bye"]})
            return Reply(f"{text} {say['bye']}", calls, pending="ended")
        return Reply(f"{text} {say['else']}", pending="else")
    if "phone" in json.dumps(data, ensure_ascii=False).lower():
        flow.phone, flow.confirmed, flow.sent, flow.caller_declined = None, False, False, True
        state.flow = flow
        return Reply(f"{say['number_refused']} {say['ask_phone']}", pending="phone")
    return Reply(f"{say['callback_failed']} {say['else']}", pending="else")
