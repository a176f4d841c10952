"""The `signed-webhook` kind: a carrier that carries the call itself and posts signed
events to `POST /voice/webhook/<carrier>` (CONTRACT §5, calls_app/voice_views.py),
signed with the carrier's derived secret. It has no credentials of its own, no media
stream of ours, and dials nobody (the built-in `sim` carrier, of this kind, dials
through the adapter VOICE_CARRIER_ADAPTERS names for it)."""
from calls_app.kinds.base import CarrierKind

KIND = CarrierKind(
    name="signed-webhook", label="Signierter Webhook",
    setup="events go to POST /voice/webhook/{id}, signed with this secret (HMAC-SHA256, see docs/api.md)",
)
