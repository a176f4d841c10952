"""The ASGI application: HTTP goes to Django as under WSGI, WebSockets to the paths
named by settings.ASGI_WEBSOCKET_ROUTES (the voice agent's, agent_app/routing.py).

Named in settings, not imported here, because the core imports no feature app."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

# Django first: the consumers' modules import models.
django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": URLRouter([route for name in settings.ASGI_WEBSOCKET_ROUTES for route in import_string(name)]),
})
