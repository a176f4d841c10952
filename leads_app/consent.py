"""The consent sentences a lead form may show, by version.

A lead keeps the version of the sentence its visitor saw (`consent_version`), so the
tenant can show later what the caller agreed to (docs/privacy.md). A changed
sentence is a new version: add it here, never reword an existing one — the widget's
test checks that `callback.js` shows exactly the text of the version it sends.
"""
import re

VERSION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")

WIDGET_CONSENT_TEXTS = {
    "callback-de-1": (
        "Mit dem Absenden willigen Sie ein, dass wir Sie unter dieser Nummer zu Ihrer Anfrage "
        "zurückrufen. Ihre Nummer wird nur dafür gespeichert."
    ),
}
# The version the widget (`leads_app/widget/callback.js`) sends.
WIDGET_CONSENT_VERSION = "callback-de-1"
