"""JSON written by the database, byte for byte as the API's DRF renderer writes it.

For the longest lists (a page of 200 calls holds 1,200 transcript lines), turning each
row into Python values, then dicts, then JSON costs more than the query. `JSONObjectText`
has the database write a row as compact JSON text instead, which Python only splices:

    TranscriptEntry.objects.values_list("call_id", JSONObjectText(role=F("role"), ts=F("ts")))
    # ("ca_…", '{"role":"user","ts":"2025-03-01T10:00:00.123456Z"}')

Strings are escaped by the database as Python's json module escapes them with
`ensure_ascii=False` (SQLite's `json_quote`, PostgreSQL's `to_json`: `"` and `\\`, the
short forms \\b \\f \\n \\r \\t, other control characters as lowercase `\\u00xx`,
everything else as it is; U+2028/2029 are left to the renderer, as for orjson).
Timestamps are written as DRF's DateTimeField writes them in the UTC zone. Where the
database cannot promise the same text, the expression is NULL and the caller uses the
ORM's path instead: a timestamp SQLite stores in another form than Django writes it, a
NULL value. Only SQLite and PostgreSQL; `supports(connection)` says whether the
expression can be used at all (another database, or another current zone than UTC).
Tests compare the output with the serializers over tricky text on both databases.
"""
from django.db import NotSupportedError, models
from django.db.models import Func, TextField
from django.utils import timezone

from console.representation import is_utc

# A timestamp as DRF writes it in UTC, as a JSON string, or NULL. SQLite holds what
# Django wrote: str() of the naive UTC datetime, "2025-03-01 10:00:00[.123456]";
# isoformat() leaves out a zero fraction.
_SECOND = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
_SQLITE_MOMENT = (f"CASE WHEN {{0}} GLOB '{_SECOND}' OR {{0}} GLOB '{_SECOND}.{'[0-9]' * 6}' "
                  "THEN '\"' || replace(replace({0}, ' ', 'T'), '.000000', '') || 'Z\"' END")
_POSTGRESQL_MOMENT = ("('\"' || replace(to_char({0} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), "
                      "'.000000', '') || 'Z\"')")
_QUOTE = {"sqlite": "json_quote({0})", "postgresql": "(to_json({0})::text)"}
_MOMENT = {"sqlite": _SQLITE_MOMENT, "postgresql": _POSTGRESQL_MOMENT}


def supports(connection):
    """Whether `JSONObjectText` writes what the API writes on this connection now."""
    return connection.vendor in _QUOTE and connection.timezone_name == "UTC" \
        and is_utc(timezone.get_current_timezone())


class JSONObjectText(Func):
    """`{"key":value,…}` of the keyword arguments' values (string and datetime fields,
    not null), compact, in their order; NULL where a value cannot be written here."""
    output_field = TextField()

    def __init__(self, **fields):
        assert all(key.isidentifier() for key in fields), "keys are written into the SQL"
        self.keys = list(fields)
        super().__init__(*fields.values())

    def as_sql(self, compiler, connection, **extra_context):
        if connection.vendor not in _QUOTE:
            raise NotSupportedError(f"JSONObjectText is not written for {connection.vendor}")
        parts, params = [], []
        for index, (key, expression) in enumerate(zip(self.keys, self.get_source_expressions(), strict=True)):
            sql, value_params = compiler.compile(expression)
            if value_params:
                raise NotSupportedError("JSONObjectText takes columns, not parameters")
            field = expression.output_field
            if isinstance(field, models.DateTimeField):
                value = _MOMENT[connection.vendor].format(sql)
            elif isinstance(field, models.CharField | models.TextField):
                value = _QUOTE[connection.vendor].format(sql)
            else:
                raise NotSupportedError(f"JSONObjectText writes strings and datetimes, not {type(field).__name__}")
            opening = "{" if index == 0 else ","
            parts.append(f"'{opening}\"{key}\":' || {value}")
        return "(" + " || ".join([*parts, "'}'"]) + ")", params
