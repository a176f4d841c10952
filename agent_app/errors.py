"""Errors of the voice agent's session API (docs/api.md)."""
from console.errors import ValidationFailed


class UnknownAssistant(ValidationFailed):
    code = "unknown_assistant"
    message = "No assistant with this id in this tenant."
