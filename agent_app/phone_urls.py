"""The phone bridges' HTTP paths under /voice/ (docs/telephony.md), derived from the
carrier kinds (calls_app/kinds): each hook a kind's webhooks declare, at
`<kind>/<carrier_id>/<its path>`. Their WebSocket is in routing.py."""
from django.urls import path

from agent_app.phone_views import hook_view
from calls_app.kinds import KINDS

urlpatterns = [
    path(f"{kind.name}/<str:carrier_id>/{hook_path}", hook_view(kind, hook), name=f"voice-{kind.name}-{hook}")
    for kind in KINDS.values() if kind.webhooks is not None
    for hook, hook_path in kind.webhooks.paths.items()
]
