"""`console.phone.mask`: how numbers appear in logs and admin titles."""
import pytest

from console.phone import mask


@pytest.mark.parametrize(("e164", "masked"), [
    ("+491712345667", "+49171•••••67"),
    ("+491761234567", "+49176•••••67"),
    ("+4930123456", "+49301•••56"),
    ("+12025550123", "+12025••••23"),
    ("+4312345", "+4••••45"),
])
def test_a_number_keeps_its_network_part_and_last_two_digits(e164, masked):
    assert mask(e164) == masked
    assert len(mask(e164)) == len(e164)


@pytest.mark.parametrize("value", ["anon-k3j5x7q2m4a", "0171 2345678", "garbage", "+49abc"])
def test_anything_else_is_hidden_whole(value):
    assert mask(value) == "•••"


@pytest.mark.parametrize("value", ["", None])
def test_no_number_stays_empty(value):
    assert mask(value) == ""


def test_no_masked_number_contains_the_number_or_its_national_digits():
    masked = mask("+491761234567")
    assert "1761234567" not in masked and "1234567" not in masked
