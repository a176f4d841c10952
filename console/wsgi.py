import os

import django

from console.handlers import ResolveKeepingWSGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

# What django.core.wsgi.get_wsgi_application does, with the handler that keeps the
# URL resolver's answers (console/handlers.py).
django.setup(set_prefix=False)
application = ResolveKeepingWSGIHandler()
