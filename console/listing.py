"""One declaration per list endpoint, from which its query, its representation and its
view are derived when it is declared.

A `Listing` names a list's serializer (and so its model), order, query parameters and
the filter each stands for. It reads the fields' sources as columns, through
`queryset()` (which DRF's serializer takes as well) compiled once per set of filters
(console/compiled.py, timestamps read as the API writes them), and makes the items as
the serializer would, by the fields themselves: a field's `to_representation` of its
column, left out where the column's type makes it the value itself; a source through
`tenant` is the tenant the rows were selected by, a field reading no attribute its
`default`, a `ColumnsField` its representation of several columns' values. A field whose value is not its column's alone (a method field, a relation,
its own way of reading or representing) is refused with `UnderivableField`, so a list
cannot drift from its serializer; one the caller fills in (`supplied`: the calls'
transcripts) is the declared exception. `ListedMixin` derives a viewset's `list` from it.
"""
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from operator import itemgetter
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import Q, QuerySet, TextField, Value
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import ISO_8601, serializers
from rest_framework.fields import Field, empty
from rest_framework.response import Response
from rest_framework.settings import api_settings

from console.api import accepts_query, default_query, validated_query
from console.compiled import CompiledQuery, datetime_parameter
from console.fields import ColumnsField, NullIfEmptyField
from console.pagination import NEXT_HELP, after_position, cursor_decode, page_of

PAGE_ORDER = ("-created_at", "-id")  # a paged list's: its cursor's keyset (console/pagination.py)


class UnderivableField(ImproperlyConfigured):
    """A serializer field whose representation a Listing cannot make from its row."""


# The representations of a value alone, each with the model fields whose values (as the
# ORM converts them) it gives back unchanged.
_TEXT = (models.CharField, models.TextField)
_OF_VALUE: dict[Callable[..., Any], tuple[type[models.Field], ...]] = {
    serializers.CharField.to_representation: _TEXT, serializers.ChoiceField.to_representation: _TEXT,
    serializers.IntegerField.to_representation: (models.IntegerField,),
    serializers.FloatField.to_representation: (models.FloatField,),
    serializers.BooleanField.to_representation: (models.BooleanField,),
    serializers.DateTimeField.to_representation: (models.DateTimeField,),  # read as the API's text
    **dict.fromkeys([NullIfEmptyField.to_representation, serializers.ListField.to_representation,
                     serializers.DictField.to_representation, type(serializers.DictField().child).to_representation,
                     serializers.JSONField.to_representation, serializers.ReadOnlyField.to_representation,
                     # Serializers of a JSON column's values (their fields checked in turn).
                     serializers.Serializer.to_representation, serializers.ListSerializer.to_representation], ()),
}


