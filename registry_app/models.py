"""The registry as the database keeps it.

The JSON document is the source of truth: every load is kept as a `RegistryVersion`
with the document exactly as loaded, and the current version is the latest load.
`Lane` and `IntegrationLayer` rows are the current version's content, flattened for
browsing and filtering in the admin; a load replaces them. `LaneHealth` keeps the
latest health-probe result per lane id across loads (the router excludes a lane
whose probes failed several times in a row recently); `LaneCooldown` the lanes the
gateway has put in a short cooldown after a failed call (the router leaves them out
until it ends).
"""
import json

from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

CAPABILITIES = ("chat", "code", "stt", "tts", "voice-agent")
STATUSES = ("live", "key-ready", "module-ready", "key-gated", "key-missing", "key-orphan", "stub", "eval",
            "degraded", "session-gated")
HOSTINGS = ("subscription", "api", "self-hosted")
QUALITY_TIERS = ("frontier", "high", "mid")
LATENCY_CLASSES = ("fast", "medium", "slow")


def _choices(values):
    return [(value, value) for value in values]


class RegistryVersionQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by("-number")

    def current(self):
        """The latest load is the current version (loading an older document again
        makes a new version with that document)."""
        return self.newest_first().first()


class RegistryVersion(models.Model):
    number = models.BigAutoField(_("number"), primary_key=True)
    # SHA-256 of the canonical JSON (sorted keys, no whitespace): the same content
    # formatted differently is the same document.
    sha256 = models.CharField(_("SHA-256"), max_length=64, db_index=True)
    version = models.CharField(_("version"), max_length=64)
    updated = models.DateField(_("document date"))
    lane_count = models.PositiveIntegerField(_("number of lanes"))
    loaded_at = models.DateTimeField(_("loaded"), auto_now_add=True)
    loaded_by = models.CharField(_("loaded by"), max_length=150)
    # The document exactly as loaded (key order kept), as JSON text. The last column:
    # SQLite reads a row's columns in order, so the small ones before it stay cheap.
    document_text = models.TextField(_("document (JSON)"))

    objects = RegistryVersionQuerySet.as_manager()

    class Meta:
        ordering = ["-number"]
        verbose_name = _("registry version")
        verbose_name_plural = _("registry versions")

    def __str__(self):
        return f"#{self.number} {self.version} ({self.updated})"

    @property
    def document(self):
        return json.loads(self.document_text)


class IntegrationLayer(models.Model):
    version = models.ForeignKey(RegistryVersion, on_delete=models.CASCADE, related_name="layers",
                                verbose_name=_("registry version"))
    name = models.CharField(_("name"), max_length=64)
    description = models.TextField(_("description"), blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="registry_layer_unique_per_version")]
        verbose_name = _("integration layer")
        verbose_name_plural = _("integration layers")

    def __str__(self):
        return self.name


class Lane(models.Model):
    version = models.ForeignKey(RegistryVersion, on_delete=models.CASCADE, related_name="lanes",
                                verbose_name=_("registry version"))
    position = models.PositiveIntegerField(_("position in the document"),
                                           help_text=_("index in the document's models array"))
    lane_id = models.CharField(_("lane id"), max_length=100)
    name = models.CharField(_("name"), max_length=200)
    capability = models.CharField(_("capability"), max_length=16, choices=_choices(CAPABILITIES), db_index=True)
    provider = models.CharField(_("provider"), max_length=200, db_index=True)
    hosting = models.CharField(_("hosting"), max_length=16, choices=_choices(HOSTINGS), db_index=True)
    access = models.CharField(_("access"), max_length=64)
    endpoint = models.CharField(_("endpoint"), max_length=500, blank=True)
    health = models.CharField(_("health check"), max_length=500, null=True, blank=True)
    cost_model = models.CharField(_("cost model"), max_length=16)
    cost_unit = models.CharField(_("cost unit"), max_length=16)
    cost_eur = models.DecimalField(_("price (EUR)"), max_digits=14, decimal_places=6, null=True, blank=True,
                                   help_text=_("empty: price unknown (never counted as free)"))
    status = models.CharField(_("status"), max_length=16, choices=_choices(STATUSES), db_index=True)
    priority = models.IntegerField(_("priority"))
    quality_tier = models.CharField(_("quality tier"), max_length=16, choices=_choices(QUALITY_TIERS), db_index=True)
    latency_class = models.CharField(_("latency class"), max_length=16, choices=_choices(LATENCY_CLASSES),
                                     db_index=True)
    params = models.JSONField(_("parameters"), default=dict)
    test = models.TextField(_("test request"), blank=True)
    source = models.CharField(_("source"), max_length=500, blank=True)
    notes = models.TextField(_("notes"), blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["version", "lane_id"], name="registry_lane_unique_per_version")]
        indexes = [models.Index(fields=["version", "capability", "status"], name="registry_lane_routing")]
        verbose_name = _("engine lane")
        verbose_name_plural = _("engine lanes")

    def __str__(self):
        return self.lane_id


