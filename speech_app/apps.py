from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "speech_app"
    label = "speech"
    verbose_name = "Speech (synthesis and recognition)"

    def ready(self):
        # The real engines replace the foundation's placeholder probes (same ids).
        from speech_app.probes import register_probes

        register_probes()
