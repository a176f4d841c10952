"""Booking by voice on a whole Twilio phone call with the offline policy: the voice
webhook signed by Twilio's RequestValidator, the Media Streams WebSocket played in real
time with German speech of our own synthesis (eSpeak NG), heard by Whisper on the phone
band, answered by the dialogue policy on the mock lane, booked in a real CalDAV server
(Radicale) and read back with the `caldav` client; then a second call from the same
number that cancels it ("Ich kann am Dienstag nicht kommen": Whisper base on the phone
band heard "absagen" and "stornieren" from eSpeak NG as other words in 9 of 9 syntheses,
2026-11-28; the policy's text-level tests cover those words)."""
import asyncio
import time

import numpy
import pytest

from agent_app.audio import WireFormat
from calendars_app.models import Appointment
from calls_app.models import Call
from tests.agent_app.conftest import spoken
from tests.agent_app.phone import CALLER, MediaStream, new_call_sid, stream_of
from tests.agent_app.test_booking_calls import events, practice  # noqa: F401 - the practice fixture
from tests.agent_app.test_twilio_call import incoming, on_test_server
from tests.calendars_app.conftest import calendar_url, dav  # noqa: F401 - the Radicale fixtures

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

QUIET_AFTER_REPLY = 1.5  # seconds without the agent's audio after its mark: its reply is over
WIRE = WireFormat("mulaw", 8000)
SILENCE = WIRE.from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)  # 20 ms


def _replied(carrier, since):
    """The agent answered after `since`: a mark after its audio, then a quiet moment."""
    media = [at for at, _ in carrier.of("media") if at > since]
    marks = [at for at, _ in carrier.of("mark") if at > since]
    return bool(media and marks) and time.monotonic() - media[-1] > QUIET_AFTER_REPLY


async def _call(port, twiml, call_sid, utterances):
    url, token = stream_of(twiml)
    async with MediaStream(on_test_server(url, port), call_sid, token) as carrier:
        await carrier.start()
        await carrier.media_until(SILENCE, lambda: _replied(carrier, 0))  # the disclosure and the greeting
        for audio in utterances:
            await carrier.media(audio)
            said_at = time.monotonic()
            await carrier.media_until(SILENCE, lambda at=said_at: _replied(carrier, at))
        await carrier.send({"event": "stop", "streamSid": carrier.stream_sid,
                            "stop": {"accountSid": carrier.call_sid, "callSid": call_sid}})
        await carrier.ws.wait_closed()


def _phone_call(client, port, texts):
    call_sid = new_call_sid()
    twiml = incoming(client, call_sid)
    audio = [spoken(text, WIRE) for text in texts]
    asyncio.run(_call(port, twiml, call_sid, audio))
    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    return call, [(entry.role, entry.text) for entry in call.transcript_entries.all()]


def test_a_phone_call_books_in_radicale_and_a_second_call_cancels_it(
        agent_server, client, tenant_a, practice, twilio_carrier, called_number, whisper_ready,  # noqa: F811
        mock_gateway):
    assistant, url, server = practice
    assert called_number.assistant_id is None  # the tenant's only assistant, the practice's, answers
    call, lines = _phone_call(client, agent_server.port, [
        "Ich hätte gern einen Termin nächste Woche am Dienstag um zehn Uhr.", "Ja, das passt gut.",
        "Mein Name ist Lehmann."])
    assert call.from_e164 == CALLER
    said = " ".join(text for role, text in lines if role == "assistant")
    booked = Appointment.objects.get()
    [event] = events(url, server)
    assert event["start"] == booked.starts_at and CALLER in event["summary"], (event, lines)
    assert booked.starts_at.weekday() == 1 and booked.caller_e164 == CALLER, lines
    assert "Ihr Termin ist gebucht: Dienstag" in said and "um zehn Uhr" in said, said
    notes = [text for role, text in lines if role == "system"]
    assert any("Termin gebucht" in note and "10:00" in note for note in notes), notes

    _, lines = _phone_call(client, agent_server.port, [
        "Ich kann am Dienstag nicht kommen.", f"Mein Name ist {booked.caller_name}."])
    said = " ".join(text for role, text in lines if role == "assistant")
    assert "ist abgesagt" in said, [text for role, text in lines if role == "user"]
    assert events(url, server) == []
    booked.refresh_from_db()
    assert booked.status == "cancelled"
