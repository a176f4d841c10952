"""Recordings of the phone calls our own bridges carry (docs/telephony.md, "Recording").

Where the tenant's `recordingEnabled` was on when the call started, the bridge records
the caller and the agent as the two channels of one MP3, stored through the storage the
render cache uses (`speech_app.cache.cache_storage()`: local files by default, a shared
directory or an object store in production) under `recordings/<tenant>/<call>.mp3`,
beside the cache's own `render/` folder, which its eviction never touches.

The call keeps `recording_url` = `/voice/recordings/<call id>` (the recording's own
path, which no carrier link can be: those are absolute http(s) URLs). The API and the
admin never show that path: they show a signed link that expires
(`RECORDING_LINK_TTL_SEC`, at least that long and at most twice: the expiry is rounded
up, so that the call list's texts stay the same within one period). Retention and
erasure delete the file with the link (`recordings_delete`, called by privacy_app)."""
import hashlib
import hmac
import logging
import time

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Sum
from django.utils.crypto import salted_hmac

from calls_app.ledger import _locked
from calls_app.models import Call
from console.errors import TenantLimitReached
from console.quotas import quota_refuse_past
from console.tenants.models import Tenant
from speech_app.cache import cache_storage

logger = logging.getLogger("calls_app.phone")

PATH_PREFIX = "/voice/recordings/"
FOLDER = "recordings"


def is_stored(recording_url):
    """Whether a call's `recording_url` names a recording of ours (not a carrier's link)."""
    return bool(recording_url) and recording_url.startswith(PATH_PREFIX)


def storage_name(tenant_id, call_id):
    return f"{FOLDER}/{tenant_id}/{call_id}.mp3"


@transaction.atomic
def call_recording_store(*, call_id, mp3):
    """Stores the call's recording if the call keeps one (recording on when it started,
    not redacted since); returns whether it was stored."""
    call = _locked(Call.objects.all()).filter(pk=call_id).first()
    if call is None or not call.recording_enabled or call.redacted:
        return False
    try:
        quota_refuse_past(name="recordingBytes", used=recordings_bytes(call.tenant) - call.recording_bytes,
                          adding=len(mp3))
    except TenantLimitReached as full:
        logger.warning("Call %s not recorded: %s", call.pk, full.message)
        return False
    storage = cache_storage()
    name = storage_name(call.tenant_id, call.pk)
    if storage.exists(name):
        storage.delete(name)
    storage.save(name, ContentFile(mp3))
    call.recording_url, call.recording_bytes = PATH_PREFIX + call.pk, len(mp3)
    call.save(update_fields=["recording_url", "recording_bytes"])
    return True


def recordings_bytes(tenant: Tenant) -> int:
    """The bytes of the tenant's stored recordings (its `recordingBytes` usage)."""
    return Call.objects.filter(tenant=tenant, recording_url__startswith=PATH_PREFIX).aggregate(
        used=Sum("recording_bytes"))["used"] or 0


def recordings_delete(*, calls):
    """Deletes the stored recordings of `calls` (a queryset the caller chose: retention,
    erasure) from the storage; the caller then clears their links. Returns how many."""
    storage = cache_storage()
    deleted = 0
    for call_id, tenant_id in calls.filter(recording_url__startswith=PATH_PREFIX).values_list("pk", "tenant_id"):
        name = storage_name(tenant_id, call_id)
        if storage.exists(name):
            storage.delete(name)
            deleted += 1
    return deleted


# --- Signed links -------------------------------------------------------------------------

def _signature(call_id, expires):
    key = salted_hmac("calls_app.recording-link", "v1", algorithm="sha256").digest()
    return hmac.new(key, f"{call_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def link_period(now=None):
    """The period the links written now belong to (a key part of the call list's texts)."""
    return int((time.time() if now is None else now) // settings.RECORDING_LINK_TTL_SEC)


def recording_link(call_id, recording_url, now=None):
    """What the API shows as `recording_url`: a carrier's link as it is, a recording of
    ours as a signed link valid for one to two RECORDING_LINK_TTL_SEC, None without any."""
    if not is_stored(recording_url):
        return recording_url or None
    expires = (link_period(now) + 2) * settings.RECORDING_LINK_TTL_SEC
    base = settings.VOICE_PUBLIC_BASE_URL.rstrip("/")
    return f"{base}{PATH_PREFIX}{call_id}.mp3?expires={expires}&signature={_signature(call_id, expires)}"


def recording_file(*, call_id, expires, signature, now=None):
    """The open file of the call's recording if the link is genuine and unexpired and the
    recording still exists; else None (the view answers 404 for all of these alike)."""
    if not (isinstance(expires, str) and expires.isdigit() and len(expires) <= 12 and isinstance(signature, str)):
        return None
    if int(expires) < (time.time() if now is None else now):
        return None
    if not hmac.compare_digest(_signature(call_id, int(expires)), signature[:200]):
        return None
    row = Call.objects.filter(pk=call_id).values_list("tenant_id", "recording_url").first()
    if row is None or not is_stored(row[1]):
        return None
    storage = cache_storage()
    name = storage_name(row[0], call_id)
    if not storage.exists(name):
        return None
    return storage.open(name, "rb")
