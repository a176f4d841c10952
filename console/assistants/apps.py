from django.apps import AppConfig


class AssistantsConfig(AppConfig):
    name = "console.assistants"
    label = "assistants"
    verbose_name = "Assistants"
