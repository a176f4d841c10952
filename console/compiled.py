"""Reads of the hot paths, compiled to SQL once per process.

Building and compiling a QuerySet costs about 0.3 ms of Python on every request, while
the database answers the indexed reads of the list endpoints in tens of microseconds.
A `CompiledQuery` keeps the query written with the ORM (tenant scoping included, as
everywhere) but compiles it only once: the first call builds it with stand-in values
for the parameters, finds where they went among the SQL's parameters, and keeps the
SQL and the ORM's converters for the selected columns (SQLite's text timestamps to
aware datetimes, its 0/1 to booleans, and so on). Later calls run the SQL with their
own values and convert the rows like the ORM would:

    rows = CompiledQuery(lambda tenant_id: Assistant.objects.filter(tenant_id=tenant_id)
                         .values_list("id", "name"))
    rows(tenant.id)  # [("as_…", "Empfang"), …], as list(queryset) would be

Only `values_list()` querysets. Parameters are ints or strings: their SQL does not
depend on their value. What the ORM writes into the SQL text itself (a slice's LIMIT,
which filters there are) is a keyword argument of the build function: each distinct
set of keyword values is compiled once. A value that does not end up as a plain SQL
parameter (a LIKE pattern, say) is refused when the query is compiled.

`datetimes_as_text=True`: timestamp columns come back as the API writes them
(`console.representation.datetime_text` in the current time zone). For a long list
that is most of the work of the rows: in the UTC zone, a timestamp the database
returns in UTC is written as it is, without the ORM's conversion to an aware datetime
and DRF's conversion to the current zone; on SQLite, the stored text is read and
rewritten without being parsed at all.
"""
import datetime as dt

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import F, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from console.representation import datetime_text, is_utc, utc_datetime_text


class CompiledQuery:
    def __init__(self, build, using=DEFAULT_DB_ALIAS, *, datetimes_as_text=False):
        self._build = build  # build(*values, **variant) -> a values_list() QuerySet
        self._using = using
        self._datetimes_as_text = datetimes_as_text
        self._compiled = {}

    def __call__(self, *values, **variant):
        """The rows of the query built with `values` and `variant`, as list(queryset)."""
        connection = connections[self._using]
        key = (connection.vendor, tuple(map(type, values)), tuple(sorted(variant.items())))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = _Compiled(self._build, values, variant, connection,
                                                       self._datetimes_as_text)
        return compiled.rows(connection, values)


class _Compiled:
    def __init__(self, build, values, variant, connection, datetimes_as_text):
        stand_ins = [_stand_in(slot, value) for slot, value in enumerate(values)]
        queryset = build(*stand_ins, **variant)
        compiler = queryset.query.get_compiler(connection=connection)
        columns = [expression for expression, _sql, _alias in _selected(compiler)]
        self.width = len(columns)
        converters = compiler.get_converters(columns)
        self.converters = [(position, *converters.get(position, ([], expression)))
                           for position, expression in enumerate(columns)
                           if position in converters or datetimes_as_text and _is_datetime(expression)]
        self.as_text = {position for position, _functions, expression in self.converters
                        if datetimes_as_text and _is_datetime(expression)}
        # The ORM takes a naive timestamp from the database to be in the connection's zone
        # (SQLite's come back naive).
        self.naive_is_utc = connection.timezone_name == "UTC"
        # SQLite keeps a timestamp as text, which the sqlite3 module parses into a datetime
        # in Python, for the API to format it back: timestamps wanted as text are read as
        # the stored text instead (the ORM's converters still parse any other form of it).
        self.stored_text = bool(self.as_text) and connection.vendor == "sqlite" and _plain_columns(queryset, columns) \
            and all(functions for position, functions, _expression in self.converters if position in self.as_text)
        if self.stored_text:
            names = queryset.query.values_select
            queryset = queryset.values_list(*(Cast(name, output_field=TextField()) if position in self.as_text
                                              else F(name) for position, name in enumerate(names)))
            compiler = queryset.query.get_compiler(connection=connection)
            assert len(_selected(compiler)) == self.width
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        self.slots = [(index, stand_ins.index(param)) for index, param in enumerate(self.params)
                      if _is_stand_in(param, stand_ins)]
        missing = set(range(len(values))) - {slot for _index, slot in self.slots}
        if missing:
            raise ValueError(f"values {sorted(missing)} are not plain SQL parameters of {self.sql!r}")

    def rows(self, connection, values):
        params = list(self.params)
        for index, slot in self.slots:
            params[index] = values[slot]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if not rows or not self.converters and len(rows[0]) == self.width:
            return rows
        # Column by column: the transposition and the loop over a column's values run in C,
        # only the conversions themselves are Python.
        columns = list(zip(*rows, strict=True))[:self.width]
        for position, convert in self._column_converters(connection):
            columns[position] = map(convert, columns[position])
        return list(zip(*columns, strict=True))

    def _column_converters(self, connection):
        """(position, convert(value)) of the columns that need converting, for this call."""
        zone = timezone.get_current_timezone()
        utc_zone, naive_is_utc = is_utc(zone), self.naive_is_utc

        def by_the_orm(functions, expression):
            if len(functions) == 1:
                function = functions[0]
                return lambda value: function(value, expression, connection)

            def convert(value):
                for function in functions:
                    value = function(value, expression, connection)
                return value
            return convert

        def as_text(orm):
            if self.stored_text and utc_zone and naive_is_utc:
                def convert(value):
                    # sqlite_utc_text, inlined: this runs for every timestamp of a long list.
                    if value is not None and len(value) in (19, 26) and value[10] == " " and value[19:] != ".000000":
                        return f"{value[:10]}T{value[11:]}Z"
                    return None if value is None else datetime_text(orm(value), zone)
                return convert

            def convert(value):
                if value is None:
                    return None
                if utc_zone and type(value) is dt.datetime and (naive_is_utc or value.tzinfo is not None) and (
                        text := utc_datetime_text(value)) is not None:
                    return text
                return datetime_text(orm(value), zone)
            return convert

        return [(position, as_text(by_the_orm(functions, expression)) if position in self.as_text
                 else by_the_orm(functions, expression))
                for position, functions, expression in self.converters]


def _selected(compiler):
    compiler.setup_query()
    return compiler.select[:compiler.col_count]


def _plain_columns(queryset, columns):
    """Whether the queryset selects its model fields by name and nothing else, in order."""
    query = queryset.query
    return not query.annotation_select and not query.extra_select and len(query.values_select) == len(columns)


def _is_datetime(expression):
    return isinstance(expression.output_field, models.DateTimeField)


def _stand_in(slot, value):
    # Values no real parameter takes; the SQL of an int or a string parameter is the
    # same whatever its value.
    if type(value) is int:
        return -7_193_518_263_000_000 - slot
    if type(value) is str:
        return f"\x00compiled-parameter-{slot}\x00"
    raise TypeError(f"a compiled query takes int and str values, not {type(value).__name__}")


def _is_stand_in(param, stand_ins):
    return any(type(param) is type(stand_in) and param == stand_in for stand_in in stand_ins)
