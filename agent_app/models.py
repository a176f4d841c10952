"""Voice agent sessions: the grant behind one conversation (a browser's WebSocket, or
a phone call's media stream or AudioSocket connection).

The session's call (calls_app) holds the minutes reserved for it; the session holds
only what the WebSocket needs to find it: the token's digest (never the token), when
the token stops working unused, and the conversation's settings."""
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


def known_transport(value: str) -> None:
    """The browser's transport or a carrier kind's (a new kind needs no migration)."""
    from calls_app.kinds import transports

    if value not in transports():
        raise ValidationError(_("Unknown transport: %(value)s."), params={"value": value})


class AgentSession(models.Model):
    class Encoding(models.TextChoices):
        PCM = "pcm_s16le", "PCM s16le"
        MULAW = "mulaw", "μ-law"
        ALAW = "alaw", "A-law"

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("vs"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="agent_sessions",
                               verbose_name=_("tenant"))
    call = models.OneToOneField("calls_app.Call", on_delete=models.CASCADE, related_name="agent_session",
                                verbose_name=_("call"))
    # SHA-256 of the token: the token has 256 random bits, so a plain digest cannot be
    # reversed, and the lookup by digest reveals nothing about stored tokens.
    token_digest = models.CharField(_("token digest"), max_length=64, unique=True, editable=False)
    expires_at = models.DateTimeField(_("expires"))
    used_at = models.DateTimeField(_("used at"), null=True, blank=True)
    assistant_id = models.CharField(_("assistant id"), max_length=ID_LENGTH, blank=True)
    language = models.CharField(_("language"), max_length=16, default="de")
    voice = models.CharField(_("voice"), max_length=64, blank=True)
    variables = models.JSONField(_("variables"), default=dict, blank=True)
    encoding = models.CharField(_("encoding"), max_length=16, choices=Encoding.choices, default=Encoding.PCM)
    sample_rate = models.PositiveIntegerField(_("sample rate"), default=16000)
    # What may claim the session's token: each transport claims only its own ("web",
    # the browser's, or a carrier kind's: calls_app/kinds).
    transport = models.CharField(_("transport"), max_length=16, default="web", validators=[known_transport])
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "used_at", "expires_at"], name="agent_session_unused")]
        verbose_name = _("agent session")
        verbose_name_plural = _("agent sessions")

    def __str__(self) -> str:
        return f"{self.id} ({self.encoding}/{self.sample_rate})"
