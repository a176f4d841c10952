"""A lead's title (admin pages, the admin's change log) shows the number masked, and
kind and status in the operator's language."""
from django.utils import translation

from leads_app.models import Lead


def test_a_lead_title_masks_the_phone():
    lead = Lead(kind=Lead.Kind.CALLBACK, phone="+491712345667", status=Lead.Status.NEW)
    with translation.override("de"):
        assert str(lead) == "Rückruf +49171•••••67 (Neu)"
    with translation.override("en"):
        assert str(lead) == "Callback +49171•••••67 (New)"
