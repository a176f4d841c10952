"""The phone bridges' HTTP side (docs/telephony.md): one set of views for every carrier
kind (calls_app/kinds), at `/voice/<kind>/<carrier_id>/<the kind's path of the hook>`,
each dispatching to the kind's webhooks for what differs (how a request is verified,
read and answered):

- `incoming`: a call for the agent (a Twilio-compatible carrier's voice webhook, an
  Asterisk dialplan's registration): the call registered through calls_app (its cap
  check, the call) and its conversation granted a single-use token
  (agent_app.services), which the kind's answer hands the carrier; the audio then comes
  over the kind's media stream (agent_app/media_stream.py) or AudioSocket
  (agent_app/audiosocket.py);
- `status`: the carrier's status callbacks (an ending status ends the call once, an
  answering-machine verdict is answered as the campaign chose);
- `transfer`: the number a call was handed over to, read back;
- `warm`: the call to a person for a warm hand-over (calls_app.warm_transfers);
- `whisper`, `warm_outcome`: an Asterisk dialplan's warm hand-over (the UUID the
  person's AudioSocket() hears the summary on; Dial's outcome).

These are plain Django views behind DRF classes (for the OpenAPI document and the error
shape of other methods), like the carrier webhook: the carrier's exact form (or body)
is what its signature covers."""
import logging
from typing import Any, cast

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema

from agent_app import services
from agent_app.conversation import voicemail_text
from calls_app import phone_calls, warm_transfers
from calls_app.carriers import CarrierError
from calls_app.errors import MinuteCapReached, UnknownCarrier
from calls_app.kinds import KINDS
from calls_app.kinds.base import CarrierKind, InboundCall, WarmWebhooks, Webhooks
from console.api import OpenAPIView, accepts_query
from console.errors import ApiError, NotFound, ValidationFailed

logger = logging.getLogger("agent_app.phone")


class _KindView(OpenAPIView):
    """A hook of one kind (`kind_name`, bound by agent_app/phone_urls.py)."""

    kind_name = ""

    @property
    def kind(self) -> CarrierKind:
        return KINDS[self.kind_name]

    @property
    def webhooks(self) -> Webhooks:
        assert self.kind.webhooks is not None
        return self.kind.webhooks

    def carrier(self, request: HttpRequest, carrier_id: str) -> Any:
        """The carrier `carrier_id` of this kind, the request verified as its (else an ApiError)."""
        carrier = phone_calls.phone_carrier(carrier_id=carrier_id, kind=self.kind_name)
        if carrier is None:
            raise UnknownCarrier()
        self.webhooks.verify(carrier, request)
        return carrier


class _PlainPost(_KindView):
    """POST goes straight to `post` with Django's request (the form as the carrier sent it)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.method == "POST":
            return self.post(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)

    def post(self, request: HttpRequest, carrier_id: str) -> HttpResponse:
        raise NotImplementedError


class IncomingView(_PlainPost):
    def post(self, request: HttpRequest, carrier_id: str) -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        webhooks, transport = self.webhooks, self.kind.transport
        inbound = webhooks.inbound(request)
        if inbound.outbound:
            return self._outbound(request, carrier, inbound)
        number = phone_calls.number_route(e164=inbound.to_e164) if inbound.to_e164 else None
        if number is None:
            return webhooks.refuse(carrier, inbound, "unknown_number")
        existing = phone_calls.phone_call_of(carrier=carrier, carrier_call_id=inbound.carrier_call_id)
        if existing is not None:
            if not webhooks.reconnects:
                return webhooks.refuse(carrier, inbound, "exists")
            # The carrier asks again (a retry): the same call, a new token.
            token = services.phone_call_answer(call=existing, transport=transport)
            return webhooks.connect(carrier, token, request) if token else webhooks.refuse(carrier, inbound, "gone")
        try:
            _call, token = services.phone_call_register(
                carrier=carrier, number=number, carrier_call_id=inbound.carrier_call_id, from_e164=inbound.from_e164,
                to_e164=inbound.to_e164, transport=transport, token=inbound.token or None)
        except MinuteCapReached:
            services.phone_call_reject(carrier=carrier, number=number, carrier_call_id=inbound.carrier_call_id,
                                       from_e164=inbound.from_e164, to_e164=inbound.to_e164)
            return webhooks.refuse(carrier, inbound, "cap")
        return webhooks.connect(carrier, token, request)

    def _outbound(self, request: HttpRequest, carrier: Any, inbound: InboundCall) -> HttpResponse:
        """The callee of a call we dialled answered: its stream, minutes reserved at the request."""
        webhooks = self.webhooks
        call = phone_calls.outbound_call_of(carrier=carrier, call_id=inbound.outbound_call_id)
        if call is None or not phone_calls.call_outbound_answered(call=call, carrier_call_id=inbound.carrier_call_id):
            return webhooks.refuse(carrier, inbound, "gone")
        token = services.phone_call_answer(call=call, transport=self.kind.transport)
        return webhooks.connect(carrier, token, request) if token else webhooks.refuse(carrier, inbound, "gone")


class StatusView(_PlainPost):
    def post(self, request: HttpRequest, carrier_id: str) -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        report = self.webhooks.status(request)
        _bind_outbound(carrier, report.outbound_call_id, report.carrier_call_id)
        if report.answered_by is not None:
            _machine_verdict(carrier, report.carrier_call_id, report.answered_by)
            return HttpResponse(status=204)
        phone_calls.call_phone_status(carrier=carrier, carrier_call_id=report.carrier_call_id, status=report.status,
                                      seconds=report.seconds)
        return HttpResponse(status=204)


class WarmView(_PlainPost):
    """The call to a person for a warm hand-over (calls_app.warm_transfers): answered,
    the person hears the summary (once) and enters the room the caller joins; ended
    without an answer, the ring is given up (the agent tells the caller)."""

    def post(self, request: HttpRequest, carrier_id: str) -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        webhooks = cast(WarmWebhooks, self.webhooks)
        leg = webhooks.warm_leg(request)
        if leg.ended:
            warm_transfers.warm_leg_ended(carrier=carrier, transfer_id=leg.transfer_id)
            return HttpResponse(status=204)
        summary, room = warm_transfers.warm_leg_answered(carrier=carrier, transfer_id=leg.transfer_id)
        return webhooks.warm_answer(summary=summary, room=room, gone=warm_transfers.GONE)


class TransferView(_KindView):
    def get(self, request: HttpRequest, carrier_id: str, call_uuid: str) -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        target = (services.phone_transfer_target(carrier=carrier, token=call_uuid, transport=self.kind.transport)
                  if len(call_uuid) <= 64 else None)
        if target is None:  # no call of this carrier: another carrier's secret reads nothing
            raise NotFound()
        return HttpResponse(target, content_type="text/plain; charset=utf-8")


class WhisperView(_KindView):
    def get(self, request: HttpRequest, carrier_id: str, call_uuid: str) -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        call_id = _call_of(carrier, call_uuid, self.kind.transport)
        return HttpResponse(warm_transfers.warm_dialplan_whisper(carrier=carrier, call_id=call_id),
                            content_type="text/plain; charset=utf-8")


class WarmOutcomeView(_PlainPost):
    def post(self, request: HttpRequest, carrier_id: str, call_uuid: str = "") -> HttpResponse:
        carrier = self.carrier(request, carrier_id)
        call_id = _call_of(carrier, call_uuid, self.kind.transport)
        status = request.POST.get("status", "")
        if not isinstance(status, str) or not 1 <= len(status) <= 32:
            raise ValidationFailed.field("status", "Dial's DIALSTATUS (ANSWER, NOANSWER, BUSY, …).")
        outcome = warm_transfers.warm_dialplan_outcome(carrier=carrier, call_id=call_id, dial_status=status)
        return HttpResponse(outcome, content_type="text/plain; charset=utf-8")


def _call_of(carrier: Any, call_uuid: str, transport: str) -> str:
    """The call of a dialplan's UUID of `carrier` (404 for anything else)."""
    call_id = services.phone_call_of_token(carrier=carrier, token=call_uuid, transport=transport) \
        if len(call_uuid) <= 64 else None
    if call_id is None:
        raise NotFound()
    return call_id


