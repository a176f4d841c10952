"""CSV export of an admin list as filtered and searched on screen: a link beside the
list's tools opens `<list>/export.csv?<the list's query string>`, which builds the
same ChangeList (so the member's scoping, filters and search apply) and streams it
through `console.csv_export` (formula cells neutralised).

Query parameters the list cannot apply (an unknown field, `created_at__gte=notadate`,
a page past the end) are treated as the list treats them: the list redirects to
itself with `?e=1` (all rows, Django's "invalid lookup" flag), so the export sends the
browser to exactly that list page rather than download an unfiltered file the member
did not ask for. A lookup the admin forbids is refused with 400, as on the list."""
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.urls import path, reverse

from console.csv_export import csv_stream

if TYPE_CHECKING:  # the stubs' name for what ModelAdmin's templates may be
    from django.template.response import _TemplateForResponseT

# Bounded work: an export stops here (the list's filters narrow it further).
EXPORT_LIMIT = 100_000


class CsvExportMixin:
    """Set `csv_columns`: (header, function of a row) pairs; `csv_name` names the file."""

    change_list_template: ClassVar["_TemplateForResponseT | None"] = "admin/console/change_list_with_export.html"
    csv_columns: ClassVar[Sequence[tuple[str, Callable[[Any], object]]]] = ()
    csv_name = "export"

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [path("export.csv", self.admin_site.admin_view(self.export_csv), name="%s_%s_export" % info),
                *super().get_urls()]

    def export_csv(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            info = self.admin_site.name, self.opts.app_label, self.opts.model_name
            return HttpResponseRedirect(reverse("%s:%s_%s_changelist" % info) + f"?{ERROR_FLAG}=1")
        rows = changelist.queryset[:EXPORT_LIMIT]
        columns = self.csv_columns
        body = csv_stream([header for header, _value in columns],
                          ([value(row) for _header, value in columns] for row in rows.iterator(chunk_size=2000)))
        response = StreamingHttpResponse(body, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{self.csv_name}.csv"'
        return response
