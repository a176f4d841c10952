"""The gateway token in the OpenAPI document (`/v2/schema`)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class GatewayTokenScheme(OpenApiAuthenticationExtension):
    target_class = "gateway_app.auth.GatewayTokenAuthentication"
    name = "gatewayToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "The hub's GATEWAY_STATIC_TOKEN (/v1/*, /agent); no API key."}
