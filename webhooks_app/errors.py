from console.errors import ApiError, Conflict


class EndpointUrlRefused(ApiError):
    status, code = 400, "webhook_url_refused"
    message = "Webhook URLs must be https (plain http only for loopback in development) and public."


class EndpointLimitReached(Conflict):
    code = "webhook_limit_reached"
    message = ("This tenant has as many webhook endpoints as it may have (details.maxEndpoints). "
               "Delete one it no longer needs (DELETE /v2/webhooks/{id}), or change its URL or events, "
               "instead of adding another.")