HOOK_VIEWS: dict[str, tuple[type[_KindView], str]] = {
    "incoming": (IncomingView, "post"), "status": (StatusView, "post"), "transfer": (TransferView, "get"),
    "warm": (WarmView, "post"), "whisper": (WhisperView, "get"), "warm_outcome": (WarmOutcomeView, "post")}


def hook_view(kind: CarrierKind, hook: str) -> Any:
    """The view of `kind`'s `hook`: the hook's view bound to the kind, its handler
    described for the OpenAPI document (and its accepted query) as the kind declares."""
    base, method = HOOK_VIEWS[hook]
    assert kind.webhooks is not None
    schema = dict(kind.webhooks.schema[hook])
    query = schema.pop("query", [])

    def handler(self: Any, request: HttpRequest, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = getattr(base, method)(self, request, **kwargs)
        return response

    handler.__name__ = method
    described = extend_schema(**schema)(accepts_query(*query)(handler))
    name = f"{kind.name.title().replace('-', '')}{base.__name__}"
    view: Any = type(name, (base,), {method: described, "kind_name": kind.name, "__doc__": base.__doc__})
    return view.as_view()


def _bind_outbound(carrier: Any, call_id: str, call_sid: str) -> None:
    """A callback of an outbound call we dialled names our call (`?call=`, the dial's
    StatusCallback): the call learns the carrier's sid here if the dial's answer never
    stored it (it timed out after the carrier placed the call), so this callback and
    every later one apply to it. A call bound to another sid keeps it."""
    if not call_id:
        return
    call = phone_calls.outbound_call_of(carrier=carrier, call_id=call_id)
    if call is not None and not phone_calls.call_outbound_answered(call=call, carrier_call_id=call_sid):
        logger.warning("Carrier %s: a callback for call %s names sid %s, the call has another", carrier.pk,
                       call.pk, call_sid)


def _machine_verdict(carrier: Any, call_sid: str, answered_by: str) -> None:
    """The asynchronous answering-machine detection asked for by a campaign's dial
    (calls_app.dialing): a machine is hung up on, or told the campaign's voicemail
    after the beep, as its listener answers; a person is talked to."""
    answer = phone_calls.call_machine_verdict(carrier=carrier, carrier_call_id=call_sid, answered_by=answered_by)
    if answer is None:
        return
    message = ""
    call = phone_calls.phone_call_of(carrier=carrier, carrier_call_id=call_sid)
    if call is not None and not answer.hang_up and answer.touchpoint:
        try:
            message = voicemail_text(tenant=call.tenant, touchpoint=answer.touchpoint, variables=answer.variables,
                                     callback_number=call.from_e164)
        except ApiError as exc:  # e.g. a variable the contact lacks: no message rather than a broken one
            logger.warning("Call %s: the voicemail %s cannot be said (%s); hanging up", call.pk, answer.touchpoint,
                           exc.code)
    try:
        phone_calls.carrier_machine_answer(carrier=carrier, carrier_call_id=call_sid, message=message)
    except CarrierError as exc:
        logger.warning("Carrier %s refused to end call %s at its answering machine: %s", carrier.pk, call_sid, exc)
