from django.apps import AppConfig


class AgentAppConfig(AppConfig):
    name = "agent_app"
    verbose_name = "Voice agent"
