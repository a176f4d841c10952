"""Django's WSGI handler, keeping the URL resolver's recent answers.

Django resolves each request's path by trying the URLconf's patterns in order, every
time: /v2/usage passes through five nested resolvers and about thirty patterns before
it matches, a sizeable share of a usage read next to the bare view's single pattern
(docs/performance-history.md). The answer depends on nothing but the path
and the URLconf (the project has no language-prefixed patterns), so the handler keeps
the answers of the last RESOLVED_PATHS_KEPT paths that resolved, per resolver:
`override_settings(ROOT_URLCONF=…)` and a request's own `urlconf` get a resolver of
their own, and Django's `clear_url_caches` a new one. A path that does not resolve is
not kept (each one raises Resolver404 afresh), so unknown paths cannot crowd out the
known ones; paths with ids take a place each, bounded by the count (and gunicorn's
request-line limit bounds a path's length).

Each request gets its own copy of the answer, with its own `kwargs`: Django hands
that dict to every middleware's `process_view`, which may change it.
"""
import functools

from django.core.handlers.wsgi import WSGIHandler
from django.urls import ResolverMatch, get_resolver, set_urlconf

RESOLVED_PATHS_KEPT = 512


class ResolveKeepingWSGIHandler(WSGIHandler):
    def resolve_request(self, request):
        urlconf = getattr(request, "urlconf", None)
        if urlconf is not None:
            set_urlconf(urlconf)
        kept = _resolved(get_resolver(urlconf), request.path_info)
        # Not copy.copy: a ResolverMatch refuses to be pickled, which copy relies on.
        resolver_match = object.__new__(ResolverMatch)
        resolver_match.__dict__.update(kept.__dict__, kwargs=dict(kept.kwargs))
        request.resolver_match = resolver_match
        return resolver_match


@functools.lru_cache(maxsize=RESOLVED_PATHS_KEPT)
def _resolved(resolver, path):
    return resolver.resolve(path)