class Listing:
    def __init__(self, key: str, serializer: type[serializers.Serializer], *, ordering: Sequence[str],
                 model: type[models.Model] | None = None, query: type[serializers.Serializer] | None = None,
                 filters: Mapping[str, str | tuple[str, ...]] | None = None, supplied: Sequence[str] = (),
                 extra_columns: Sequence[str] = ()) -> None:
        """`key`: the body's list and the cursor's scope; `filters`: per query parameter
        the lookup its value is compared with (several: any of them); `supplied`: fields
        the caller fills in; `extra_columns`: read beside the fields' own."""
        # A list without query parameters accepts none: a serializer without fields.
        self.key, self.serializer, self.ordering = key, serializer, tuple(ordering)
        self.query: type[serializers.Serializer] = query or serializers.Serializer
        self.model: type[models.Model] = model or serializer.Meta.model  # type: ignore[attr-defined]
        self.supplied = frozenset(supplied)
        self._fields = {key: field for field in self.model._meta.concrete_fields for key in (field.name, field.attname)}
        self._columns: list[str] = []
        parts = self._derive(serializer(), top=True)
        self.paged = "cursor" in self.query._declared_fields
        if self.paged and self.ordering != PAGE_ORDER:
            raise ImproperlyConfigured(f"{key}: a paged list is ordered {PAGE_ORDER}, its cursor's keyset")
        self._position = itemgetter(self._column("created_at"), self._column("id")) if self.paged else None
        self.filters = {name: (lookups,) if isinstance(lookups, str) else lookups
                        for name, lookups in (filters or {}).items()}
        if set(self.query._declared_fields) - {"limit", "cursor"} != set(self.filters):
            raise ImproperlyConfigured(f"{key}: the filters {sorted(self.filters)} are the query's parameters")
        self._moments = {name for name, lookups in self.filters.items()
                         if isinstance(self._fields.get(lookups[0].split("__")[0]), models.DateTimeField)}
        self.columns = tuple(self._columns + [name for name in extra_columns if name not in self._columns])
        # Whether an item may hold a float: a float, decimal or JSON column read (a field
        # the caller supplies is the caller's to keep free of them: the calls' transcript
        # lines are text). Decides the renderer (ListedMixin).
        self.holds_floats = any(isinstance(self._fields[name], (models.FloatField, models.DecimalField,
                                                                models.JSONField)) for name in self.columns)
        self._rows = CompiledQuery(self._build, datetimes_as_text=True)
        # Items are made by a function written for the list once, as one would write it by
        # hand (`print(LEADS.source)`): no call for a field whose value stays as it is.
        functions: list[Any] = []
        self._constants: list[Callable[[Any], Any]] = []
        item = _expression(parts, functions, self._constants)
        self.source = f"def items(rows, _k):\n    return [{item} for row in rows]\n"
        written = {f"_f{n}": function for n, function in enumerate(functions)}
        exec(compile(self.source, f"<listing {key}>", "exec"), written)
        self._items = written["items"]

    def queryset(self, tenant: Any, **filters: Any) -> QuerySet[Any]:
        """The tenant's (or its id's) rows in the list's order, filtered by the values given."""
        rows = self.model.objects.for_tenant(tenant)  # type: ignore[attr-defined]
        for name, value in filters.items():
            rows = rows.filter(reduce(Q.__or__, (Q(**{lookup: value}) for lookup in self.filters[name])))
        return rows.order_by(*self.ordering)

    def page(self, tenant: Any, query: Mapping[str, Any]) -> dict[str, Any]:
        """The body for validated query parameters: `{key: items}`, with `next` if paged."""
        rows, convert, next_cursor = self.fetch(tenant, **query)
        body = {self.key: self.items(convert(rows), tenant)}
        return {**body, "next": next_cursor} if self.paged else body

    def fetch(self, tenant: Any, *, limit: int | None = None, cursor: str | None = None,
              **filters: Any) -> tuple[list[tuple], Callable[[list[tuple]], list[tuple]], str | None]:
        """`(rows, convert, next)`: one query's rows of `columns` as the driver returns them,
        the function that converts a list of them as the ORM would, the next page's cursor."""
        given = {name: value for name, value in sorted(filters.items()) if value}
        values = [datetime_parameter(value) if name in self._moments else value for name, value in given.items()]
        if cursor:
            created_at, pk = cursor_decode(cursor, tenant=tenant, scope=self.key)
            values += [datetime_parameter(created_at), pk]
        rows, convert = self._rows.fetch(tenant.id, *values, filters=tuple(given), after=bool(cursor),
                                         limit=None if limit is None else limit + 1)
        if limit is None:
            return rows, convert, None
        rows, next_cursor = page_of(rows, tenant=tenant, scope=self.key, limit=limit,
                                    position=lambda row: self._position(convert([row])[0]))  # type: ignore[misc]
        return rows, convert, next_cursor

    def items(self, rows: list[tuple], tenant: Any) -> list[dict[str, Any]]:
        """The serializer's representation of converted rows (supplied fields None, for the caller)."""
        return self._items(rows, [value_of(tenant) for value_of in self._constants])

    def _build(self, tenant_id: str, *values: Any, filters: tuple[str, ...], after: bool,
               limit: int | None) -> QuerySet[Any]:
        # Timestamps compared with datetime_parameter's text, passed on as it is.
        rows = self.queryset(tenant_id, **{name: Value(value, output_field=TextField()) if name in self._moments
                                           else value for name, value in zip(filters, values, strict=False)})
        if after:
            rows = after_position(rows, Value(values[-2], output_field=TextField()), values[-1])
        return rows.values_list(*self.columns)[:limit]

    def _derive(self, serializer: serializers.Serializer, *, top: bool) -> list[tuple[str, str, Any]]:
        """(name, kind, what) of each field: "column" (position, conversion or None, nullable),
        "columns" (positions, conversion of their values), "row" (the parts of a `source="*"`
        serializer), "constant" (its value for a tenant) or "supplied"."""
        if type(serializer).to_representation is not serializers.Serializer.to_representation:
            raise UnderivableField(f"{type(serializer).__name__} has a to_representation of its own")
        parts = [(name, *self._part(field, f"{type(serializer).__name__}.{name}", top))
                 for name, field in serializer.fields.items() if not field.write_only]
        if top and not self.supplied <= set(serializer.fields):
            raise UnderivableField(f"{type(serializer).__name__} has no field {sorted(self.supplied)}")
        return parts

    def _part(self, field: Field, where: str, top: bool) -> tuple[str, Any]:
        if top and field.field_name in self.supplied:
            return "supplied", None
        if isinstance(field, serializers.Serializer) and field.source == "*":
            return "row", self._derive(field, top=False)
        if isinstance(field, ColumnsField) and set(field.columns) <= set(self._fields):
            return "columns", ([self._column(column) for column in field.columns], field.to_representation)
        attrs = field.source_attrs
        if not attrs:
            raise UnderivableField(f"{where}: {type(field).__name__} reads the whole object, not a column")
        column = self._fields.get(attrs[0])
        if column is None and len(attrs) == 1 and not hasattr(self.model, attrs[0]) and field.default is not empty \
                and not callable(field.default):
            value = field.to_representation(field.default)  # as DRF: no such attribute
            return "constant", lambda tenant: value
        if column is not None and column.is_relation and attrs[0] == "tenant" and len(attrs) > 1:  # selected by it
            convert = _conversion(field, None, where) or field.to_representation
            return "constant", lambda tenant: None if (value := reduce(getattr, attrs[1:], tenant)) is None \
                else convert(value)
        if column is None or len(attrs) > 1 or column.is_relation and attrs[0] != column.attname:
            raise UnderivableField(f"{where}: {field.source!r} is no column of {self.model.__name__} (of a relation: "
                                   f"its `_id`; of another table: only the tenant's)")
        return "column", (self._column(attrs[0]), _conversion(field, column, where), column.null)

    def _column(self, name: str) -> int:
        if name not in self._columns:
            self._columns.append(name)
        return self._columns.index(name)


