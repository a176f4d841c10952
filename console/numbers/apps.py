from django.apps import AppConfig


class NumbersConfig(AppConfig):
    name = "console.numbers"
    label = "numbers"
    verbose_name = "Phone numbers"
