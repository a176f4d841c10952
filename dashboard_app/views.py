"""The admin's start page: the dashboard of the tenant the operator works on."""
from django.contrib import admin
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from calls_app.models import Call
from console.assistants.admin import OFFLINE_BANNER
from console.assistants.models import Assistant
from console.assistants.references import thinks_offline
from console.locale import PLATFORM_VIEW, SELECTED_TENANT, operator_home_tenant
from console.numbers.models import PhoneNumber
from console.tenants.models import Tenant
from dashboard_app import charts
from dashboard_app.selectors import NEAR_CAP, dashboard_figures, platform_figures
from leads_app.models import Lead


def selected_tenant(request, tenants):
    """The tenant of the switcher (`?tenant=<slug>`, kept in the session), else the
    operator's own: the first tenant they are a member of, superusers included (the
    operator `make run` prints lands on the demo tenant). None is the platform view:
    a superuser who picked it, or one who is no tenant's member."""
    by_slug = {tenant.slug: tenant for tenant in tenants}
    if "tenant" in request.GET:
        chosen = by_slug.get(request.GET["tenant"])
        request.session[SELECTED_TENANT] = chosen.pk if chosen else None
        if request.user.is_superuser:
            request.session[PLATFORM_VIEW] = chosen is None and request.GET["tenant"] == ""
    pk = request.session.get(SELECTED_TENANT)
    for tenant in tenants:
        if tenant.pk == pk:
            return tenant
    if request.user.is_superuser and request.session.get(PLATFORM_VIEW):
        return None
    return operator_home_tenant(request.user)


def dashboard(request):
    tenants = list(Tenant.objects.visible_to(request.user).order_by("slug"))
    if "tenant" in request.GET:
        selected_tenant(request, tenants)
        return redirect(request.path)  # the switch is kept; the address stays clean
    tenant = selected_tenant(request, tenants)
    now = timezone.now()
    context = {
        **admin.site.each_context(request),
        "title": _("Dashboard"),
        "tenants": tenants,
        "tenant": tenant,
        "app_list": admin.site.get_app_list(request),
    }
    if tenant is not None:
        context.update(dashboard_context(dashboard_figures(tenant=tenant, now=now)))
        context["offline_banner"] = offline_banner(tenant)
        # Which of the tenant's numbers reaches which assistant (the numbers' own page edits it).
        context["numbers"] = list(PhoneNumber.objects.for_tenant(tenant).select_related("assistant").order_by("e164"))
    elif request.user.is_superuser:
        context.update(platform_context(platform_figures(now=now)))
    return TemplateResponse(request, "dashboard_app/dashboard.html", context)


def offline_banner(tenant):
    """The offline rule set's banner when one of the tenant's assistants is answered by it, else ""."""
    offline = [assistant for assistant in Assistant.objects.for_tenant(tenant) if thinks_offline(assistant)]
    return OFFLINE_BANNER if offline else ""


def tenant_settings(request):
    """The settings of the tenant the operator works on (its admin page: recording,
    disclosure, members), or the dashboard where there is none."""
    tenant = selected_tenant(request, list(Tenant.objects.visible_to(request.user).order_by("slug")))
    if tenant is None:
        return redirect("dashboard")
    return redirect("admin:tenants_tenant_change", tenant.pk)


def platform_context(figures):
    days = list(figures["per_day"])
    per_day = list(figures["per_day"].values())
    return {
        "platform": figures,
        "platform_minutes_chart": charts.day_columns(
            days=days, series=[[day["minutes"] for day in per_day]], css_classes=["minutes"],
            label=_("Minutes per day across all tenants, last 30 days")),
        "platform_calls_chart": charts.day_columns(
            days=days, series=[[day["calls"] for day in per_day]], css_classes=["inbound"],
            label=_("Calls per day across all tenants, last 30 days")),
        "near_cap_chart": charts.cap_bars(
            rows=[(row["name"], row["used"], row["cap"], row["share"]) for row in figures["near_cap"]],
            near=NEAR_CAP, label=_("Share of the minute cap used this month")) if figures["near_cap"] else "",
        "near_cap_percent": round(NEAR_CAP * 100),
    }


def dashboard_context(figures):
    usage = figures["usage"]
    days = list(figures["per_day"])
    per_day = list(figures["per_day"].values())
    outcomes = [Call.Status.COMPLETED, Call.Status.NO_ANSWER, Call.Status.BUSY, Call.Status.FAILED]
    other = [sum(n for status, n in day["outcomes"].items() if status not in outcomes) for day in per_day]
    return {
        "figures": figures,
        "usage": usage,
        "usage_bar": charts.usage_bar(used=usage["minutesThisMonth"], reserved=usage["reservedMinutes"],
                                      cap=figures["cap"], projection=figures["projection"],
                                      label=_("Minutes this month against the cap")),
        "minutes_chart": charts.day_columns(days=days, series=[[day["minutes"] for day in per_day]],
                                            line=figures["daily_share"], css_classes=["minutes"],
                                            label=_("Minutes per day, last 30 days")),
        "direction_chart": charts.day_columns(
            days=days, series=[[day["inbound"] for day in per_day], [day["outbound"] for day in per_day]],
            css_classes=["inbound", "outbound"], label=_("Calls per day by direction")),
        "outcome_chart": charts.day_columns(
            days=days, series=[*([day["outcomes"].get(status, 0) for day in per_day] for status in outcomes), other],
            css_classes=[*(f"outcome-{status}" for status in outcomes), "outcome-other"],
            label=_("Calls per day by outcome")),
        "outcome_legend": [(f"outcome-{status}", pgettext("choice", status.label)) for status in outcomes]
                          + [("outcome-other", _("other"))],
        "leads_chart": charts.horizontal_bars(
            rows=[(pgettext("choice", label), figures["leads_by_status"][value]) for value, label in Lead.Status.choices],
            label=_("Leads by status")),
    }
