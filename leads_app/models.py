from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.phone import mask
from console.tenants.querysets import TenantOwnedQuerySet


class Lead(models.Model):
    """A contact request posted from a public page (CONTRACT §6)."""

    class Kind(models.TextChoices):
        CALLBACK = "callback", pgettext_lazy("choice", "Callback")
        CONTACT = "contact", pgettext_lazy("choice", "Contact")
        VOICEMAIL = "voicemail", pgettext_lazy("choice", "Voicemail")

    class Status(models.TextChoices):
        NEW = "new", pgettext_lazy("choice", "New")
        CONTACTED = "contacted", pgettext_lazy("choice", "Contacted")
        QUALIFIED = "qualified", pgettext_lazy("choice", "Qualified")
        CONVERTED = "converted", pgettext_lazy("choice", "Converted")
        LOST = "lost", pgettext_lazy("choice", "Lost")
        SPAM = "spam", pgettext_lazy("choice", "Spam")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("ld"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="leads",
                               verbose_name=_("tenant"))
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    phone = models.CharField(_("phone (E.164)"), max_length=16)
    # The visitor's token as sent (`tomorrow-am`) and the moment it meant when the lead
    # arrived, resolved in the tenant's time zone; both are kept, so the console can
    # show what was asked and when to call.
    preferred_at = models.CharField(_("preferred time (as asked)"), max_length=16, blank=True)
    preferred_at_resolved = models.DateTimeField(_("preferred time"), null=True, blank=True)
    page_url = models.URLField(_("page"), max_length=2000, blank=True)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.NEW)
    # The version of the consent sentence the visitor saw (leads_app/consent.py); ""
    # when the form that posted did not say.
    consent_version = models.CharField(_("consent version"), max_length=40, blank=True)
    # The same number posting again while this lead is open, within a day of it, is
    # folded into it (services.lead_receive): how often, and when last.
    repeat_count = models.PositiveIntegerField(_("repeats"), default=0)
    repeated_at = models.DateTimeField(_("last repeated"), null=True, blank=True)
    # The operator's notes (the console only; not part of the API's lead).
    notes = models.TextField(_("notes"), blank=True)
    created_at = models.DateTimeField(_("received"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("lead")
        verbose_name_plural = _("leads")
        indexes = [
            models.Index(fields=["tenant", "-created_at", "-id"], name="lead_tenant_newest"),
            models.Index(fields=["tenant", "status", "-created_at"], name="lead_tenant_status"),
            # The duplicate check of every public post: this number's newest lead.
            models.Index(fields=["tenant", "phone", "-created_at"], name="lead_tenant_phone"),
        ]

    def __str__(self):
        # Masked: this text ends up in admin titles and the admin's change log.
        return f"{self.get_kind_display()} {mask(self.phone)} ({self.get_status_display()})"


# Leads still waiting for the business: the callback inbox, the dashboard's due and
# overdue callbacks, and the folding of duplicates count these.
OPEN_STATUSES = (Lead.Status.NEW, Lead.Status.CONTACTED)


class RateLimitWindow(models.Model):
    """How many events one bucket (e.g. a tenant and a client address) counted in one
    fixed window of a rate limit (leads_app/ratelimit.py). Rows of windows that have
    ended are deleted as new windows begin."""

    bucket = models.CharField(_("counted for"), max_length=200)
    # Unix seconds: the window is [starts_at, ends_at).
    starts_at = models.BigIntegerField(_("starts (unix seconds)"))
    ends_at = models.BigIntegerField(_("ends (unix seconds)"))
    hits = models.PositiveIntegerField(_("hits"), default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bucket", "starts_at"], name="ratelimit_one_row_per_window")]
        indexes = [models.Index(fields=["ends_at"], name="ratelimit_window_end")]
        verbose_name = _("rate limit window")
        verbose_name_plural = _("rate limit windows")

    def __str__(self):
        return f"{self.bucket} @ {self.starts_at}: {self.hits}"
