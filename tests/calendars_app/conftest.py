from collections.abc import Iterator
from typing import Any

import pytest

from tests.calendars_app.radicale_server import Radicale, radicale


@pytest.fixture(scope="module")
def dav() -> Iterator[Radicale]:
    with radicale(log_level="info") as server:  # the requests it received are counted
        yield server


@pytest.fixture
def calendar_url(dav: Radicale, request: Any) -> str:
    import uuid

    return dav.make_calendar("c" + uuid.uuid4().hex[:10])
