"""Reads of the hot paths, compiled to SQL once per process.

Building and compiling a QuerySet costs more Python on every request than the database
needs to answer the indexed reads of the list endpoints (docs/performance-history.md).
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
and DRF's conversion to the current zone; on SQLite and PostgreSQL, the timestamp is
read as text and rewritten without being parsed at all, and PostgreSQL writes the API's
text itself (cheaper in its C than the rewriting in Python).
"""
import datetime as dt

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import F, Func, TextField
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console.representation import datetime_text, is_utc, utc_datetime_text

MAX_VARIANTS = 256  # kept per query (a list's filters and limits combined); more start afresh


class CompiledQuery:
    def __init__(self, build, using=DEFAULT_DB_ALIAS, *, datetimes_as_text=False):
        self._build = build  # build(*values, **variant) -> a values_list() QuerySet
        self._using = using
        self._datetimes_as_text = datetimes_as_text
        self._compiled = {}

    def __call__(self, *values, **variant):
        """The rows of the query built with `values` and `variant`, as list(queryset)."""
        rows, convert = self.fetch(*values, **variant)
        return convert(rows)

    def fetch(self, *values, **variant):
        """`(rows, convert)`: the rows as the database driver returns them (not yet
        converted like the ORM would: hashable values that say everything the converted
        row would), and the function that converts a list of them as `__call__` does.
        For callers that do their own work on a row only when they have to."""
        connection = connections[self._using]
        compiled = self._compiled_for(connection, values, variant)
        return compiled.fetch(connection, values), lambda rows: compiled.convert(connection, rows)

    def _compiled_for(self, connection, values, variant):
        # In the UTC zone (the API's), a database may write the API's text itself.
        utc = self._datetimes_as_text and is_utc(timezone.get_current_timezone())
        key = (connection.vendor, utc, tuple(map(type, values)), tuple(sorted(variant.items())))
        compiled = self._compiled.get(key)
        if compiled is None:
            if len(self._compiled) >= MAX_VARIANTS:
                self._compiled.clear()
            compiled = self._compiled[key] = _Compiled(self._build, values, variant, connection,
                                                       self._datetimes_as_text, utc)
        return compiled


class _Compiled:
    def __init__(self, build, values, variant, connection, datetimes_as_text, utc):
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
        # The drivers turn each timestamp into a datetime in Python (SQLite's sqlite3 module
        # parses its stored text; Django's loader for psycopg replaces the zone), only for
        # the API to format it back: timestamps wanted as text are read as text instead, and
        # rewritten (`_TEXT_READERS`), where the form of that text is known.
        self.text_reader = None
        if self.as_text and _plain_columns(queryset, columns):
            self.text_reader = _TEXT_READERS.get(connection.vendor)
            if self.text_reader is not None and not self.text_reader.applies(connection, self.converters, self.as_text):
                self.text_reader = None
        if self.text_reader is not None:
            # The API's text written by the database, where it can (PostgreSQL in UTC):
            # nothing left to convert in Python.
            in_sql = self.text_reader.api_text if utc else None
            as_text = in_sql or (lambda name: Cast(name, output_field=TextField()))
            names = _selected_names(queryset)
            queryset = queryset.values_list(*(as_text(name) if position in self.as_text else F(name)
                                              for position, name in enumerate(names)))
            compiler = queryset.query.get_compiler(connection=connection)
            assert len(_selected(compiler)) == self.width
            if in_sql is not None:
                self.converters = [converter for converter in self.converters if converter[0] not in self.as_text]
                self.as_text = set()
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        self.slots = [(index, stand_ins.index(param)) for index, param in enumerate(self.params)
                      if _is_stand_in(param, stand_ins)]
        missing = set(range(len(values))) - {slot for _index, slot in self.slots}
        if missing:
            raise ValueError(f"values {sorted(missing)} are not plain SQL parameters of {self.sql!r}")

    def fetch(self, connection, values):
        params = list(self.params)
        for index, slot in self.slots:
            params[index] = values[slot]
        # Through Django's cursor wrapper, as every statement. PostgreSQL: parameters bound
        # by the server, one kept cursor (console/db/postgresql/base.py).
        fetch_rows = getattr(connection, "fetch_rows", None)
        if fetch_rows is not None:
            return fetch_rows(self.sql, params)
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            return cursor.fetchall()

    def convert(self, connection, rows):
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
            if self.text_reader is not None:
                return self.text_reader.converter(orm, zone, utc_zone and naive_is_utc)

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