def _conversion(field: Field, column: models.Field | None, where: str) -> Callable[[Any], Any] | None:
    """The field's representation of a value of `column` (None: the value as it is), or
    UnderivableField; the fields within a list, dict or serializer field are checked too."""
    represent = type(field).to_representation
    if represent not in _OF_VALUE or type(field).get_attribute is not Field.get_attribute:
        raise UnderivableField(f"{where}: {type(field).__name__} is not of its value alone")
    child = getattr(field, "child", None)
    for inner in [child] if child is not None else getattr(field, "fields", {}).values():
        _conversion(inner, None, f"{where}[]")
    if isinstance(field, serializers.DateTimeField) and (
            getattr(field, "format", api_settings.DATETIME_FORMAT) != ISO_8601 or "timezone" in vars(field)
            or column is not None and not isinstance(column, models.DateTimeField)):
        raise UnderivableField(f"{where}: a DateTimeField of a timestamp column, in DRF's ISO 8601 and zone")
    if column is not None and column.is_relation:
        column = column.target_field  # type: ignore[attr-defined]  # the related row's key
    if column is None or hasattr(column, "from_db_value"):
        return field.to_representation
    if isinstance(column, _OF_VALUE[represent]) and (not isinstance(field, serializers.ChoiceField) or all(
            type(value) is str for value in field.choice_strings_to_values.values())):
        return None
    return _none_if_empty if represent is NullIfEmptyField.to_representation and isinstance(column, _TEXT) \
        else field.to_representation


def _none_if_empty(value: str) -> str | None:
    return value or None


