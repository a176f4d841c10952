"""CSV export of an admin list as filtered and searched on screen: a link beside the
list's tools opens `<list>/export.csv?<the list's query string>`, which builds the
same ChangeList (so the member's scoping, filters and search apply) and streams it."""
import csv

from django.http import StreamingHttpResponse
from django.urls import path

# Bounded work: an export stops here (the list's filters narrow it further).
EXPORT_LIMIT = 100_000


class _Echo:
    def write(self, value):
        return value


class CsvExportMixin:
    """Set `csv_columns`: (header, function of a row) pairs; `csv_name` names the file."""

    change_list_template = "admin/console/change_list_with_export.html"
    csv_columns = ()
    csv_name = "export"

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [path("export.csv", self.admin_site.admin_view(self.export_csv), name="%s_%s_export" % info),
                *super().get_urls()]

    def export_csv(self, request):
        if not self.has_view_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        changelist = self.get_changelist_instance(request)
        rows = changelist.get_queryset(request)[:EXPORT_LIMIT]
        writer = csv.writer(_Echo())

        def lines():
            yield "\ufeff"  # so that spreadsheet programs read UTF-8
            yield writer.writerow([header for header, _value in self.csv_columns])
            for row in rows.iterator(chunk_size=2000):
                yield writer.writerow([value(row) for _header, value in self.csv_columns])

        response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{self.csv_name}.csv"'
        return response
