"""The API key scheme in the OpenAPI document (`/v2/schema`)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "console.credentials.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`swk_…`) of the tenant; tenant-bound endpoints also need "
                           "`X-Tenant: <slug>` (or a tenant's host name).",
        }
