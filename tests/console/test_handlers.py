"""The served WSGI handler keeps the URL resolver's answers (console/handlers.py): each
request gets the answer Django's resolver gives, in a copy of its own; paths that do
not resolve are not kept; the kept answers are bounded and belong to one URLconf."""
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started
from django.db import close_old_connections
from django.test import RequestFactory
from django.urls import Resolver404, get_resolver

from console import handlers
from console.handlers import RESOLVED_PATHS_KEPT, ResolveKeepingWSGIHandler
from console.wsgi import application


@pytest.fixture(autouse=True)
def _no_kept_answers():
    """Each test starts and ends with no answer kept (they are kept per process)."""
    handlers._resolved.cache_clear()
    yield
    handlers._resolved.cache_clear()


@pytest.fixture
def handler():
    return ResolveKeepingWSGIHandler()


def resolve(handler, path, **extra):
    request = RequestFactory().get(path)
    request.__dict__.update(extra)
    return handler.resolve_request(request)


def served(path, **headers):
    """`application`'s answer to a GET of `path`: status, body. Like Django's test
    client, the request keeps the test's database connection open."""
    environ = RequestFactory().get(path, **headers).environ
    started = []
    request_started.disconnect(close_old_connections)
    try:
        body = b"".join(application(environ, lambda status, headers, exc_info=None: started.append(status)))
    finally:
        request_started.connect(close_old_connections)
    return started[0], body


def test_the_served_application_is_the_keeping_handler():
    assert isinstance(application, ResolveKeepingWSGIHandler)


@pytest.mark.parametrize("path", ["/v2/usage", "/v2/leads/ld_123", "/health", "/v2/audio/scripts/voicemail.greeting",
                                  "/admin/console/tenant/"])
def test_a_kept_answer_is_the_resolvers(handler, path):
    first, kept = resolve(handler, path), resolve(handler, path)
    assert handlers._resolved.cache_info().hits == 1
    expected = get_resolver().resolve(path)
    for match in (first, kept):
        assert (match.func, match.args, match.kwargs, match.route, match.view_name) == (
            expected.func, expected.args, expected.kwargs, expected.route, expected.view_name)


def test_each_request_gets_its_own_copy_of_the_answer(handler):
    first = resolve(handler, "/v2/leads/ld_123")
    # A middleware's process_view gets the match's kwargs and may change them.
    first.kwargs["pk"] = "changed"
    first.route = "changed"
    second = resolve(handler, "/v2/leads/ld_123")
    assert second.kwargs == {"pk": "ld_123"} and second.route == get_resolver().resolve("/v2/leads/ld_123").route
    assert second is not first and second.kwargs is not first.kwargs


def test_a_path_that_does_not_resolve_is_not_kept(handler):
    for _attempt in range(2):
        with pytest.raises(Resolver404):
            resolve(handler, "/v2/nothing-here")
    assert handlers._resolved.cache_info().currsize == 0


def test_the_kept_answers_are_bounded(handler):
    for n in range(RESOLVED_PATHS_KEPT + 20):
        resolve(handler, f"/v2/leads/ld_{n}")
    assert handlers._resolved.cache_info().currsize == RESOLVED_PATHS_KEPT
    assert resolve(handler, "/v2/leads/ld_0").kwargs == {"pk": "ld_0"}  # the oldest was let go, and comes back


def test_another_urlconf_gets_answers_of_its_own(handler, settings):
    with pytest.raises(Resolver404):
        resolve(handler, "/v2/__failing__/drf")
    assert resolve(handler, "/v2/__failing__/drf", urlconf="tests.console.urls_failing").url_name is None
    with pytest.raises(Resolver404):  # the request's own URLconf was not kept for the next request
        resolve(handler, "/v2/__failing__/drf")
    settings.ROOT_URLCONF = "tests.console.urls_failing"
    assert resolve(handler, "/v2/__failing__/drf").func.view_class.__name__ == "FailingApiView"


def test_the_handler_differs_from_djangos_only_in_resolving():
    # Everything else a request goes through is Django's own handler.
    overridden = {name for name, value in vars(ResolveKeepingWSGIHandler).items() if callable(value)}
    assert overridden == {"resolve_request"}
    assert ResolveKeepingWSGIHandler.__mro__[1] is WSGIHandler


@pytest.mark.django_db
def test_the_served_application_answers_with_kept_answers(api_a, key_a):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key_a}", "HTTP_X_TENANT": "acme"}
    answers = [served("/v2/usage", **headers) for _request in range(3)]
    assert handlers._resolved.cache_info().hits == 2
    assert answers[0][0] == "200 OK" and answers[0] == answers[1] == answers[2]
    assert answers[0][1] == api_a.get("/v2/usage").content
    status, body = served("/v2/nothing-here", **headers)
    assert status == "404 Not Found" and b'"not_found"' in body
