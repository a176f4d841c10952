"""The cloud agent's roles (model-hub-registry §1: /agent with trainee, junior, senior,
experte, routed to the gateway with a fallback to a hosted chat provider).

Each role is a minimum quality tier, the slowest latency class it accepts and the
euros one request may cost. Its lanes are the gateway's for those limits (zero-euro
first, paid ones only within the ceiling); when none of them answers, the hosted
chat providers (hosting `api`) of any tier and latency follow, within the same
ceiling. A trainee with a ceiling of 0 EUR never reaches a paid lane.
"""
from dataclasses import dataclass

from gateway_app.errors import UnknownRole


@dataclass(frozen=True)
class Role:
    name: str
    min_quality: str
    max_latency: str
    max_eur: float
    description: str


ROLES = {role.name: role for role in (
    Role("trainee", "mid", "fast", 0.0, "only the cheapest, fast lanes: zero-euro and fast"),
    Role("junior", "mid", "medium", 0.005, "mid tier or better, fast or medium, up to 0.5 cent a request"),
    Role("senior", "high", "medium", 0.02, "high tier or better, fast or medium, up to 2 cents a request"),
    Role("experte", "frontier", "slow", 0.10, "frontier lanes, any latency, up to 10 cents a request"),
)}


def role_named(name):
    """The Role called `name`, or UnknownRole (400) listing the roles."""
    role = ROLES.get(name) if isinstance(name, str) else None
    if role is None:
        raise UnknownRole(f"Unknown role. The roles are: {', '.join(ROLES)}.", details={"roles": list(ROLES)})
    return role
