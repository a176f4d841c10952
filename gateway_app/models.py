"""Usage of the gateway's lanes: one row per UTC day, lane and mode.

Not tenant data: the gateway serves the hub itself (its token is no tenant's). The
cooldowns of failed lanes are registry state (`registry_app.models.LaneCooldown`),
because the router explains them.
"""
from django.db import models


class LaneUsage(models.Model):
    day = models.DateField(help_text="UTC day")
    lane_id = models.CharField("lane", max_length=100)
    capability = models.CharField(max_length=16)
    mode = models.CharField(max_length=8, help_text="mock, api, cli or local")
    requests = models.PositiveIntegerField(default=0, help_text="requests this lane answered")
    failures = models.PositiveIntegerField(default=0, help_text="calls to this lane that failed")
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    characters = models.PositiveBigIntegerField(default=0, help_text="characters spoken (tts)")
    audio_seconds = models.FloatField(default=0.0, help_text="seconds of audio heard (stt) or spoken (tts)")
    eur = models.DecimalField(max_digits=14, decimal_places=6, default=0,
                              help_text="euros by the registry's price; 0 in mock mode (nothing was spent)")

    class Meta:
        ordering = ["-day", "lane_id", "mode"]
        constraints = [models.UniqueConstraint(fields=["day", "lane_id", "mode"], name="gateway_usage_per_day")]
        verbose_name_plural = "lane usage"

    def __str__(self):
        return f"{self.day} {self.lane_id} ({self.mode})"
