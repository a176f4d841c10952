from console.errors import ApiError, Conflict


class CampaignStateConflict(Conflict):
    code = "campaign_state_conflict"
    message = "The campaign's state does not allow this."


class CampaignFinished(Conflict):
    code = "campaign_finished"
    message = "The campaign is completed or canceled: it takes no more changes or contacts."


class TooManyContacts(ApiError):
    status, code = 400, "too_many_contacts"
    message = "A campaign holds at most 50,000 contacts; split the list into several campaigns."


class OptOutKept(Conflict):
    code = "opt_out_kept"
    message = ("This number asked for no more calls (opt-out); its entry stays on the blocklist. Only an operator "
               "can remove it in the admin, with the callee's new consent.")
