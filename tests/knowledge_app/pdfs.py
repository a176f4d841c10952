"""PDFs written byte by byte for the tests: real ones with text, and hostile ones."""
import zlib


def assemble(objects, root=1):
    """A PDF of `objects` (bodies as bytes, numbered from 1) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def _escaped(line):
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")


def stream(data, *, compressed=False, extra=b""):
    if compressed:
        data = zlib.compress(data)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def text_pdf(pages):
    """A PDF whose pages hold the given texts (lines split at `\\n`), in Helvetica."""
    count = len(pages)
    # 1 catalog, 2 pages, 3 font, then per page: page object, content stream.
    kids = b" ".join(b"%d 0 R" % (4 + 2 * index) for index in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    for index, text in enumerate(pages):
        lines = b"".join(b"(%s) Tj T* " % _escaped(line) for line in text.split("\n"))
        content = b"BT /F1 11 Tf 14 TL 56 780 Td " + lines + b"ET"
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % (5 + 2 * index))
        objects.append(stream(content, compressed=True))
    return assemble(objects)


def many_pages_pdf(count):
    """`count` empty pages (a page-count bomb is just more of them)."""
    kids = b" ".join(b"%d 0 R" % (3 + index) for index in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count)]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>"] * count
    return assemble(objects)


def _one_page(content_object, resources=b"<< >>"):
    return [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources %s /Contents 4 0 R >>" % resources,
            content_object]


def inflating_pdf(megabytes):
    """One page whose content stream is 1.5 MB of zlib that inflates to `megabytes` MB."""
    packer = zlib.compressobj(9)
    chunk = b" " * (1024 * 1024)
    data = b"".join(packer.compress(chunk) for _ in range(megabytes)) + packer.flush()
    return assemble(_one_page(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"))


def nested_pdf(depth):
    """One page whose resources nest `depth` arrays deep."""
    return assemble(_one_page(stream(b"BT ET"), resources=b"<< /X " + b"[" * depth + b"]" * depth + b" >>"))


def busy_pdf(operators):
    """One page whose content stream holds `operators` text operators (a few MB inflated)."""
    content = b"BT /F1 1 Tf " + b"(a) Tj " * operators + b"ET"
    objects = _one_page(stream(content, compressed=True),
                        resources=b"<< /Font << /F1 5 0 R >> >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return assemble(objects)
