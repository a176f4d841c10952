"""Errors of the gateway paths, in the one ApiError hierarchy."""
from console.errors import ApiError


class NoLaneAnswered(ApiError):
    status, code = 503, "no_lane_answered"
    message = "No lane could answer the request."


class OverBudget(ApiError):
    # Not worth retrying as it is: the request needs a larger budget or a shorter prompt.
    status, code = 422, "over_budget"
    message = "No lane can answer the request within its budget."


class NotReady(ApiError):
    status, code = 503, "not_ready"
    message = "No chat lane is usable now."


class UnknownRole(ApiError):
    status, code = 400, "unknown_role"


class AudioTooLong(ApiError):
    status, code = 413, "audio_too_long"


class LengthRequired(ApiError):
    status, code = 411, "length_required"
    message = ("This server cannot read a body sent with 'Transfer-Encoding: chunked': send it with a "
               "Content-Length.")


class AnswerInterrupted(ApiError):
    # A lane failed after the first part of its answer was handed on: nothing can fail
    # over any more, the turn ends here (the caller has what came before).
    status, code = 502, "answer_interrupted"
    message = "The lane stopped answering mid-answer."


class ModelNotFound(ApiError):
    # OpenAI's status and code for a model it does not have: its clients raise NotFoundError.
    status, code = 404, "model_not_found"
    message = "The model does not exist here."
