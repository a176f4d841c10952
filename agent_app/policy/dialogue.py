"""The dialogue: the history replayed, the caller's last words answered, a round of tool
results answered."""
import logging
import re

from agent_app.policy.arguments import offered_call
from agent_app.policy.booking import QUESTIONS as BOOKING_QUESTIONS
from agent_app.policy.booking import TOOLS as BOOKING_TOOLS
from agent_app.policy.booking import booking_answer, booking_result, booking_start, offers_booking, wants_booking
from agent_app.policy.callback import callback_answer, callback_result, callback_start
from agent_app.policy.context import Context
from agent_app.policy.cues import (
    ANNOUNCED,
    APPOINTMENT,
    CALLBACK,
    CONNECT,
    GOODBYE,
    GREETING,
    OPT_OUT,
    PERSON,
    QUESTION,
    TALK,
    THANKS,
)
from agent_app.policy.heard import Heard
from agent_app.policy.passages import answer_from, passages_of, tool_result
from agent_app.policy.state import FLOW_QUESTIONS, Reply, State
from agent_app.policy.texts import SAY
from console import tool_codes
from console.parsers import json_text
from gateway_app.providers.mock import RuleSetPolicy
from gateway_app.turns import TextDelta, ToolCall

logger = logging.getLogger(__name__)


