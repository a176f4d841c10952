"""Bodies and calls the lead tests share."""

GOOD_LEAD = {
    "tenant": "acme",
    "kind": "callback",
    "phone": "0171 2345678",
    "preferred_at": "tomorrow-am",
    "page_url": "https://acme.example/kontakt",
}


def post_lead(client, body=None, **headers):
    return client.post("/v2/public/leads", GOOD_LEAD if body is None else body, format="json", **headers)


def lead_with(**changes):
    body = dict(GOOD_LEAD)
    for name, value in changes.items():
        if value is None:
            body.pop(name, None)
        else:
            body[name] = value
    return body
