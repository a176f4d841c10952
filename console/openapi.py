"""The OpenAPI document's conventions, applied to every operation in one place.

drf-spectacular's defaults describe this API wrongly in a few systematic ways: a list
action is wrapped in an array although the body is an envelope (`{"calls": [...]}`,
CONTRACT §2), the view's docstring (written for developers) becomes the operation's
description, tags come from the first path segment (30 operations under `v2`), no
error response is documented and `X-Tenant` is declared nowhere. `ApiSchema` fixes
these for all views alike, so a new view is described correctly without remembering to.

Per operation, views add what only they know with `extend_schema`: a summary, the
typed response, and `extra_errors` (see `errors`) for statuses beyond the common ones.
Query parameters come from the handler's `accepts_query` (console/api.py) alone.
"""
import re

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from console.api import TenantBoundMixin, handler_of

# The tag of each operation, by path prefix (the first match wins): one per resource.
TAGS = (
    ("/health", "Health"),
    ("/v2/public/leads", "Public leads"),
    ("/v2/leads", "Leads"),
    ("/v2/calls", "Calls"),
    ("/v2/usage", "Usage"),
    ("/v2/assistants", "Assistants"),
    ("/v2/numbers", "Numbers"),
    ("/v2/audio/scripts", "Scripts"),
    ("/v2/audio/settings", "Audio settings"),
    ("/v2/audio", "Audio"),
    ("/v2/meta", "Engines"),
    ("/v2/registry", "Registry"),
    ("/v2/privacy", "Privacy"),
    ("/v2/webhooks", "Webhooks"),
    ("/v2/campaigns", "Campaigns"),
    ("/v2/blocklist", "Blocklist"),
    ("/v2/tools", "Tools"),
    ("/v2/knowledge", "Knowledge"),
    ("/voice/v1", "Voice runtime"),
    ("/voice/webhook", "Carrier webhooks"),
    ("/api/voice/agent", "Voice agent"),
    ("/api/voice", "Speech module"),
    ("/v1", "Gateway"),
    ("/agent", "Gateway"),
    ("/v2/schema", "Schema"),
    ("/v2/docs", "Schema"),
)

# What each error status means, as the description of its response.
ERROR_DESCRIPTIONS = {
    400: "Bad input: `validation_error` (details name each field or query parameter), `malformed_json`, "
         "`tenant_required`, `too_many_query_parameters` (over 1,000), or a more specific code.",
    401: "`unauthenticated`: no or bad credentials; send `Authorization: Bearer <api key>`.",
    402: "`minute_cap_reached`: the tenant's monthly minutes are used up.",
    403: "`tenant_forbidden` (the credential does not cover the tenant) or `forbidden`.",
    404: "`not_found` or a more specific code: no such resource for this tenant.",
    406: "`not_acceptable`: the Accept header names no media type this operation answers with.",
    409: "A conflict with the current state (the code says which).",
    410: "`export_expired` or another gone resource.",
    413: "`payload_too_large`: the body is too large.",
    414: "`uri_too_long`: path and query string over 8,000 bytes (`details.maxBytes`).",
    415: "`unsupported_media_type`: send the body as `application/json`.",
    422: "Well-formed but unusable input (e.g. audio that cannot be decoded).",
    502: "Every lane tried failed upstream (the gateway's failover found no answer).",
    429: "`rate_limited`: too many requests; retry after `Retry-After` seconds.",
    503: "A dependency is unavailable now (database, engine); retry shortly.",
}


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="snake_case error code, e.g. `validation_error`.")
    message = serializers.CharField(help_text="A sentence that says what went wrong and how to fix it.")
    details = serializers.DictField(help_text="`{field: [messages]}` for validation errors, else context.")


class ErrorSerializer(serializers.Serializer):
    """The one error shape of the API (CONTRACT §2)."""

    error = ErrorBodySerializer()

    class Meta:
        ref_name = "Error"


def errors(*statuses):
    """Extra error statuses of an operation: `@extend_schema(extensions=errors(402, 409))`."""
    return {"x-errors": list(statuses)}


X_TENANT = OpenApiParameter(
    "X-Tenant", str, OpenApiParameter.HEADER, required=False,
    description="The tenant's slug. Overrides the tenant that the request's host name selects; "
                "required when the host name selects none.",
)

