import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.tenants.querysets import TenantOwnedQuerySet

DEFAULT_DISCLOSURE = "Sie sprechen mit einer KI-Assistenz."

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{1,62}$"
slug_validator = RegexValidator(
    SLUG_PATTERN, _("A slug is 2–63 characters: lowercase letters, digits and '-', not starting with '-'.")
)


host_validator = RegexValidator(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$",
    _("A host name in lowercase, without scheme or port (e.g. acme.example.com)."),
)


language_validator = RegexValidator(r"^[a-z]{2,3}$",
                                    _("A two- or three-letter lowercase language code such as 'de'."))


# ISO 3166-2:DE codes of the federal states, as the `holidays` package names them.
FEDERAL_STATES = [
    ("BW", "Baden-Württemberg"), ("BY", "Bayern"), ("BE", "Berlin"), ("BB", "Brandenburg"), ("HB", "Bremen"),
    ("HH", "Hamburg"), ("HE", "Hessen"), ("MV", "Mecklenburg-Vorpommern"), ("NI", "Niedersachsen"),
    ("NW", "Nordrhein-Westfalen"), ("RP", "Rheinland-Pfalz"), ("SL", "Saarland"), ("SN", "Sachsen"),
    ("ST", "Sachsen-Anhalt"), ("SH", "Schleswig-Holstein"), ("TH", "Thüringen"),
]


def time_zone_choices():
    """Every IANA zone, as a list to pick from (a callable, so migrations do not hold
    some 600 names and a new tzdata needs none)."""
    return [(name, name.replace("_", " ")) for name in sorted(zoneinfo.available_timezones())]


def validate_time_zone(value):
    if value not in zoneinfo.available_timezones():
        raise ValidationError(gettext("'%(value)s' is not a known IANA time zone (e.g. Europe/Berlin).")
                              % {"value": value})


class TenantQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Tenants a console user may see: all for superusers, else their memberships."""
        if user.is_superuser:
            return self
        return self.filter(memberships__user=user)


class Tenant(models.Model):
    slug = models.CharField(_("slug"), max_length=63, unique=True, validators=[slug_validator])
    name = models.CharField(_("name"), max_length=200)
    time_zone = models.CharField(
        _("time zone"), max_length=64, default="Europe/Berlin", choices=time_zone_choices,
        validators=[validate_time_zone], help_text=_("Times in the console, months of the minute cap and "
                                                     "callback times are counted in this zone."))
    minute_cap = models.PositiveIntegerField(
        _("minute cap"), default=1000,
        help_text=_("Minutes per calendar month, inbound and outbound calls together (inbound minutes count "
                    "against the cap too); when it is used up no outbound call starts. 0 allows no outbound call."),
    )
    max_call_minutes = models.PositiveIntegerField(
        _("longest outbound call (minutes)"), default=10, validators=[MinValueValidator(1)],
        help_text=_("Longest outbound call, in whole minutes.")
    )
    # A recorded call's disclosure says so (agent_app.conversation.RECORDING_NOTICE): why is the help text.
    recording_enabled = models.BooleanField(
        _("record calls"), default=False,
        help_text=_("Callers then hear \"This call is recorded.\" right after the AI disclosure: recording a call "
                    "unannounced is an offence (§ 201 StGB), and Art. 13 GDPR requires telling the caller at the "
                    "start."))
    transcription_enabled = models.BooleanField(_("transcribe calls"), default=True)
    # What the tenant's callers speak: the language of a transcription that names none
    # (detection on short or poor audio is unreliable, so it is not the default).
    language = models.CharField(
        _("language"), max_length=3, default="de", validators=[language_validator],
        help_text=_("Language of the tenant's callers (e.g. de): used when a transcription request names none."))
    # Art. 50 disclosure, spoken before every script that opens a call; it cannot be
    # switched off, only worded differently.
    disclosure_text = models.TextField(
        _("AI disclosure"), default=DEFAULT_DISCLOSURE,
        help_text=_("Spoken at the start of every call; cannot be switched off.")
    )
    lead_rate_limit = models.PositiveIntegerField(
        _("public lead limit"), default=30, validators=[MinValueValidator(1)],
        help_text=_("Public lead posts per client address per 10 minutes.")
    )
    # The federal state whose public holidays no campaign calls on (campaigns_app); empty:
    # the nationwide holidays only.
    state = models.CharField(
        _("federal state"), max_length=2, blank=True, choices=FEDERAL_STATES,
        help_text=_("No campaign calls on the public holidays of this state (nor on Sundays)."))
    campaign_concurrency_limit = models.PositiveSmallIntegerField(
        _("simultaneous campaign calls"), default=5, validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text=_("The most calls one campaign of the tenant may hold at once."))
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        verbose_name = _("tenant")
        verbose_name_plural = _("tenants")

    def __str__(self):
        return f"{self.name} ({self.slug})"


class TenantHost(models.Model):
    """A host name that selects its tenant when a request carries no X-Tenant header."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="hosts", verbose_name=_("tenant"))
    # Unique across tenants: one host name can only ever mean one tenant.
    host = models.CharField(_("host name"), max_length=253, unique=True, validators=[host_validator])

    class Meta:
        verbose_name = _("host name")
        verbose_name_plural = _("host names")

    def __str__(self):
        return self.host


class TenantOrigin(models.Model):
    """A web origin (scheme://host[:port]) allowed to post public leads for the tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="origins", verbose_name=_("tenant"))
    origin = models.CharField(_("web origin"), max_length=300)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "origin"], name="unique_origin_per_tenant")]
        indexes = [models.Index(fields=["origin"])]
        verbose_name = _("allowed origin")
        verbose_name_plural = _("allowed origins")

    def __str__(self):
        return self.origin


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", _("Owner")
        MEMBER = "member", _("Staff")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("tenant"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships",
                             verbose_name=_("user"))
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="unique_membership")]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")

    def __str__(self):
        return f"{self.user} in {self.tenant.slug} ({self.get_role_display()})"
