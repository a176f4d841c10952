"""What every plan of lanes shares: the order in which routed lanes are tried, the
budget, and where and with which key a lane in `api` mode is called.

The registry's router gives the candidates (and names the lanes in a cooldown); a
plan tries every zero-euro lane first, in the router's order, then the paid ones
whose worst case fits the request's budget (model-hub-registry §1: paid per-use APIs
only as a fallback). A lane of unknown price (`eur` null) is never called: no budget
can be kept with it.
"""
from registry_app.lanes.config import lane_setting, lane_variable
from registry_app.routing import price_group, sort_key


def http_url(text):
    return isinstance(text, str) and text.startswith(("http://", "https://"))


def ordered_lanes(route_):
    """[(lane, cooldown reason or None)]: the candidates and the lanes in a cooldown
    (reported as skipped), zero-euro lanes first, each group in the router's order."""
    lanes = [(candidate.lane, None) for candidate in route_.candidates]
    lanes += [(exclusion.lane, exclusion.reason) for exclusion in route_.excluded if exclusion.code == "cooldown"]
    return sorted(lanes, key=lambda item: (price_group(item[0].eur), sort_key(item[0])))


def budget_skip(lane, estimate, max_eur, worst_case=""):
    """(outcome, detail) when a lane's price rules it out, else (). `worst_case` says
    what the estimate counts."""
    group = price_group(lane.eur)
    if group == 2:
        return ("price_unknown", "price unknown (eur null): the gateway cannot keep a budget with it")
    if group == 1 and estimate > max_eur:
        return ("over_budget", f"worst case {estimate:.6f} EUR{worst_case} exceeds max_eur {max_eur:g}")
    return ()


def lane_model(lane):
    """The model name an `api` lane is sent: GATEWAY_MODEL_<LANE>, else the lane's
    `params.model`, else its first `params.models`, else its id."""
    params = lane.entry.get("params") or {}
    models = params.get("models") or []
    return lane_setting(lane.id, "MODEL") or params.get("model") or (models[0] if models else lane.id)


def api_target(lane):
    """(endpoint, key, ()) of a lane called in `api` mode, or (None, None, skip) with
    the (outcome, detail) that says why it cannot be: its endpoint
    (GATEWAY_ENDPOINT_<LANE>, else the registry's) must be an HTTP URL, and a hosted
    third-party API (`hosting: api`) needs its bearer key (GATEWAY_KEY_<LANE>, §5)."""
    endpoint = lane_setting(lane.id, "ENDPOINT") or lane.entry.get("endpoint")
    if not http_url(endpoint):
        return None, None, ("unavailable", f"no HTTP endpoint: set {lane_variable(lane.id, 'ENDPOINT')}")
    key = lane_setting(lane.id, "KEY")
    if lane.hosting == "api" and not key:
        return None, None, ("no_key", f"no key: set {lane_variable(lane.id, 'KEY')}")
    return endpoint, key, ()