ACTION_SUMMARIES = {
    "list": "List {plural}",
    "retrieve": "Get one {singular}",
    "create": "Create a {singular}",
    "partial_update": "Change a {singular}",
    "update": "Replace a {singular}",
    "destroy": "Delete a {singular}",
}


class ApiSchema(AutoSchema):
    def get_tags(self):
        return [tag_of(self.path)]

    def get_description(self):
        # Only what extend_schema(description=...) says: docstrings are for developers.
        return ""

    def get_summary(self):
        action = getattr(self.view, "action", None)
        if action in ACTION_SUMMARIES:
            plural = tag_of(self.path).lower()
            return ACTION_SUMMARIES[action].format(plural=plural, singular=plural.removesuffix("s"))
        return None

    def get_operation_id(self):
        # `GET /v2/calls/{id}` → `calls_retrieve`; the method keeps ids unique across
        # the operations of one path, the path across resources.
        words = [re.sub(r"[^a-z0-9]+", "_", part.lower()).strip("_")
                 for part in self.path.split("/") if part and not part.startswith("{")]
        words = [word for word in words if word != "v2"] or ["root"]
        has_id = "{" in self.path
        action = {"GET": "retrieve" if has_id else "get", "POST": "create", "PUT": "replace",
                  "PATCH": "update", "DELETE": "delete", "HEAD": "head", "OPTIONS": "options"}[self.method]
        if getattr(self.view, "action", None) == "list":
            action = "list"
        return "_".join([*words, action])

    def map_parsers(self):
        # A parser that reads JSON whatever the Content-Type (the gateway's, for
        # `curl -d`) is still a JSON body: declared as `application/json`, so that
        # generated clients send it as one and get an operation for it.
        return list(dict.fromkeys("application/json" if media_type == "*/*" else media_type
                                  for media_type in super().map_parsers()))

    def _is_list_view(self, serializer=None):
        # Every list is an envelope object (CONTRACT §2): never wrap a response in an array.
        return False

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        # The query parameters the handler declares with `accepts_query`: the same
        # declaration by which the view refuses all others.
        parameters.extend(getattr(handler_of(self.view, self.method), "query_parameters", ()))
        if self.is_tenant_bound():
            parameters.append(X_TENANT)
        return parameters

    def is_open(self):
        return any(isinstance(permission, AllowAny) for permission in self.view.get_permissions())

    def is_tenant_bound(self):
        return isinstance(self.view, TenantBoundMixin)

    def error_statuses(self):
        # Any URL can be too long (console/middleware.py, RequestLineLimitMiddleware).
        statuses = {400, 406, 414, 503}
        if not self.is_open():
            statuses.add(401)
        if self.is_tenant_bound():
            statuses.add(403)
        if "{" in self.path:
            statuses.add(404)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses.update((413, 415))
        statuses.update(self.get_extensions().get("x-errors", ()))
        return sorted(statuses)

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        operation.pop("x-errors", None)
        error_ref = self.resolve_serializer(ErrorSerializer, "response").ref
        for status in self.error_statuses():
            operation["responses"].setdefault(str(status), {
                "description": ERROR_DESCRIPTIONS[status],
                "content": {"application/json": {"schema": error_ref}},
            })
        return operation


def tag_of(path):
    return next((tag for prefix, tag in TAGS if path == prefix or path.startswith(prefix + "/")), "Other")


def drop_doubled_request_suffix(result, generator, request, public):
    """Postprocessing hook: `COMPONENT_SPLIT_REQUEST` names a request serializer
    `SpeakRequestSerializer` → `SpeakRequestRequest`; call it `SpeakRequest`."""
    schemas = result.get("components", {}).get("schemas", {})
    renames = {name: name.removesuffix("Request") for name in schemas
               if name.endswith("RequestRequest") and name.removesuffix("Request") not in schemas}
    if not renames:
        return result
    for old, new in renames.items():
        schemas[new] = schemas.pop(old)
    refs = {f"#/components/schemas/{old}": f"#/components/schemas/{new}" for old, new in renames.items()}

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str) and node["$ref"] in refs:
                node["$ref"] = refs[node["$ref"]]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result