class LaneHealth(models.Model):
    """The latest health-probe result of a lane (by lane id, so it survives loads)."""

    lane_id = models.CharField(_("lane id"), max_length=100, unique=True)
    target = models.CharField(_("target"), max_length=600, help_text=_("the URL that was probed"))
    ok = models.BooleanField(_("healthy"))
    detail = models.CharField(_("detail"), max_length=300, blank=True)
    checked_at = models.DateTimeField(_("checked"), db_index=True)
    # Failed probes in a row up to this one (0 after a success): one failed probe
    # (a restart, a slow moment) does not mark a lane degraded.
    consecutive_failures = models.PositiveIntegerField(_("failures in a row"), default=0)

    class Meta:
        ordering = ["lane_id"]
        verbose_name = _("lane health")
        verbose_name_plural = _("lane health")

    def __str__(self):
        return f"{self.lane_id}: {gettext('ok') if self.ok else gettext('failed')}"


class LaneCooldown(models.Model):
    """A lane whose last call failed (connection error, timeout, 5xx, 429): the router
    leaves it out until `until`. In the database, so every app server process sees it."""

    lane_id = models.CharField(_("lane id"), max_length=100, unique=True)
    until = models.DateTimeField(_("until"), db_index=True)
    failures = models.PositiveIntegerField(_("failures"), default=1, help_text=_("failed calls in a row"))
    reason = models.CharField(_("reason"), max_length=300, blank=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    class Meta:
        ordering = ["lane_id"]
        verbose_name = _("lane cooldown")
        verbose_name_plural = _("lane cooldowns")

    def __str__(self):
        return gettext("%(lane)s until %(time)s") % {"lane": self.lane_id, "time": f"{self.until:%H:%M:%S}"}


# The outcomes of a failed call (registry_app.lanes.failover, docs/api.md), as the admin names them.
FAILURE_OUTCOMES = [
    ("connection_error", _("connection failed")), ("timeout", _("timed out")),
    ("server_error", _("provider error (5xx)")), ("rate_limited", _("rate limited (429)")),
    ("rejected", _("rejected (4xx, e.g. a wrong key)")), ("bad_response", _("answer not usable")),
    ("unavailable", _("not available")), ("no_key", _("no key set")),
]


class LaneError(models.Model):
    """The last failed call of a lane (by lane id, so it survives loads): what the
    provider said (a wrong key: `rejected`, "… HTTP 401"), shown with the lane's status
    in the admin and /v2/meta/engines, whether or not it put the lane in a cooldown."""

    lane_id = models.CharField(_("lane id"), max_length=100, unique=True)
    outcome = models.CharField(_("outcome"), max_length=32, choices=FAILURE_OUTCOMES)
    detail = models.CharField(_("detail"), max_length=300, blank=True)
    failed_at = models.DateTimeField(_("failed"), db_index=True)
    failures = models.PositiveIntegerField(_("failures"), default=1, help_text=_("failed calls since it was first "
                                                                                    "recorded"))

    class Meta:
        ordering = ["lane_id"]
        verbose_name = _("lane error")
        verbose_name_plural = _("lane errors")

    def __str__(self):
        return f"{self.lane_id}: {self.outcome}"

    def as_json(self) -> dict[str, str]:
        return {"outcome": self.outcome, "detail": self.detail, "at": self.failed_at.isoformat()}
