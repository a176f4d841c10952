from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentAppConfig(AppConfig):
    name = "agent_app"
    verbose_name = _("Voice agent")

    def ready(self) -> None:
        # The sessions' variables are personal data of web calls, which have no number:
        # privacy_app (a sibling, which may not import us) reaches them through this hook.
        from agent_app import selectors, services
        from agent_app.policy import DialoguePolicy
        from calls_app.call_data import CallData, register_call_data
        from gateway_app.providers.mock import register_mock_policy

        register_call_data(CallData(
            name="agentSessions", calls_naming=selectors.agent_sessions_calls_naming,
            export=selectors.agent_sessions_export, erase=services.agent_sessions_erase,
            expire=services.agent_sessions_purge,
        ))
        # The mock lane's turns that offer tools get the offline dialogue policy (the
        # gateway imports no app above it, so the policy is handed down here).
        register_mock_policy(DialoguePolicy())
        # The admin's assistant page shows what its callers hear first (the core does not
        # speak; this app does).
        from agent_app.conversation import first_heard
        from console.assistants.references import register_first_heard

        register_first_heard(first_heard)
        # Test calls: their caps counted, and publishing plays them first.
        from agent_app.scenario_services import scenarios_publish_check
        from agent_app.selectors import scenario_runs_today, scenarios_kept
        from console.assistants.services import publish_check_register
        from console.quotas import register_usage

        register_usage("scenarios", scenarios_kept)
        register_usage("scenarioRuns", scenario_runs_today)
        publish_check_register(scenarios_publish_check)
