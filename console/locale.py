"""Language and time zone of a request.

The admin (and every page an operator or a caller sees) speaks German unless the
browser asks for English (`Accept-Language`) or the operator switched; the JSON API
keeps English messages whatever the browser says, since developers read them and
clients match on codes (docs/api.md, "Languages").

Admin pages show times in the time zone of the tenant the operator works on (the
dashboard's tenant switcher, else the first tenant of their memberships, superusers
too unless they picked the platform view), so a callback asked for 09:00 in Berlin
reads 09:00.
"""
import zoneinfo

from django.middleware.locale import LocaleMiddleware
from django.utils import timezone, translation

from console.middleware import is_api_path

# The session key of the tenant an operator picked in the dashboard's switcher, and
# of a superuser's pick of the platform view (all tenants).
SELECTED_TENANT = "console_tenant"
PLATFORM_VIEW = "console_platform"
ADMIN_TIME_ZONE = "Europe/Berlin"


class ConsoleLocaleMiddleware(LocaleMiddleware):
    def process_request(self, request):
        if is_api_path(request.path_info):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
            return
        super().process_request(request)
        if request.path_info.startswith("/admin/"):
            timezone.activate(zoneinfo.ZoneInfo(operator_time_zone(request)))

    def process_response(self, request, response):
        if is_api_path(request.path_info):
            return response
        timezone.deactivate()
        return super().process_response(request, response)


def operator_home_tenant(user):
    """The tenant an operator works on unless they pick another: the first (by slug)
    of their memberships, for superusers too; None for one who is no member."""
    from console.tenants.models import Tenant  # models load after the middleware module

    return Tenant.objects.filter(memberships__user=user).order_by("slug").first()


def operator_time_zone(request):
    """The time zone of the tenant the operator works on; Berlin for anyone else."""
    from console.tenants.models import Tenant  # models load after the middleware module

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_staff:
        return ADMIN_TIME_ZONE
    selected = request.session.get(SELECTED_TENANT)
    if selected is not None:
        chosen = Tenant.objects.visible_to(user).filter(pk=selected).values_list("time_zone", flat=True).first()
        if chosen:
            return chosen
    if user.is_superuser and request.session.get(PLATFORM_VIEW):
        return ADMIN_TIME_ZONE
    home = operator_home_tenant(user)
    return home.time_zone if home is not None else ADMIN_TIME_ZONE
