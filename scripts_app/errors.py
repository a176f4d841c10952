from console.errors import ApiError


class MissingVariables(ApiError):
    status, code = 400, "missing_variables"


class UnknownTouchpoint(ApiError):
    status, code = 404, "unknown_touchpoint"

    def __init__(self, touchpoint_id):
        super().__init__(
            f"There is no touchpoint '{touchpoint_id}'. GET /v2/audio/scripts lists the touchpoints.",
            details={"touchpoint": touchpoint_id},
        )
