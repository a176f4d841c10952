from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CallsAppConfig(AppConfig):
    name = "calls_app"
    verbose_name = _("Calls and usage")

    def ready(self):
        from calls_app.carriers import SimCarrierAdapter
        from console.engines import carrier_probes

        carrier_probes.register(SimCarrierAdapter.id, SimCarrierAdapter.status)

        # GET /health: each SIP trunk's registration (the SIP agent writes it).
        from calls_app.selectors import sip_registration_states
        from console.engines import health_sections

        health_sections["sipCarriers"] = lambda: list(sip_registration_states().values())

        # The callback inbox's "Rückruf starten" (leads_app cannot import us).
        from calls_app.services import call_start_for_lead
        from leads_app.callbacks import register_callback_starter

        register_callback_starter(call_start_for_lead)

        from calls_app.recordings import recordings_bytes
        from console.quotas import register_usage

        register_usage("recordingBytes", recordings_bytes)

        # The built-in tools whose effect is on the call (console.assistants.builtin_tools).
        from calls_app.builtin_tools import TOOLS
        from console.assistants.builtin_tools import register_builtin_tool

        for tool in TOOLS:
            register_builtin_tool(tool)
