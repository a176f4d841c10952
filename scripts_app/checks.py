from django.core import checks

from scripts_app.analysis.lexicon import DEFAULT_WORDLIST, INSTALL_HINT
from scripts_app.catalog import CatalogError, catalog


@checks.register()
def scripts_ready(app_configs, **kwargs):
    """The `umlaute` rule needs the German word list; the API needs a valid catalog."""
    problems = []
    try:
        open(DEFAULT_WORDLIST, "rb").close()
    except OSError:
        problems.append(checks.Error(f"German word list {DEFAULT_WORDLIST} is missing.", hint=INSTALL_HINT,
                                     id="scripts_app.E001"))
    try:
        catalog()
    except (OSError, ValueError, CatalogError) as exc:
        problems.append(checks.Error(f"The touchpoint catalog is broken: {exc}", id="scripts_app.E002"))
    return problems
