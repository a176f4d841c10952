"""The one CSV reader of the project: tables uploaded from spreadsheet programs
(console/csv_export.py is the one writer).

What comes from Excel in Germany is often not UTF-8: "CSV (Trennzeichen-getrennt)"
is Windows-1252 with `;` between the cells, "CSV UTF-8" has a byte-order mark, and
"Unicode-Text" is UTF-16 with tabs. `csv_table` reads all of them: the encoding from
the BOM, else UTF-8 if the bytes are UTF-8, else Windows-1252; the separator (`;`,
`,` or a tab) from the header line. What is not a text table (a workbook, an image,
random bytes, NUL characters) is refused with a message that says what to send.
"""
import csv
import io

from console.errors import ApiError

SEPARATORS = (";", ",", "\t")
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
# Magic numbers of files that people upload instead of a CSV, and what to tell them.
_NOT_CSV = (
    (b"PK\x03\x04", "This is a workbook or another ZIP file (.xlsx, .ods): save it as CSV first."),
    (b"\xd0\xcf\x11\xe0", "This is an old Excel workbook (.xls): save it as CSV first."),
    (b"%PDF", "This is a PDF document, not a CSV table."),
    (b"\x89PNG", "This is an image, not a CSV table."),
    (b"\xff\xd8\xff", "This is an image, not a CSV table."),
)
# Longest cell: far beyond a name or a consent text, short of a file's worth of garbage.
MAX_CELL_CHARS = 10_000


class CsvUnreadable(ApiError):
    status, code = 400, "csv_unreadable"
    message = ("The upload is not a readable CSV table. Send a CSV file with a header line (UTF-8, or Windows-1252 "
               "as Excel saves it; separated by ';' or ',').")


def decode(data):
    """The text of an uploaded table, and the encoding it was read with."""
    for magic, hint in _NOT_CSV:
        if data.startswith(magic):
            raise CsvUnreadable(hint)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), encoding
            except UnicodeDecodeError:
                raise CsvUnreadable(f"The file starts with a {encoding} byte-order mark but is not {encoding} text.") \
                    from None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        raise CsvUnreadable("The file is neither UTF-8 nor Windows-1252 text.") from None


def _check_text(text):
    if "\x00" in text:
        raise CsvUnreadable("The file contains NUL characters: it is not a text table.")
    sample = text[:65536]
    controls = sum(1 for ch in sample if ch < " " and ch not in "\r\n\t")
    if sample and controls > len(sample) // 100:
        raise CsvUnreadable("The file is mostly not text (control characters): it is not a CSV table.")


def separator_of(header_line):
    """The separator the header line uses most (outside quotes): `;`, `,` or a tab."""
    counts = dict.fromkeys(SEPARATORS, 0)
    quoted = False
    for ch in header_line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(SEPARATORS, key=lambda sep: counts[sep])
    return best if counts[best] else ","


def csv_table(data, *, max_rows):
    """`(header, rows, encoding, separator)` of an uploaded table: `header` the first
    line's cells (stripped), `rows` a list of `(line number, cells)` for every further
    non-empty line (line 1 is the header). More than `max_rows` data lines, or a cell
    over MAX_CELL_CHARS, is refused (CsvUnreadable)."""
    text, encoding = decode(data)
    _check_text(text)
    first_line = text.lstrip("\ufeff").split("\n", 1)[0]
    separator = separator_of(first_line)
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), delimiter=separator)
    header, rows, line = None, [], 1
    try:
        for cells in reader:
            start, line = line, reader.line_num + 1
            if not any(cell.strip() for cell in cells):
                continue
            if any(len(cell) > MAX_CELL_CHARS for cell in cells):
                raise CsvUnreadable(f"Line {start} has a cell of more than {MAX_CELL_CHARS:,} characters.",
                                    details={"row": start})
            if header is None:
                header = [cell.strip() for cell in cells]
                continue
            if len(rows) >= max_rows:
                raise CsvUnreadable(f"The table has more than {max_rows:,} rows.", details={"maxRows": max_rows})
            rows.append((start, cells))
    except csv.Error as exc:
        raise CsvUnreadable(f"Line {line}: {exc}.", details={"row": line}) from None
    if header is None:
        raise CsvUnreadable("The file is empty: send a header line and one line per row.")
    return header, rows, encoding, separator
