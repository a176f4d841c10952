"""What the tests of answers given without DRF's cycle (/health, verified reads) share."""
import pytest
from rest_framework.views import APIView


def answer(response):
    headers = dict(response.items())
    assert headers.pop("X-Request-Id")  # every request has its own (console/request_log.py)
    # A streamed answer (the campaign results' CSV) is compared by its bytes, too.
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, headers, body


@pytest.fixture
def drf_cycles(monkeypatch):
    """Counts the requests that went through DRF's request cycle."""
    calls = []
    original = APIView.initial

    def counting(self, request, *args, **kwargs):
        calls.append(request.path)
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", counting)
    return calls
