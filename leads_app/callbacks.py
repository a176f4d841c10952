"""How the callback inbox places a call: leads_app may not import calls_app (calls
link to leads, not the reverse), so calls_app registers the function that places an
outbound call for a lead in its AppConfig.ready(), as privacy_app does for calls."""
from leads_app.errors import CallbacksUnavailable

_start = None


def register_callback_starter(start):
    """`start(*, lead)` places the outbound call to the lead's number and returns it."""
    global _start
    _start = start


def callback_start(*, lead):
    if _start is None:
        raise CallbacksUnavailable()
    return _start(lead=lead)
