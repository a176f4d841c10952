"""Voice agent sessions: the grant behind one conversation (a browser's WebSocket, or
a phone call's media stream or AudioSocket connection).

The session's call (calls_app) holds the minutes reserved for it; the session holds
only what the WebSocket needs to find it: the token's digest (never the token), when
the token stops working unused, and the conversation's settings."""
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

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


class Scenario(models.Model):
    """A test call of an assistant (docs/api.md, "Test calls"): the caller's turns,
    what the agent must (not) do, and the answers its HTTP tools give in a run. Only what
    the operator typed is kept: no caller's data unless they typed it."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("sc"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="scenarios",
                               verbose_name=_("tenant"))
    assistant = models.ForeignKey("assistants.Assistant", on_delete=models.CASCADE, related_name="scenarios",
                                  verbose_name=_("assistant"))
    name = models.CharField(_("name"), max_length=200)
    # [{"text": str, "dtmf": str, "expectations": [...]}]: agent_app.scenario_checks.
    turns = models.JSONField(_("caller's turns"), default=list)
    variables = models.JSONField(_("caller variables"), default=dict, blank=True)
    # {"description": who calls and what they want, "maxTurns": n}: a chat lane plays the
    # caller instead of `turns` (not deterministic); None: the turns as written.
    persona = models.JSONField(_("simulated caller"), null=True, blank=True, default=None)
    expectations = models.JSONField(_("expectations at the end"), default=list, blank=True)
    # {tool name: the JSON answer it gives in a run}
    tool_stubs = models.JSONField(_("tool answers"), default=dict, blank=True)
    real_tools = models.BooleanField(_("call the real HTTP tools"), default=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["tenant", "assistant"], name="scenario_of_assistant")]
        verbose_name = _("test case")
        verbose_name_plural = _("test cases")

    def __str__(self) -> str:
        return self.name


class ScenarioRun(models.Model):
    """One run of an assistant's scenarios against a version (None: its draft). Not a
    call: nothing in /v2/calls, no minutes, no usage."""

    class Status(models.TextChoices):
        QUEUED = "queued", pgettext_lazy("choice", "Queued")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        PASSED = "passed", pgettext_lazy("choice", "Passed")
        FAILED = "failed", pgettext_lazy("choice", "Failed")

    class Mode(models.TextChoices):
        TEXT = "text", pgettext_lazy("choice", "Text")
        VOICE = "voice", pgettext_lazy("choice", "Voice (phone)")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("sr"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="scenario_runs",
                               verbose_name=_("tenant"))
    assistant = models.ForeignKey("assistants.Assistant", on_delete=models.CASCADE, related_name="scenario_runs",
                                  verbose_name=_("assistant"))
    version = models.PositiveIntegerField(_("version"), null=True, blank=True)
    mode = models.CharField(_("mode"), max_length=8, choices=Mode.choices, default=Mode.TEXT)
    status = models.CharField(_("status"), max_length=8, choices=Status.choices, default=Status.QUEUED)
    # "api", "publish" or "command"
    trigger = models.CharField(_("started by"), max_length=16, default="api")
    # One result per scenario (agent_app.scenario_runs.scenario_play).
    results = models.JSONField(_("results"), default=list, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "created_at"], name="scenario_run_of_day"),
                   models.Index(fields=["assistant", "created_at"], name="scenario_run_of_assistant")]
        verbose_name = _("test run")
        verbose_name_plural = _("test runs")

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"
