from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SpeechConfig(AppConfig):
    name = "speech_app"
    label = "speech"
    verbose_name = _("Speech (synthesis and recognition)")

    def ready(self):
        # The real engines replace the foundation's placeholder probes (same ids).
        from speech_app.piper import PiperSynthesizer, register_piper_probe
        from speech_app.probes import register_probes
        from speech_app.tts import SYNTHESIZERS

        register_probes()
        # Piper (an operator's voice files) beside eSpeak; its module imports tts, so
        # it is added here rather than imported there.
        SYNTHESIZERS.setdefault(PiperSynthesizer.id, PiperSynthesizer)
        register_piper_probe()
