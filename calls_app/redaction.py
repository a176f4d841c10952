"""What the voice runtime keeps of personal data in carrier events, and the hook
through which the privacy features (privacy_app, a layer above) name erased callers.

A stored carrier event (`CarrierEvent.data`) is a copy of what it applied, so it keeps
no more than its call does: a transcript line's text only while the call keeps its
transcript (transcription on, not redacted), a recording link only while the call keeps
its recording, and the numbers as the call stores them (a pseudonym after an erasure).
Events that wait for their `call.started` keep everything until they are applied.
"""
from calls_app import events as ev

_erased_caller_lookups = []


def register_erased_caller_lookup(lookup):
    """`lookup(*, tenant, e164, occurred_at)` → the pseudonym that replaces `e164` if
    the tenant erased that caller's data after `occurred_at`, else None. privacy_app
    registers itself here when the apps are ready (calls_app must not import it)."""
    if lookup not in _erased_caller_lookups:
        _erased_caller_lookups.append(lookup)


def erased_caller_pseudonym(*, tenant, e164, occurred_at):
    """The pseudonym of a caller whose data the tenant erased after the call, or None:
    a late `call.started` of such a call must not bring the number back."""
    if not e164:
        return None
    for lookup in _erased_caller_lookups:
        pseudonym = lookup(tenant=tenant, e164=e164, occurred_at=occurred_at)
        if pseudonym:
            return pseudonym
    return None


def stripped(event_type, data, *, keep_text=True, keep_recording=True, numbers=None):
    """A copy of an event's `data` without what its call does not keep. `numbers`:
    the call's (from, to) to write over a call.started's numbers (after an erasure)."""
    data = dict(data)
    if event_type == ev.TRANSCRIPT and not keep_text:
        data["text"] = ""
    elif event_type == ev.ENDED and not keep_recording and data.get("recordingUrl"):
        data["recordingUrl"] = ""
    elif event_type == ev.STARTED and numbers is not None and "from" in data:
        data["from"], data["to"] = numbers
    return data


def kept_of_call(event_type, data, call):
    """`data` as it may be stored once applied to `call`."""
    return stripped(
        event_type, data,
        keep_text=call.transcription_enabled and not call.redacted,
        keep_recording=call.recording_enabled and not call.redacted,
        numbers=(call.from_e164, call.to_e164) if call.redacted else None,
    )
