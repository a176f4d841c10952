from console.errors import ApiError, Conflict


class CalendarUrlRefused(ApiError):
    status, code = 400, "calendar_url_refused"
    message = "Kalender werden nur über https-Adressen öffentlicher Server erreicht."


class CalendarCheckFailed(ApiError):
    """The connection check on save: `details.reason` is `unreachable`, `unauthorized`
    or `not_found`, the message says in German what is wrong."""

    status, code = 400, "calendar_check_failed"
    message = "Der Kalender ist nicht erreichbar."



class CalendarInUse(Conflict):
    code = "calendar_in_use"
    message = ("Terminarten von Assistenten buchen in diesem Kalender (details.assistants). Nehmen Sie ihn dort "
               "zuerst heraus (PATCH /v2/assistants/{id}, appointmentTypes).")
