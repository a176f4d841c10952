from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "console.speech"
    label = "speech"
    verbose_name = "Speech (synthesis and recognition)"

    def ready(self):
        # The real engines replace the foundation's placeholder probes (same ids).
        from console.speech.probes import register_probes

        register_probes()
