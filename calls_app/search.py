"""Search over calls for the console: by number in any format, else by transcript
words (PostgreSQL's full-text search with the German configuration, so `Termin`
also finds `Termine`; a plain substring match on other databases)."""
from django.db import connection

from calls_app.models import TranscriptEntry
from console.phone import search_digits

TEXT_SEARCH_CONFIG = "german"


def transcript_matches(term):
    """The ids of calls whose transcript matches `term` (a subquery)."""
    entries = TranscriptEntry.objects.all()
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        entries = entries.annotate(document=SearchVector("text", config=TEXT_SEARCH_CONFIG)).filter(
            document=SearchQuery(term, config=TEXT_SEARCH_CONFIG, search_type="websearch"))
    else:
        entries = entries.filter(text__icontains=term)
    return entries.values("call_id")


def calls_search(calls, term):
    """`calls` narrowed to those whose number contains the typed digits, or whose
    transcript matches `term`."""
    term = term.strip()
    if not term:
        return calls
    digits = search_digits(term)
    if digits:
        return calls.filter(from_e164__contains=digits) | calls.filter(to_e164__contains=digits)
    return calls.filter(pk__in=transcript_matches(term))

