"""campaigns_app's German catalogue (campaigns_app/locale, beside the project's): the
compiled .mo holds every text of its .po, and every label of the app's models is in it."""
import gettext
from pathlib import Path

from django.apps import apps
from django.utils import translation

from tests.console.test_locale_files import ENTRY

FOLDER = Path(__file__).resolve().parents[2] / "campaigns_app" / "locale" / "de" / "LC_MESSAGES"


def test_the_compiled_catalogue_matches_its_source():
    entries = list(ENTRY.finditer((FOLDER / "django.po").read_text()))
    assert len(entries) > 90
    with open(FOLDER / "django.mo", "rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)
    for entry in entries:
        msgid, msgstr = (entry["id"].replace('\\"', '"'), entry["str"].replace('\\"', '"'))
        got = catalogue.pgettext(entry["ctx"], msgid) if entry["ctx"] else catalogue.gettext(msgid)
        assert got == msgstr, msgid


def test_every_field_and_choice_of_the_campaign_models_is_german():
    untranslated = []
    with translation.override("de"):
        for model in apps.get_app_config("campaigns_app").get_models():
            texts = [model._meta.verbose_name, model._meta.verbose_name_plural]
            for field in model._meta.get_fields():
                if not field.concrete:
                    continue
                texts.append(field.verbose_name)
                texts += [label for _, label in field.choices or ()]
            with translation.override("en"):
                english = [str(text) for text in texts]
            untranslated += [f"{model.__name__}: {en}" for en, de in zip(english, map(str, texts), strict=True)
                             if en == de and en not in ("ID", "id", "Name", "Status", "Service")]
    assert untranslated == []
