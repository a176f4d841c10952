"""The errors of /v2/messaging and of sending an SMS (docs/api.md, "Error codes")."""
from console.errors import ApiError, Conflict


class MessagingNotConfigured(Conflict):
    code = "messaging_not_configured"
    message = "The tenant has no messaging provider: choose one first (PATCH /v2/messaging)."


class SmsCarrierCannotSend(Conflict):
    # The default provider `carrier`: the call came through a carrier whose kind sends no
    # SMS (a SIP trunk, Asterisk, a browser session).
    code = "sms_carrier_cannot_send"
    message = ("The call's carrier cannot send SMS (only a Twilio carrier can): choose a messaging provider "
               "(PATCH /v2/messaging).")


class SmsNotMobile(ApiError):
    status, code = 400, "sms_not_mobile"
    message = "SMS go to German mobile numbers only (015x, 016x, 017x)."


class SmsNoCaller(ApiError):
    # An SMS goes only to the caller's own number, read from the call.
    status, code = 400, "sms_no_caller"
    message = "The call has no caller's number to send an SMS to (a browser session, a withheld number)."


class SmsNumberBlocked(Conflict):
    code = "sms_number_blocked"
    message = "The number is on the tenant's blocklist: it gets no SMS."


class MessagingUrlRefused(ApiError):
    # console.outbound.url_admit's refusal of the webhook provider's URL.
    status, code = 400, "messaging_url_refused"
    message = "The messaging webhook's URL is not allowed (details.url says why)."
