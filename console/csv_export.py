"""The one CSV writer of the project: every CSV the console hands out is written here, so
no cell of it runs as a formula in a spreadsheet program (CSV injection, OWASP).

A text cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return (or the
full-width `＝ ＋ － ＠`, which some spreadsheet programs read as their ASCII twins) is
written with a leading apostrophe: `=HYPERLINK(…)` becomes `'=HYPERLINK(…)`, and an
E.164 number `+4930901820` becomes `'+4930901820`. A spreadsheet shows the apostrophe
and then the number exactly as stored (without it, `+4930901820` would be evaluated to
the number 4930901820 and lose its plus); a program reading the file drops one leading
`'` before one of those characters to get the stored value back. Numbers, dates and
booleans are not text and stay as they are (`-3` seconds is a number, not a formula).
Every cell is quoted, so a value cannot break out of its cell with `"` or `;`."""
import csv

# What starts a formula (OWASP's list, and the full-width forms of its four signs).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# Spreadsheet programs read UTF-8 only with the byte-order mark.
BOM = "\ufeff"


def neutralise(value):
    """The cell for `value`: None as empty, text starting a formula behind an apostrophe."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class _Echo:
    def write(self, value):
        return value


class CsvLines:
    """Turns rows into CSV lines (strings) for a streamed answer, each cell neutralised."""

    def __init__(self):
        self._writer = csv.writer(_Echo(), quoting=csv.QUOTE_ALL)

    def line(self, cells):
        return self._writer.writerow([neutralise(cell) for cell in cells])


def csv_stream(header, rows):
    """The BOM, the header line and one line per row (an iterable of cell sequences)."""
    lines = CsvLines()
    yield BOM
    yield lines.line(header)
    for cells in rows:
        yield lines.line(cells)
