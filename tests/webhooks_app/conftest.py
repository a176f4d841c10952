import pytest

from tests.calls_app.conftest import carrier, carrier_client, number_a  # noqa: F401
from tests.receiver import Receiver


@pytest.fixture
def receiver():
    made = []

    def make(statuses=(200,), **kwargs):
        made.append(Receiver(statuses, **kwargs))
        return made[-1]

    yield make
    for one in made:
        one.stop()
