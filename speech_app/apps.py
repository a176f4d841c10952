from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SpeechConfig(AppConfig):
    name = "speech_app"
    label = "speech"
    verbose_name = _("Speech (synthesis and recognition)")

    def ready(self):
        # The real engines replace the foundation's placeholder probes (same ids).
        from speech_app.probes import register_probes

        register_probes()
