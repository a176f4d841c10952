from console.errors import ApiError, Conflict


class ToolUrlRefused(ApiError):
    status, code = 400, "tool_url_refused"
    message = "HTTP tools call https URLs of public hosts only."


class ToolNameTaken(Conflict):
    code, message = "tool_name_taken", "The tenant has an HTTP tool of this name already."


class ToolLimitReached(Conflict):
    code = "tool_limit_reached"
    message = ("This tenant has as many HTTP tools as it may have (details.maxTools). Delete one it no longer "
               "needs (DELETE /v2/tools/{id}) or change one instead.")


class ToolInUse(Conflict):
    code = "tool_in_use"
    message = ("Assistants still use this HTTP tool (details.assistants). Take it out of their tools "
               "(PATCH /v2/assistants/{id}) first, then delete it.")
