"""A call's title (admin pages, the admin's change log) shows both numbers masked,
and direction and status in the operator's language."""
from django.utils import translation

from calls_app.models import Call


def test_a_call_title_masks_both_numbers():
    call = Call(direction="inbound", from_e164="+491712345667", to_e164="+493055501234", status="active")
    with translation.override("de"):
        assert str(call) == "Eingehend +49171•••••67 → +49305•••••34 (Läuft)"
    with translation.override("en"):
        assert str(call) == "Inbound +49171•••••67 → +49305•••••34 (Active)"


def test_a_withheld_caller_reads_as_a_question_mark():
    call = Call(direction="inbound", from_e164="", to_e164="+493055501234", status="active")
    with translation.override("de"):
        assert str(call).startswith("Eingehend ? →")