def _expression(parts: list[tuple[str, str, Any]], functions: list[Any], constants: list[Any]) -> str:
    """The Python expression of an item of `row`: a dict display of the fields in their
    order, a column as it is or through its conversion (`_f<n>`), the constant parts from
    the list `_k`."""
    entries = []
    for name, kind, what in parts:
        if kind == "row":
            value = _expression(what, functions, constants)
        elif kind == "column" and what[1] is None:
            value = f"row[{what[0]}]"
        elif kind == "column" and what[1] is _none_if_empty:
            value = f"(row[{what[0]}] or None)"
        elif kind == "column":
            functions.append(what[1])
            value = f"_f{len(functions) - 1}(row[{what[0]}])"
            if what[2]:  # as DRF: null stays null, unconverted
                value = f"(None if row[{what[0]}] is None else {value})"
        elif kind == "columns":
            functions.append(what[1])
            value = f"_f{len(functions) - 1}(({''.join(f'row[{at}], ' for at in what[0])}))"
        elif kind == "supplied":
            value = "None"
        else:
            constants.append(what)
            value = f"_k[{len(constants) - 1}]"
        entries.append(f"{name!r}: {value}")
    return "{" + ", ".join(entries) + "}"


class Read:
    """A hot read that is no list endpoint (a month's usage counter, a tenant's script
    texts, the transcript lines of a page of calls), declared as a Listing is: `columns`
    of `model`'s rows compared by `by` (the lookups the values are given for, in order;
    one ending in `__in` takes all the values left), in `ordering`, of the tenant whose
    id is the first value unless `of_tenant=False`. Compiled once per process, like a
    Listing's query (console/compiled.py): the feature apps declare their hot reads here
    and never compile queries themselves (an import-linter contract keeps
    console.compiled and console.rendering the core's)."""

    def __init__(self, model: type[models.Model], columns: Sequence[str], *, by: Sequence[str] = (),
                 ordering: Sequence[str] = (), of_tenant: bool = True, datetimes_as_text: bool = False) -> None:
        self.model, self.columns, self.by, self.ordering = model, tuple(columns), tuple(by), tuple(ordering)
        self.of_tenant = of_tenant
        self._rows = CompiledQuery(self._build, datetimes_as_text=datetimes_as_text)

    def __call__(self, *values: Any) -> list[tuple]:
        """The rows as list(queryset) would give them."""
        return self._rows(*values)

    def _build(self, *values: Any) -> QuerySet[Any]:
        rows = self.model.objects.for_tenant(values[0]) if self.of_tenant else self.model.objects.all()  # type: ignore[attr-defined]
        values = values[1:] if self.of_tenant else values
        filters: dict[str, Any] = {}
        for position, lookup in enumerate(self.by):
            filters[lookup] = values[position:] if lookup.endswith("__in") else values[position]
        return rows.filter(**filters).order_by(*self.ordering).values_list(*self.columns)


class ListedMixin:
    """A viewset's `list` action from its `listing`: model and serializer, the query
    parameters accepted, the response documented (`<Model>List`), the body
    (`list_body(tenant, query)`; without a query, the defaults, for the verified reads),
    and the renderer: the fast one where no item can hold a float (`floats_in_body`,
    console.api.TenantBoundMixin)."""

    listing: Listing

    def __init_subclass__(cls, **kwargs: Any) -> None:
        listing = cls.listing
        if "floats_in_body" not in vars(cls):
            cls.floats_in_body = listing.holds_floats  # type: ignore[attr-defined]
        super().__init_subclass__(**kwargs)
        cls.model, cls.serializer_class = listing.model, listing.serializer  # type: ignore[attr-defined]
        fields: dict[str, Field] = {listing.key: listing.serializer(many=True)}
        if listing.paged:
            fields["next"] = serializers.CharField(allow_null=True, help_text=NEXT_HELP)

        parameters = [listing.query] if listing.query._declared_fields else []  # none: every one refused

        @accepts_query(*parameters)
        def list(self: ListedMixin, request: Any) -> Response:
            return Response(self.list_body(request.tenant, validated_query(listing.query, request)))
        if "list" not in vars(cls):
            cls.list = extend_schema(  # type: ignore[attr-defined]
                responses=inline_serializer(f"{listing.model.__name__}List", fields))(list)

    def list_body(self, tenant: Any, query: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.listing.page(tenant, default_query(self.listing.query) if query is None else query)
