"""Recordings of phone calls: where the tenant's recordingEnabled is on, the caller and
the agent are the two channels of an MP3 in the render cache's storage, listed as a
signed, expiring link, playable in the admin's call page, and removed by erasure and
by retention like every other copy."""
import asyncio
import io
import uuid
from datetime import timedelta
from urllib.parse import urlsplit

import av
import numpy
import pytest
from django.utils import timezone

from calls_app import recordings
from calls_app.models import Call
from calls_app.services import carrier_create
from console.numbers.services import number_create
from privacy_app.services import erasure_create, retention_apply
from speech_app.cache import cache_storage
from tests.agent_app.phone import CALLED, AudioSocketPeer
from tests.agent_app.test_audiosocket import register

pytestmark = pytest.mark.django_db(transaction=True)
TONE = (numpy.sin(numpy.arange(8000) / 8000 * 2 * numpy.pi * 440) * 8000).astype("<i2").tobytes()  # 1 s


@pytest.fixture
def recorded_tenant(tenant_a, render_cache_dir):
    tenant_a.recording_enabled = True
    tenant_a.max_call_minutes = 1
    tenant_a.save(update_fields=["recording_enabled", "max_call_minutes"])
    number_create(tenant=tenant_a, e164=CALLED)
    return tenant_a


def _decoded(mp3):
    with av.open(io.BytesIO(mp3)) as container:
        stream = container.streams.audio[0]
        rate, channels = stream.codec_context.sample_rate, stream.codec_context.layout.nb_channels
        frames = [frame.to_ndarray() for frame in container.decode(stream)]
    return rate, channels, numpy.concatenate(frames, axis=1)


async def _call(port, call_uuid):
    async with AudioSocketPeer(port) as peer:
        await peer.send(0x01, call_uuid.bytes)
        await peer.audio(TONE)  # the caller's side: a second of 440 Hz
        await peer.audio_until(lambda: len(peer.audio_in()) > 100)  # two seconds of the agent's
        await peer.send(0x00)
        await asyncio.wait_for(peer.closed.wait(), 30)


def test_a_recorded_call_is_stored_listed_playable_and_erased(audiosocket, client, api_a, admin_client,
                                                              recorded_tenant):
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    asyncio.run(_call(audiosocket.port, uuid.UUID(register(client, secret).content.decode())))
    call = Call.objects.get()
    assert call.recording_url == f"/voice/recordings/{call.pk}"
    name = recordings.storage_name(call.tenant_id, call.pk)
    assert cache_storage().exists(name)

    link = api_a.get(f"/v2/calls/{call.pk}").json()["recording_url"]
    parts = urlsplit(link)
    assert parts.path == f"/voice/recordings/{call.pk}.mp3" and "signature=" in parts.query
    assert api_a.get("/v2/calls").json()["calls"][0]["recording_url"] == link  # the list shows the same
    played = client.get(f"{parts.path}?{parts.query}")
    assert played.status_code == 200 and played["Content-Type"] == "audio/mpeg"
    rate, channels, samples = _decoded(b"".join(played.streaming_content))
    assert (rate, channels) == (8000, 2)
    caller, agent = numpy.abs(samples[0]).mean(), numpy.abs(samples[1]).mean()
    assert caller > 0.005 and agent > 0.005  # the tone on the left, the agent's speech on the right

    assert client.get(f"{parts.path}?{parts.query.replace('signature=', 'signature=0')}").status_code == 404
    expired = f"{parts.path}?expires=1000&signature=" + recordings._signature(call.pk, 1000)
    assert client.get(expired).status_code == 404
    page = admin_client.get(f"/admin/calls_app/call/{call.pk}/change/").content.decode()
    assert f'<audio controls preload="none" src="/voice/recordings/{call.pk}.mp3?expires=' in page

    erasure_create(tenant=recorded_tenant, call_id=call.pk, actor="key:test")
    assert not cache_storage().exists(name)
    assert client.get(f"{parts.path}?{parts.query}").status_code == 404
    assert api_a.get(f"/v2/calls/{call.pk}").json()["recording_url"] is None


def test_retention_deletes_the_recording_with_its_link(recorded_tenant):
    from calls_app.phone_calls import call_request_phone

    carrier, _ = carrier_create(carrier_id="ast1", kind="asterisk")
    call = call_request_phone(carrier=carrier, tenant=recorded_tenant, carrier_call_id="as-1", from_e164="",
                              to_e164=CALLED)
    assert recordings.call_recording_store(call_id=call.pk, mp3=b"ID3fake")
    name = recordings.storage_name(call.tenant_id, call.pk)
    assert cache_storage().exists(name)
    retention_apply(tenant=recorded_tenant, now=timezone.now() + timedelta(days=400))
    call.refresh_from_db()
    assert call.recording_url == "" and not cache_storage().exists(name)


def test_a_call_of_a_tenant_without_recording_keeps_none(tenant_a, render_cache_dir):
    from calls_app.phone_calls import call_request_phone

    carrier, _ = carrier_create(carrier_id="ast1", kind="asterisk")
    call = call_request_phone(carrier=carrier, tenant=tenant_a, carrier_call_id="as-2", from_e164="", to_e164=CALLED)
    assert not recordings.call_recording_store(call_id=call.pk, mp3=b"ID3fake")
    assert not cache_storage().exists(recordings.storage_name(call.tenant_id, call.pk))
