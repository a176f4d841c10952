from django.apps import AppConfig


class CallsAppConfig(AppConfig):
    name = "calls_app"
    verbose_name = "Calls and usage"

    def ready(self):
        from calls_app.carriers import SimCarrierAdapter
        from console.engines import carrier_probes

        carrier_probes.register(SimCarrierAdapter.id, SimCarrierAdapter.probe)
