"""`console.phone.written_pattern`: the number in any form people write it, found by the
database's own regular expressions (SQLite through Python's `re`, PostgreSQL's), never
inside a longer run of digits."""
import re

import pytest

from console.phone import InvalidPhoneNumber, written_pattern
from leads_app.models import Lead
from leads_app.services import lead_create

NUMBER = "+491761234567"
WRITTEN = ["+491761234567", "+49 176 1234567", "0049 176 1234567", "+49 (0)176 / 123 45 67", "0176 1234567",
           "01761234567", "0176-123-45-67", "(0176) 1234567", "0176/1234567", "491761234567", "1761234567",
           "Nummer: 0176 123 45 67.", '{"rueckruf":"0176.1234567"}']
NOT_IT = ["01761234568", "101761234567", "017612345670", "+491761234", "0176 123456", "+4317612345678"]


@pytest.mark.parametrize("text", WRITTEN)
def test_every_written_form_is_found(text):
    assert re.search(written_pattern(NUMBER), text)


@pytest.mark.parametrize("text", NOT_IT)
def test_other_numbers_and_longer_runs_are_not(text):
    assert not re.search(written_pattern(NUMBER), text)


def test_not_an_e164_number_is_refused():
    with pytest.raises(InvalidPhoneNumber):
        written_pattern("anon-abc")


@pytest.mark.django_db
def test_the_database_finds_exactly_the_same_texts(tenant_a):
    for index, text in enumerate(WRITTEN + NOT_IT):
        lead = lead_create(tenant=tenant_a, kind="callback", phone="+4930901820")
        Lead.objects.filter(pk=lead.pk).update(notes=text, preferred_at=str(index))
    found = set(Lead.objects.filter(notes__regex=written_pattern(NUMBER)).values_list("notes", flat=True))
    assert found == set(WRITTEN)
