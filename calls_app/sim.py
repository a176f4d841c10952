"""Plays whole calls of the `sim` carrier through the real signed webhook.

Each event is signed with the sim carrier's secret and handed to the same code the
webhook view runs (`services.event_receive`: signature check, parsing, idempotency),
or, with `base_url`, posted over HTTP to a running server.
"""
import json
import random
import urllib.error
import urllib.request
from datetime import timedelta

from django.utils import timezone

from calls_app import services
from calls_app.carriers import sim_carrier
from calls_app.signing import carrier_secret, signature_header

DEFAULT_CALLER = "+4917612345678"
CONVERSATION = [
    ("assistant", "Guten Tag, hier ist die Praxis. Wie kann ich Ihnen helfen?"),
    ("user", "Ich hätte gern einen Termin für nächste Woche."),
    ("assistant", "Gern. Für Vormittag drücken Sie die 1, für Nachmittag die 2."),
    ("system", "Eingabe über die Telefontastatur: 1"),
    ("user", "Dienstag um zehn wäre gut."),
    ("assistant", "Ich habe Dienstag, 10 Uhr, für Sie eingetragen. Auf Wiederhören!"),
]


def call_events(*, carrier_call_id, started, seconds, event_prefix, inbound=None, call_id=None,
                conversation=CONVERSATION, status="completed"):
    """The events of one call, in order: started, disclosed, transcript lines, ended.

    `inbound` is (from, to) for an inbound call; `call_id` the runtime's id of an
    outbound one."""
    if call_id:
        started_data = {"direction": "outbound", "callId": call_id}
    else:
        started_data = {"direction": "inbound", "from": inbound[0], "to": inbound[1]}
    step = max(1, seconds // (len(conversation) + 2))
    events = [("call.started", started_data, started), ("call.disclosed", {}, started + timedelta(seconds=1))]
    for index, (role, text) in enumerate(conversation, start=1):
        moment = started + timedelta(seconds=min(seconds, index * step))
        events.append(("call.transcript", {"role": role, "text": text, "ts": _iso(moment)}, moment))
    events.append(("call.ended", {"status": status, "seconds": seconds}, started + timedelta(seconds=seconds)))
    return [
        {"id": f"{event_prefix}-{index}", "type": kind, "occurredAt": _iso(moment),
         "data": {"carrierCallId": carrier_call_id, **data}}
        for index, (kind, data, moment) in enumerate(events)
    ]


def _iso(moment):
    return moment.isoformat().replace("+00:00", "Z")


def deliver(events, *, base_url=None, shuffle=False, twice=False):
    """Signs and delivers `events`; returns the HTTP status of each delivery."""
    carrier = sim_carrier()
    secret = carrier_secret(carrier)
    batch = list(events) * (2 if twice else 1)
    if shuffle:
        random.shuffle(batch)
    statuses = []
    for event in batch:
        body = json.dumps(event).encode()
        signature = signature_header(secret, body)
        if base_url:
            statuses.append(_post(f"{base_url.rstrip('/')}/voice/webhook/{carrier.pk}", body, signature))
        else:
            statuses.append(services.event_receive(carrier_id=carrier.pk, raw_body=body, signature=signature).status)
    return statuses


def _post(url, body, signature):
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "X-Signature": signature}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def play_inbound(*, number, caller=DEFAULT_CALLER, seconds=95, started=None, event_prefix=None, **delivery):
    """An inbound call to `number` (a tenant's PhoneNumber) from `caller`."""
    carrier_call_id = f"SIMIN{timezone.now().strftime('%Y%m%d%H%M%S%f')}{random.randrange(10**6):06d}"
    events = call_events(
        carrier_call_id=carrier_call_id, started=started or timezone.now(), seconds=seconds,
        event_prefix=event_prefix or f"evt-{carrier_call_id}", inbound=(caller, number.e164),
    )
    return carrier_call_id, deliver(events, **delivery)


def play_outbound(*, tenant, to, seconds=75, started=None, event_prefix=None, status="completed", **delivery):
    """Requests an outbound call (cap check and reservation), lets the sim carrier dial
    it, then plays it; the call lasts at most the granted time."""
    call = services.call_request_outbound(tenant=tenant, carrier=sim_carrier(), to_e164=to)
    call = services.call_dial(call=call)
    events = call_events(
        carrier_call_id=call.carrier_call_id, started=started or timezone.now(),
        seconds=min(seconds, call.max_seconds), event_prefix=event_prefix or f"evt-{call.carrier_call_id}",
        call_id=call.pk, status=status,
    )
    return call, deliver(events, **delivery)
