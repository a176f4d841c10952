"""The one admission rule for the URLs tenants give us to call (console.outbound.url_admit),
as webhooks and HTTP tools apply it when a URL is saved: a host that a resolver would
read as an IPv4 address written another way is refused, for both, in production and in
development alike (issue 40, item 10); the rule's other parts hold for both too."""
import socket

import pytest
from django.test import override_settings

from console import outbound
from console.errors import ApiError, ValidationFailed
from tests.conftest import error_of
from tools_app.models import HttpTool
from webhooks_app.errors import EndpointUrlRefused
from webhooks_app.models import Endpoint
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db

# Each is what inet_aton (glibc's resolver, so `connect`) and a browser read as the
# address beside it.
ODD_SPELLINGS = {
    "127.1": "127.0.0.1",
    "127.0.1": "127.0.0.1",
    "0x7f.1": "127.0.0.1",
    "0x7f.0.0.1": "127.0.0.1",
    "0x7f000001": "127.0.0.1",
    "0X7F000001": "127.0.0.1",
    "2130706433": "127.0.0.1",
    "0177.0.0.1": "127.0.0.1",
    "0177.1": "127.0.0.1",
    "017700000001": "127.0.0.1",
    "127.000.000.001": "127.0.0.1",
    "127.0.0.1.": "127.0.0.1",
    "0": "0.0.0.0",
    "10.1": "10.0.0.1",
    "0xa9fea9fe": "169.254.169.254",
    "169.254.43518": "169.254.169.254",
    "3232235777": "192.168.1.1",
    "0300.0250.1.1": "192.168.1.1",
    "134744072": "8.8.8.8",  # public, and still refused: an address is written a.b.c.d
}
TOOL = {"name": "termin_pruefen", "url": "https://praxis.example/api/termine"}


class Refused(ApiError):
    status, code = 400, "test_refused"


def test_the_spellings_are_what_the_resolver_reads() -> None:
    """The list is honest: the OS reads each spelling as that address (a dotted quad
    with a trailing dot or zero-padded parts are read as written, too)."""
    for spelling, address in ODD_SPELLINGS.items():
        if spelling.endswith(".") or spelling == "127.000.000.001":
            continue  # inet_aton refuses a trailing dot; leading zeros of 000 are octal 0 (same address)
        assert socket.inet_ntoa(socket.inet_aton(spelling)) == address, spelling


@pytest.mark.parametrize("private", [False, True], ids=["production", "development"])
@pytest.mark.parametrize("spelling", list(ODD_SPELLINGS))
def test_an_http_tool_with_an_odd_ipv4_spelling_is_refused_at_save(api_a, spelling, private) -> None:
    with override_settings(OUTBOUND_ALLOW_PRIVATE_TARGETS=private):
        response = api_a.post("/v2/tools", {**TOOL, "url": f"https://{spelling}/x"}, format="json")
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "tool_url_refused" and error["details"]["url"] == [outbound.ODD_IPV4]
    assert not HttpTool.objects.exists()


@pytest.mark.parametrize("private", [False, True], ids=["production", "development"])
@pytest.mark.parametrize("spelling", list(ODD_SPELLINGS))
def test_a_webhook_with_an_odd_ipv4_spelling_is_refused_at_save(tenant_a, spelling, private) -> None:
    with override_settings(OUTBOUND_ALLOW_PRIVATE_TARGETS=private), pytest.raises(EndpointUrlRefused) as refused:
        endpoint_create(tenant=tenant_a, url=f"https://{spelling}/hook", event_types=["lead.created"])
    assert refused.value.details == {"url": [outbound.ODD_IPV4]}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("spelling", ["127.1", "0x7f.1", "2130706433", "0177.0.0.1"])
def test_the_webhooks_api_refuses_them_too(api_a, settings, spelling) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    response = api_a.post("/v2/webhooks", {"url": f"https://{spelling}/hook", "event_types": ["lead.created"]},
                          format="json")
    assert response.status_code == 400 and "url" in error_of(response)["details"]
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("url", ["https://praxis.example/x", "https://8.8.8.8/x", "https://1.2.3.4:8443/x",
                                 "https://[2a00:1450:4001:80b::200e]/x", "https://xn--mller-kva.example/x",
                                 "https://api.example.com./x", "https://1password.example/x",
                                 "https://0x7f.example/x"])
def test_names_and_public_addresses_written_as_addresses_are_admitted(settings, url) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    assert outbound.url_admit(url, refused=Refused) == url


@pytest.mark.parametrize("url", [
    "http://praxis.example/x", "ftp://praxis.example/x", "https:///x", "https://user:pw@praxis.example/x",
    "https://@praxis.example/x", "https://127.0.0.1/x", "https://localhost/x", "https://LOCALHOST./x",
    "https://api.localhost/x", "https://10.0.0.5/x", "https://[::1]/x", "https://[::ffff:7f00:1]/x",
    "https://[fe80::1%25eth0]/x", "https://999.1.1.1/x", "https://example.123/x",
])
def test_the_rule_refuses_in_production(settings, url) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(Refused) as refused:
        outbound.url_admit(url, refused=Refused)
    assert list(refused.value.details) == ["url"]


@pytest.mark.parametrize("url", [None, 7, "", "x" * 2001, "https://praxis.example:99999/x", "https://[::1/x",
                                 "https://[not-an-address]/x"])
def test_what_is_no_url_is_a_validation_error(url) -> None:
    with pytest.raises(ValidationFailed) as failed:
        outbound.url_admit(url, refused=Refused)
    assert list(failed.value.details) == ["url"]


def test_development_admits_http_on_loopback_and_private_addresses_only(settings) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = True
    for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "https://10.0.0.5/x",
                "https://192.168.1.1/x"):
        assert outbound.url_admit(url, refused=Refused) == url
    for url in ("http://10.0.0.5/x", "http://praxis.example/x"):
        with pytest.raises(Refused):
            outbound.url_admit(url, refused=Refused)
