"""A call's title (admin pages, the admin's change log) shows both numbers masked."""
from calls_app.models import Call


def test_a_call_title_masks_both_numbers():
    call = Call(direction="inbound", from_e164="+491712345667", to_e164="+493055501234", status="active")
    assert str(call) == "inbound +49171•••••67 → +49305•••••34 (active)"


def test_a_withheld_caller_reads_as_a_question_mark():
    call = Call(direction="inbound", from_e164="", to_e164="+493055501234", status="active")
    assert str(call).startswith("inbound ? →")