class _SQLiteText:
    """Timestamps as SQLite stores them: `str(datetime)` of the naive datetime in the
    connection's zone ("2025-03-01 10:00:00" or "2025-03-01 10:00:00.123456")."""

    api_text = None  # other forms of stored text are possible: Python reads each

    @staticmethod
    def applies(connection, converters, positions):
        # The ORM's converters of these columns parse any other form of text.
        return all(functions for position, functions, _expression in converters if position in positions)

    @staticmethod
    def converter(orm, zone, utc):
        def convert(value):
            # Runs for every timestamp of a long list: the checks are written out.
            if utc and value is not None and len(value) in (19, 26) and value[10] == " " and value[19:] != ".000000":
                return f"{value[:10]}T{value[11:]}Z"
            return None if value is None else datetime_text(orm(value), zone)
        return convert


class _PostgreSQLText:
    """`timestamptz::text` with DateStyle ISO in the session zone UTC (Django sets it):
    "2025-03-01 10:00:00+00", or with the fraction of a second without trailing zeros
    ("2025-03-01 10:00:00.1234+00")."""

    @staticmethod
    def applies(connection, converters, positions):
        connection.ensure_connection()
        info = getattr(connection.connection, "info", None)  # psycopg 3
        return info is not None and (info.parameter_status("DateStyle") or "").startswith("ISO") \
            and connection.timezone_name == "UTC"

    @staticmethod
    def api_text(name):
        return _PostgreSQLAPIText(F(name))

    @staticmethod
    def converter(orm, zone, utc):
        # Other zones only: in the UTC zone the database writes the API's text (api_text).
        def convert(value):
            return None if value is None else datetime_text(parse_datetime(value), zone)
        return convert


class _PostgreSQLAPIText(Func):
    """A timestamptz as `datetime_text` writes it in the UTC zone: "2025-03-01T10:00:00Z",
    or with all six digits of a fraction ("2025-03-01T10:00:00.100000Z"); NULL stays NULL."""
    template = "REPLACE(TO_CHAR(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '.000000Z', 'Z')"
    output_field = TextField()


_TEXT_READERS = {"sqlite": _SQLiteText, "postgresql": _PostgreSQLText}


def datetime_parameter(value, using=DEFAULT_DB_ALIAS):
    """An aware datetime as a compiled query's str parameter, in the form the database
    compares with its stored timestamps: the text the ORM itself sends (SQLite: the
    naive UTC text it stores), else ISO 8601 with the offset (PostgreSQL casts it).
    In the query, compare with `Value(parameter, output_field=TextField())`, which the
    ORM passes on as it is."""
    adapted = connections[using].ops.adapt_datetimefield_value(value)
    return adapted if isinstance(adapted, str) else value.isoformat()


def _selected(compiler):
    compiler.setup_query()
    return compiler.select[:compiler.col_count]


def _selected_names(queryset):
    """The names a values_list() queryset selects, in the order of its columns: its model
    fields, then its annotations."""
    return (*queryset.query.values_select, *queryset.query.annotation_select)


def _plain_columns(queryset, columns):
    """Whether the queryset selects model fields and annotations by name and nothing else,
    the fields first (as the ORM orders them)."""
    query = queryset.query
    return not query.extra_select and len(_selected_names(queryset)) == len(columns)


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
