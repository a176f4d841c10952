from console.errors import ApiError


class EndpointUrlRefused(ApiError):
    status, code = 400, "webhook_url_refused"
    message = "Webhook URLs must be https (plain http only for loopback in development) and public."
