"""Writes of campaigns, one module a section: the campaign and its state (lifecycle),
its contacts (contacts), the blocklist and `opt_out` (blocklist), and the erasure of a
number (erasure, called by privacy_app); the dialling itself is
campaigns_app/scheduler.py. The public writes are importable from here, as other apps
import them (`campaigns_app.services.number_erase`, `….opt_out`)."""
from campaigns_app.services.blocklist import blocklist_add, blocklist_remove, opt_out
from campaigns_app.services.contacts import contacts_add
from campaigns_app.services.erasure import ErasedNumber, number_erase
from campaigns_app.services.lifecycle import (
    campaign_complete,
    campaign_create,
    campaign_delete,
    campaign_pause,
    campaign_transition,
    campaign_update,
    contact_announce,
)

__all__ = [
    "ErasedNumber", "blocklist_add", "blocklist_remove", "campaign_complete", "campaign_create", "campaign_delete",
    "campaign_pause", "campaign_transition", "campaign_update", "contact_announce", "contacts_add", "number_erase",
    "opt_out",
]
