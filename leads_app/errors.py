from console.errors import ApiError


class OriginForbidden(ApiError):
    status, code = 403, "origin_forbidden"
    message = "This web origin may not post leads for this tenant."

    @classmethod
    def of(cls, origin, *, any_tenant=False):
        """The refusal naming the origin and how the tenant's operator allows it."""
        whose = "any tenant" if any_tenant else "this tenant"
        shown = f"The web origin '{origin}'" if origin else "A web origin of 'null' (a sandboxed frame or a file)"
        return cls(f"{shown} may not post leads for {whose}. The operator allows an origin in the admin "
                   "(Tenants → the tenant → origins) or with `manage.py create_tenant --origin "
                   "https://www.example.de`.", details={"origin": origin})


class LeadRateLimited(ApiError):
    status, code = 429, "rate_limited"
    message = "Too many requests from this address; try again later."

    def __init__(self, retry_after):
        super().__init__(
            f"Too many requests from this address; try again in {retry_after} seconds.",
            details={"retryAfter": retry_after},
            headers={"Retry-After": str(retry_after)},
        )


class CallbacksUnavailable(ApiError):
    status, code, message = 503, "callbacks_unavailable", "No voice runtime is installed to place callbacks."
