"""The committed German catalogue (.mo) holds every text of its source (.po): a text
added to the .po without compiling would silently stay English."""
import gettext
import re
from pathlib import Path

from django.conf import settings

FOLDER = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES"
ENTRY = re.compile(r'^(?:msgctxt "(?P<ctx>[^"]*)"\n)?msgid "(?P<id>(?:[^"\\]|\\.)+)"\nmsgstr "(?P<str>(?:[^"\\]|\\.)*)"$',
                   re.M)


def test_the_compiled_catalogue_matches_its_source():
    entries = list(ENTRY.finditer((FOLDER / "django.po").read_text()))
    assert len(entries) > 100
    with open(FOLDER / "django.mo", "rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)
    for entry in entries:
        msgid, msgstr = (entry["id"].replace('\\"', '"'), entry["str"].replace('\\"', '"'))
        got = catalogue.pgettext(entry["ctx"], msgid) if entry["ctx"] else catalogue.gettext(msgid)
        assert got == msgstr, msgid