class DialoguePolicy:
    """The mock lane's dialogue over tools (see agent_app.policy): registered from
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
            state = State()
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
                reply = self._hear(state, context, Heard(message["content"] or "", context))
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
            say = SAY[context.language]
            reply = Reply(say["else"], pending="else") if users else Reply(say["hello"])
        return reply

    def _forced(self, request, context, reply):
        """The answer within `tool_choice`: a named function allows only that one; a
        required tool with nothing to call looks the caller's words up when it can."""
        choice = request.tool_choice
        named = choice["function"]["name"] if isinstance(choice, dict) else None
        if named is not None and any(name != named for name, _ in reply.calls):
            calls = [call for call in reply.calls if call[0] == named]
            reply = Reply(reply.text or SAY[context.language]["else"], calls, reply.pending)
        if request.tool_required and not reply.calls and named in (None, "lookup_knowledge"):
            query = request.last_user_text().strip()
            calls = offered_call(context, "lookup_knowledge", {"query": query}) if query else []
            if calls:
                return Reply("", calls, "looking_up")
        return reply

    # -- A caller's utterance ------------------------------------------------------------
    def _hear(self, state, context, heard):
        say = SAY[context.language]
        if state.flow is not None and state.flow.sent:
            state.flow = None  # sent, and no result came back: that callback is over
        if OPT_OUT.search(heard.low):
            state.flow = None
            return self._opt_out(context)
        number_said = heard.phone is not None
        pending, flow = state.pending, state.flow
        in_flow = flow is not None and pending in FLOW_QUESTIONS
        if GOODBYE.search(heard.low) and not number_said:
            if in_flow and pending in ("confirm_caller", "confirm_phone", "time"):
                flow.bye = True  # "Ja, genau. Tschüss!": the callback first, then the goodbye
                reply = callback_answer(state, context, heard)
                if reply.calls:
                    return reply
            state.flow = None
            return self._goodbye(context)
        if self._wants_person(heard, context) and not number_said:
            state.flow = None
            return self._transfer(state, context, heard)
        if in_flow:
            return callback_answer(state, context, heard)
        if state.booking is not None and pending in BOOKING_QUESTIONS:
            if CALLBACK.search(heard.low):
                state.booking = None
                return callback_start(state, context, heard, "appointment")
            return booking_answer(state, context, heard)
        if pending == "offer":
            if heard.no and not number_said:
                state.offer_note = ""
                return Reply(f"{say['ok']} {say['else']}", pending="else")
            if heard.yes or number_said:
                note = state.offer_note or say["note_callback"].format(words=heard.text)
                return callback_start(state, context, heard, "callback", note=note, intro=say["intro_yes"])
        if pending == "else" and not heard.content:
            if heard.no:
                return self._goodbye(context)
            if heard.yes:
                return Reply(say["what"])
        if CALLBACK.search(heard.low):
            return callback_start(state, context, heard, "callback")
        if offers_booking(context) and wants_booking(heard):
            return booking_start(state, context, heard)
        if APPOINTMENT.search(heard.low):
            return callback_start(state, context, heard, "appointment")
        few = len(heard.content) < 2
        if ANNOUNCED.search(heard.low) and len(heard.content) <= 4 and "?" not in heard.low:
            return Reply(say["what"])  # "Ich hätte noch eine Frage." – the question comes next
        if THANKS.search(heard.low) and few:
            return Reply(f"{say['thanks']} {say['else']}", pending="else")
        if few and not QUESTION.search(heard.low):
            if GREETING.search(heard.low):
                return Reply(say["hello"])
            if not heard.content:
                return Reply(say["what"] if heard.yes else say["pardon"])
        return self._look_up(state, context, heard)

    def _wants_person(self, heard, context):
        if CONNECT.search(heard.low):
            return True
        if not TALK.search(heard.low):
            return False
        return bool(PERSON.search(heard.low)) or any(
            re.search(rf"\b{re.escape(name.lower())}\b", heard.low) for name in context.targets)

    # -- The other intents -------------------------------------------------------------
    def _goodbye(self, context):
        say = SAY[context.language]
        calls = offered_call(context, "end_call", {"reason": say["reason_bye"]})
        return Reply(say["bye"], calls, pending="ended" if calls else None)

    def _opt_out(self, context):
        say = SAY[context.language]
        calls = offered_call(context, "opt_out", {"reason": say["reason_opt_out"]})
        if calls:
            return Reply(say["opt_out"], calls, pending="opting_out")
        return Reply(say["opt_out_plain"], offered_call(context, "end_call", {"reason": say["reason_opt_out"]}),
                     pending="ended")

    def _transfer(self, state, context, heard):
        say = SAY[context.language]
        if "transfer_call" in context.tools and context.targets:
            target = next((name for name in context.targets
                           if re.search(rf"\b{re.escape(name.lower())}\b", heard.low)), context.targets[0])
            calls = offered_call(context, "transfer_call", {"target": target, "reason": say["reason_transfer"]})
            if calls:
                return Reply(say["transferring"], calls, pending="transferring")
        if "create_callback" in context.tools:
            return callback_start(state, context, heard, "transfer")
        return Reply(f"{say['no_transfer']} {say['else']}", pending="else")

    def _look_up(self, state, context, heard):
        state.question = heard.text
        calls = offered_call(context, "lookup_knowledge", {"query": heard.text}) if heard.text else []
        if calls:
            return Reply("", calls, pending="looking_up")
        return self._unknown(state, context, heard.text)

    def _unknown(self, state, context, question):
        """Nothing to answer from: a callback is offered."""
        say = SAY[context.language]
        if "create_callback" in context.tools:
            state.offer_note = say["note_question"].format(words=question) if question else ""
            return Reply(f"{say['no_knowledge']} {say['offer_callback']}", pending="offer")
        return Reply(f"{say['no_knowledge']} {say['colleague']} {say['else']}", pending="else")

    # -- Tool results ----------------------------------------------------------------------
    def _after_tools(self, state, context, results):
        """The answer to a round of tool results (the first result of each tool counts)."""
        say = SAY[context.language]
        by_name = {}
        for name, _arguments, content in results:
            by_name.setdefault(name, tool_result(content))
        booked = next((name for name in by_name if name in BOOKING_TOOLS), None)
        if booked is not None:
            return booking_result(state, context, booked, *by_name[booked])
        if "create_callback" in by_name:
            return callback_result(state, context, *by_name["create_callback"])
        if "send_sms" in by_name and not by_name["send_sms"][0]:
            # The confirmation was promised with the booking: the caller hears that it will not come
            # (a landline, a carrier that sends no SMS, a blocked number).
            return Reply(f"{say['sms_failed']} {say['else']}", pending="else")
        if "opt_out" in by_name:
            calls = offered_call(context, "end_call", {"reason": say["reason_opt_out"]})
            return Reply(say["opted_out" if by_name["opt_out"][0] else "opt_out_failed"], calls, pending="ended")
        if "transfer_call" in by_name:
            ok, data = by_name["transfer_call"]
            if ok:
                return Reply(say["transferred"], pending="transferred")
            # A warm hand-over's person did not answer: the caller hears so.
            unanswered = isinstance(data, dict) and data.get("error") == tool_codes.TRANSFER_NOT_ANSWERED
            failed = say["transfer_not_answered" if unanswered else "transfer_failed"]
            if "create_callback" in context.tools:
                state.offer_note = say["reason_transfer"]
                return Reply(f"{failed} {say['offer_callback_plain']}", pending="offer")
            return Reply(f"{failed} {say['else']}", pending="else")
        if "lookup_knowledge" in by_name:
            ok, data = by_name["lookup_knowledge"]
            text = answer_from(passages_of(data), state.question) if ok else ""
            if text:
                return Reply(f"{text} {say['else']}", pending="else")
            return self._unknown(state, context, state.question)
        if "end_call" in by_name:
            return Reply(say["bye_short"], pending="ended")
        return Reply(say["else"], pending="else")
