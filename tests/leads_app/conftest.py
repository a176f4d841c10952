import pytest
from django.core.cache import cache
from rest_framework.test import APIClient


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the database (rolled back after each test) or, in the
    tests of the cache path, in the cache: every test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def public():
    """A client without credentials, as a web page or a server posting a lead."""
    return APIClient()
