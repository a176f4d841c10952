"""Calls are read-only here (the voice runtime is their only writer); carriers are
created with `manage.py create_carrier`, which shows the secret once."""
import json

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import capfirst
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from calls_app.analysis import OUTCOME_LABELS
from calls_app.carriers import CarrierUnavailable, adapter_for
from calls_app.kinds import KINDS
from calls_app.kinds.base import CarrierKind, CredentialField
from calls_app.kinds.credentials import credentials_clean, credentials_of, credentials_seal
from calls_app.models import Call, CallAnalysis, Carrier, UsageCounter
from calls_app.recordings import recording_link
from calls_app.search import calls_search
from calls_app.selectors import call_latency, sip_registration_states
from console.admin_display import choice_label, local_datetime, minutes_seconds, phone_cell
from console.admin_export import CsvExportMixin
from console.audit.admin import AuditedAdminMixin
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.admin_scoping import ReadOnlyAdminMixin, SuperuserOnlyAdminMixin, TenantScopedAdmin


class ReadOnlyAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    pass


def _counterpart(call):
    return call.from_e164 if call.direction == Call.Direction.INBOUND else call.to_e164


@admin.register(Call)
class CallAdmin(CsvExportMixin, ReadOnlyAdmin):
    class Media:
        # The transcript's looks; a file, as the admin's Content-Security-Policy runs no inline style.
        css = {"all": ["calls_app/admin.css"]}

    # Fits 1,366 px: the counterpart in national format, no carrier or raw ids.
    list_display = ["when", "direction_label", "counterpart", "duration", "outcome", "disclosed"]
    list_filter = ["direction", "status", ("created_at", admin.DateFieldListFilter), "disclosed", "is_test", "carrier"]
    # Searched by calls_search: numbers in any format, else transcript words.
    search_fields = ["id"]
    search_help_text = _("A number in any format (030 901820, +49 30 901820) or words of the transcript.")
    csv_name = "anrufe"
    csv_columns = (
        ("id", lambda call: call.id),
        ("time", lambda call: timezone.localtime(call.started_at or call.created_at).isoformat()),
        ("direction", lambda call: call.direction),
        ("counterpart", _counterpart),
        ("seconds", lambda call: call.seconds),
        ("status", lambda call: call.status),
        ("disclosed", lambda call: "yes" if call.disclosed else "no"),
    )
    list_select_related = ["tenant"]
    # No date hierarchy and no count of all rows: both read every call of the tenant
    # on each page (the date filter covers the ranges).
    show_full_result_count = False
    # The recording's address is shown by `recording`, as a player and a link.
    exclude = ["tenant", "recording_url"]
    readonly_fields = ["id", "tenant_slug", "carrier", "carrier_call_id", "direction", "from_e164", "to_e164",
                       "status", "disclosed", "duration", "max_seconds", "reserved_minutes", "reserved_period",
                       "usage_period", "is_test", "recording_enabled", "recording_announced", "transcription_enabled", "recording", "lead_id",
                       "transferred_to",
                       "created_at", "started_at", "ended_at", "assistant", "assistant_version", "assistant_actions_view",
                       "analysis_view",
                       "reply_latency", "conversation"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("transcript_entries").select_related(
            "analysis", "assistant")

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        by_id = queryset.filter(pk=search_term.strip())
        return calls_search(queryset, search_term) | by_id, False

    def get_list_display(self, request):
        shown = super().get_list_display(request)
        # Only operators of several tenants need to tell the tenants' calls apart.
        return [*shown, "tenant"] if request.user.is_superuser else shown

    @admin.display(description=_("time"), ordering="created_at")
    def when(self, call):
        return local_datetime(call.started_at or call.created_at)

    @admin.display(description=_("direction"), ordering="direction")
    def direction_label(self, call):
        # A browser test of an assistant ("Im Browser testen") says so in the list.
        label = choice_label(call, "direction")
        return format_html('{} <strong class="test-call">{}</strong>', label, _("Test")) if call.is_test else label

    @admin.display(description=_("counterpart"))
    def counterpart(self, call):
        return phone_cell(_counterpart(call))

    @admin.display(description=_("outcome"), ordering="status")
    def outcome(self, call):
        return choice_label(call, "status")

    @admin.display(description=_("tenant"))
    def tenant_slug(self, call):
        return call.tenant.slug

    @admin.display(description=_("duration"), ordering="seconds")
    def duration(self, call):
        return minutes_seconds(call.seconds)

    @admin.display(description=_("recording"))
    def recording(self, call):
        link = recording_link(call.pk, call.recording_url)
        if not link:
            return "—"
        return format_html('<audio controls preload="none" src="{0}"></audio> <a href="{0}">{0}</a>', link)

    @admin.display(description=_("reply latency"))
    def reply_latency(self, call):
        """How fast the voice agent answered: from the end of the caller's speech to the
        reply's first audio, over the call's replies, and where the time went."""
        latency = call_latency(call=call)
        if latency is None:
            return "—"
        stages = latency["median_ms"]
        return format_html(
            "{}<br><small>{}</small>",
            _("median {p50} ms, 90 % within {p90} ms, slowest {max} ms ({turns} replies)").format(
                p50=latency["p50_ms"], p90=latency["p90_ms"], max=latency["max_ms"], turns=latency["turns"]),
            _("medians: end of turn {end_of_turn} ms, recognition {recognition} ms, thinking {thinking} ms, "
              "synthesis {synthesis} ms").format(**stages))

    @admin.display(description=_("assistant's actions"))
    def assistant_actions_view(self, call):
        done = call.assistant_actions or []
        if not done:
            return "—"
        return format_html_join(", ", "{}{}", ((a.get("tool", "?"), f" → {a['target']}" if a.get("target") else "")
                                               for a in done))

    @admin.display(description=_("analysis"))
    def analysis_view(self, call):
        found = getattr(call, "analysis", None)
        if found is None:
            return _("— (not written yet)") if call.is_ended else "—"
        outcome = ", ".join(str(OUTCOME_LABELS.get(tag, tag)) for tag in found.outcome)
        success = {True: gettext("yes"), False: gettext("no"), None: "—"}[found.success]
        if found.structured_valid is None:
            structured = "—"
        else:
            state = gettext("fits the schema") if found.structured_valid else gettext(
                "does not fit the schema: %(errors)s") % {"errors": "; ".join(found.structured_errors)}
            structured = format_html("<code>{}</code> ({})", json.dumps(found.structured, ensure_ascii=False), state)
        label = {name: capfirst(CallAnalysis._meta.get_field(name).verbose_name)
                 for name in ("outcome", "success", "engine", "structured")}
        return format_html(
            '<div class="analysis"><p>{}</p><p><strong>{}:</strong> {} · <strong>{}:</strong> {} · '
            "<strong>{}:</strong> {}</p><p><strong>{}:</strong> {}</p></div>",
            found.summary or "—", label["outcome"], outcome, label["success"], success, label["engine"],
            found.get_engine_display(), label["structured"], structured)

    @admin.display(description=_("transcript"))
    def conversation(self, call):
        entries = call.transcript_entries.all()
        if not entries:
            return "—"
        rows = format_html_join(
            "", '<div class="transcript-line transcript-{}"><strong>{}</strong> <small>{}</small><br>{}</div>',
            ((e.role, choice_label(e, "role"), timezone.localtime(e.ts).strftime("%H:%M:%S"), e.text) for e in entries),
        )
        return format_html('<div class="transcript">{}</div>', rows)


@admin.register(UsageCounter)
class UsageCounterAdmin(ReadOnlyAdmin):
    # Cap, used, reserved, remaining and a bar per tenant and month; the cap is the
    # tenant's current one (inbound and outbound minutes count against it).
    list_display = ["tenant", "period", "cap", "used", "reserved_minutes", "remaining", "bar", "calls"]
    ordering = ["-period", "tenant__slug"]

    @admin.display(description=_("minute cap"))
    def cap(self, counter):
        return counter.tenant.minute_cap

    @admin.display(description=_("used"), ordering="minutes")
    def used(self, counter):
        return counter.minutes

    @admin.display(description=_("remaining"))
    def remaining(self, counter):
        return max(0, counter.tenant.minute_cap - counter.minutes - counter.reserved_minutes)

    @admin.display(description=_("used of the cap"))
    def bar(self, counter):
        cap = counter.tenant.minute_cap
        return format_html('<meter min="0" max="{}" high="{}" value="{}" title="{} / {}"></meter>',
                           max(cap, 1), max(cap * 0.9, 1), min(counter.minutes + counter.reserved_minutes, max(cap, 1)),
                           counter.minutes + counter.reserved_minutes, cap)
    list_filter = ["period"]
    search_fields = ["tenant__slug", "period"]
    list_select_related = ["tenant"]


class CarrierAdminForm(forms.ModelForm):
    """A carrier's name, caller id, and its kind's credentials form (calls_app/kinds):
    a secret is never shown back (left empty, the stored one stays)."""

    credential_fields: tuple[CredentialField, ...] = ()

    class Meta:
        model = Carrier
        fields = ["name", "caller_id"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = credentials_of(self.instance)
        for field in self.credential_fields:
            if not field.secret:
                self.fields[field.name].initial = stored.get(field.name, "")

    def clean_caller_id(self):
        """Stored as E.164 (`030 1234567` → `+49301234567`): it is dialled from."""
        raw = self.cleaned_data["caller_id"]
        try:
            return to_e164(raw) if raw.strip() else ""
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(exc.localized()) from None

    def clean(self):
        cleaned = super().clean()
        given = {field.name: cleaned.get(field.name) or "" for field in self.credential_fields
                 if cleaned.get(field.name)}
        if given:
            try:
                declared = KINDS.get(self.instance.kind)
                values = credentials_clean(self.credential_fields, given, kind=self.instance.kind,
                                           current=credentials_of(self.instance),
                                           check=declared.check if declared is not None else None)
            except ValidationFailed as exc:
                for name, messages in exc.details.items():
                    self.add_error(name if name in self.fields else None, " ".join(messages))
            else:
                self.instance.credentials_sealed = credentials_seal(values)
        return cleaned


def _credentials_form(kind: CarrierKind | None) -> type[CarrierAdminForm]:
    """The admin form of a carrier of `kind`: its credential fields declared on it."""
    fields = kind.credentials if kind is not None else ()
    declared = {field.name: forms.CharField(
        label=field.label, help_text=field.help, required=False, strip=True,
        widget=forms.PasswordInput(render_value=False) if field.secret else forms.TextInput,
    ) for field in fields}
    return type("CarrierCredentialsForm", (CarrierAdminForm,), {**declared, "credential_fields": fields})


SIP_STATE_LABELS = {"registered": _("registered"), "registering": _("registering"), "failing": _("failing"),
                    "static": _("static (no registration)")}


@admin.register(Carrier)
class CarrierAdmin(SuperuserOnlyAdminMixin, AuditedAdminMixin, admin.ModelAdmin):
    """Carriers serve every tenant: only superusers see or change them."""

    form = CarrierAdminForm
    list_display = ["id", "name", "kind_label", "caller_id", "sip_state", "created_at", "secret_rotated_at"]
    readonly_fields = ["id", "kind_label", "sip_state", "created_at", "secret_rotated_at"]
    actions = ["probe_connection"]

    @admin.display(description=_("kind"), ordering="kind")
    def kind_label(self, carrier):
        kind = KINDS.get(carrier.kind)
        return kind.label if kind is not None else carrier.kind

    @admin.display(description=_("registration"))
    def sip_state(self, carrier):
        """A SIP trunk's registration as the SIP agent last reported it (else empty)."""
        state = sip_registration_states().get(carrier.pk) if carrier.kind == "sip" else None
        if state is None:
            return ""
        label = SIP_STATE_LABELS.get(state["state"], state["state"])
        return f"{label} ({state['reason']})" if state["reason"] else label

    def get_fields(self, request, obj=None):
        kind = KINDS.get(obj.kind) if obj is not None else None
        credentials = [field.name for field in kind.credentials] if kind is not None else []
        state = ["sip_state"] if obj is not None and obj.kind == "sip" else []
        return ["id", "name", "kind_label", "caller_id", *state, *credentials, "created_at", "secret_rotated_at"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = _credentials_form(KINDS.get(obj.kind) if obj is not None else None)
        return super().get_form(request, obj, change=change, **kwargs)

    @admin.action(description=_("Test the connection"))
    def probe_connection(self, request, queryset):
        """Asks each selected carrier's adapter whether it answers with its credentials."""
        for carrier in queryset[:20]:
            try:
                probe = adapter_for(carrier.pk).probe()
            except CarrierUnavailable:
                self.message_user(request, gettext("Nothing to test: %(carrier)s dials nobody.")
                                  % {"carrier": carrier.pk}, messages.INFO)
                continue
            if probe.usable:
                self.message_user(request, gettext("The connection of %(carrier)s works.") % {"carrier": carrier.pk},
                                  messages.SUCCESS)
            else:
                self.message_user(request, gettext("No connection to %(carrier)s (%(detail)s).")
                                  % {"carrier": carrier.pk, "detail": probe.detail}, messages.ERROR)

    def has_add_permission(self, request):
        # The secret is shown once by `manage.py create_carrier`, never in the admin.
        return False

    def has_delete_permission(self, request, obj=None):
        return False
