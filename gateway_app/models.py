"""Usage of the gateway's lanes: one row per UTC day, lane and mode.

Not tenant data: the gateway serves the hub itself (its token is no tenant's). The
cooldowns of failed lanes are registry state (`registry_app.models.LaneCooldown`),
because the router explains them.
"""
from django.db import models
from django.utils.translation import gettext_lazy as _


class LaneUsage(models.Model):
    day = models.DateField(_("day"), help_text=_("UTC day"))
    lane_id = models.CharField(_("lane id"), max_length=100)
    capability = models.CharField(_("capability"), max_length=16)
    mode = models.CharField(_("mode"), max_length=8, help_text=_("mock, api, cli or local"))
    requests = models.PositiveIntegerField(_("requests"), default=0, help_text=_("requests this lane answered"))
    failures = models.PositiveIntegerField(_("failures"), default=0, help_text=_("calls to this lane that failed"))
    input_tokens = models.PositiveBigIntegerField(_("input tokens"), default=0)
    output_tokens = models.PositiveBigIntegerField(_("output tokens"), default=0)
    characters = models.PositiveBigIntegerField(_("characters"), default=0, help_text=_("characters spoken (tts)"))
    audio_seconds = models.FloatField(_("audio seconds"), default=0.0,
                                      help_text=_("seconds of audio heard (stt) or spoken (tts)"))
    eur = models.DecimalField(_("costs (EUR)"), max_digits=14, decimal_places=6, default=0,
                              help_text=_("euros by the registry's price; 0 in mock mode (nothing was spent)"))

    class Meta:
        ordering = ["-day", "lane_id", "mode"]
        constraints = [models.UniqueConstraint(fields=["day", "lane_id", "mode"], name="gateway_usage_per_day")]
        verbose_name = _("lane usage")
        verbose_name_plural = _("lane usage")

    def __str__(self):
        return f"{self.day} {self.lane_id} ({self.mode})"
