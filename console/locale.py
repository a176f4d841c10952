"""Language and time zone of a request.

The admin (and every page an operator or a caller sees) speaks German unless the
browser asks for English (`Accept-Language`) or the operator switched; the JSON API
keeps English messages whatever the browser says, since developers read them and
clients match on codes (docs/api.md, "Languages").

Admin pages show times in the time zone of the tenant the operator works on (the
dashboard's tenant switcher, else the first tenant of their memberships), so a
callback asked for 09:00 in Berlin reads 09:00.
"""
import zoneinfo

from django.middleware.locale import LocaleMiddleware
from django.utils import timezone, translation

from console.middleware import is_api_path

# The session key of the tenant an operator picked in the dashboard's switcher.
SELECTED_TENANT = "console_tenant"
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


def operator_time_zone(request):
    """The time zone of the tenant the operator works on; Berlin for anyone else."""
    from console.tenants.models import Tenant  # models load after the middleware module

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_staff:
        return ADMIN_TIME_ZONE
    tenants = Tenant.objects.visible_to(user)
    selected = request.session.get(SELECTED_TENANT)
    if selected is not None:
        chosen = tenants.filter(pk=selected).values_list("time_zone", flat=True).first()
        if chosen:
            return chosen
    if user.is_superuser:
        return ADMIN_TIME_ZONE
    return tenants.order_by("slug").values_list("time_zone", flat=True).first() or ADMIN_TIME_ZONE
