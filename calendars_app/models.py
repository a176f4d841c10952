"""The tenant's calendars and the appointments its assistants booked in them
(docs/api.md, "Calendars")."""
from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class Calendar(models.Model):
    """A calendar of the tenant's own that assistants book in: CalDAV (URL, user, app
    password), Microsoft 365 (Graph: a mailbox's calendar, client credentials) or
    Cal.com (API key, event type). Its secrets are sealed (console.sealing) and never
    shown back; `settings` holds what is not secret (user, tenant id, mailbox, …)."""

    class Kind(models.TextChoices):
        CALDAV = "caldav", _("CalDAV calendar")
        GRAPH = "graph", _("Microsoft 365 calendar")
        CALCOM = "calcom", _("Cal.com calendar")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("cal"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="calendars",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=200)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    url = models.CharField(_("address"), max_length=2000, blank=True,
                           help_text=_("CalDAV: the calendar's address (https)."))
    settings = models.JSONField(_("settings"), default=dict, blank=True)
    secrets_sealed = models.TextField(_("sealed secrets"), blank=True, editable=False)
    # Who books in it now (a random token) and until when: bookings of one calendar take
    # turns, so that the free/busy read right before a write is still true when it lands.
    lease_token = models.CharField(_("booked by"), max_length=32, blank=True, editable=False)
    lease_until = models.DateTimeField(_("booking until"), null=True, blank=True, editable=False)
    checked_at = models.DateTimeField(_("last checked"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("added on"), auto_now_add=True)
    updated_at = models.DateTimeField(_("changed on"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        verbose_name = _("calendar")
        verbose_name_plural = _("calendars")

    def __str__(self) -> str:
        return self.name


class Appointment(models.Model):
    """An appointment an assistant booked: where it is in the calendar (`external_id`,
    and for CalDAV the ETag its changes are conditional on), who booked it (the caller's
    number and name: their appointments are found by both) and from which call."""

    class Status(models.TextChoices):
        BOOKED = "booked", _("Booked")
        CANCELLED = "cancelled", _("Cancelled")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("apt"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="appointments",
                               verbose_name=_("tenant"))
    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="appointments",
                                 verbose_name=_("calendar"))
    assistant_id = models.CharField(_("assistant"), max_length=ID_LENGTH)
    type_name = models.CharField(_("appointment type"), max_length=100)
    starts_at = models.DateTimeField(_("starts"))
    ends_at = models.DateTimeField(_("ends"))
    caller_e164 = models.CharField(_("caller's number"), max_length=20)
    caller_name = models.CharField(_("caller's name"), max_length=200)
    call_id = models.CharField(_("call"), max_length=ID_LENGTH, blank=True)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.BOOKED)
    external_id = models.CharField(_("event in the calendar"), max_length=2000, blank=True)
    etag = models.CharField(_("version of the event (ETag)"), max_length=200, blank=True, editable=False)
    created_at = models.DateTimeField(_("booked on"), auto_now_add=True)
    updated_at = models.DateTimeField(_("changed on"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["starts_at", "id"]
        indexes = [models.Index(fields=["tenant", "caller_e164", "status"]),
                   models.Index(fields=["calendar", "starts_at"])]
        verbose_name = _("appointment")
        verbose_name_plural = _("appointments")

    def __str__(self) -> str:
        return f"{self.type_name} {self.starts_at:%Y-%m-%d %H:%M}"
