"""probe_registry's credential in the OpenAPI document (`/v2/schema`)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ProbeCredentialScheme(OpenApiAuthenticationExtension):
    target_class = "registry_app.probe_auth.ProbeAuthentication"
    name = "probeCredential"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "probe.<unix time>.<HMAC>, derived from SECRET_KEY by probe_registry; "
                               "health paths only."}
