"""The text of a PDF's pages, extracted in a process of its own (imports no Django).

Run by knowledge_app/readers.py as `python pdf_extract.py MAX_PAGES MAX_CHARS
MEMORY_MB CPU_SEC` with the PDF on standard input; prints one JSON object:
`{"pages": [text, …]}` or `{"error": reason, "message": …}`.

A PDF is a program of sorts: a page tree can claim a million pages or nest a
thousand levels deep, a 2 MB stream can inflate to gigabytes, a content stream can
hold millions of operators. pypdf bounds much of that itself (its Configuration,
tightened below); what is left is bounded here by the page count and the characters
extracted, and from outside: this process may use MEMORY_MB of memory and CPU_SEC
seconds of processor time, and the caller kills it after its wall-time deadline. So
a hostile PDF costs at most those, whatever it holds, and never the server process.
"""
import io
import json
import logging
import resource
import sys

REASONS = {
    "pdf_encrypted": "The PDF is encrypted. Upload it without a password.",
    "pdf_unreadable": "The file is not a readable PDF.",
    "too_many_pages": "The PDF has more pages than allowed.",
    "too_much_text": "The PDF holds more text than allowed.",
    "too_complex": "The PDF is too deeply nested or too large once decompressed.",
}
MB = 1024 * 1024
# What pypdf logged while reading around broken parts of the file.
_complaints: list[str] = []


class _Complaints(logging.Handler):
    def emit(self, record):
        if len(_complaints) < 100:
            _complaints.append(record.getMessage()[:200])


def _limits(memory_mb, cpu_sec):
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * MB, memory_mb * MB))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_sec, cpu_sec + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def extract(data, max_pages, max_chars):
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PdfReadError

    # Far below pypdf's defaults (75 MB per stream): a document of 2 MB holds text,
    # not images, and its streams inflate to a few megabytes at most.
    pypdf.overwrite_configuration(
        maximum_declared_stream_length=16 * MB, array_based_stream_maximum_output_length=16 * MB,
        zlib_maximum_output_length=16 * MB, lzw_maximum_output_length=16 * MB,
        run_length_maximum_output_length=16 * MB, brotli_maximum_output_length=16 * MB,
        jbig2_maximum_output_length=16 * MB, image_maximum_buffer_size=16 * MB,
        stream_decoding_work_maximum_length=64 * MB, page_tree_maximum_entries=max_pages * 4,
        page_tree_maximum_depth=32, page_tree_maximum_page_entries=max_pages * 64,
        outline_maximum_entries=10_000, outline_maximum_depth=32, jbig2dec_binary=None,
        # Operators and operands of one content stream: a dense page of text has some
        # thousands; a million is a bomb that keeps extraction busy for seconds.
        stream_parsing_work_maximum_count=200_000, xform_maximum_invocations_per_extraction=500,
    )
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            # Encrypted for permissions only, an empty user password opens it; else
            # (or a cipher that needs a package we do not ship) it stays closed.
            try:
                opened = reader.decrypt("")
            except Exception:
                return {"error": "pdf_encrypted"}
            if not opened:
                return {"error": "pdf_encrypted"}
        count = len(reader.pages)
        if count > max_pages:
            return {"error": "too_many_pages", "pages": count}
        pages, total = [], 0
        for page in reader.pages:
            # Read what text extraction would read, so that a stream over its limit or
            # resources nested too deep are an error here (extract_text swallows them).
            page.get("/Resources")
            contents = page.get_contents()
            if contents is not None:
                contents.get_data()
            text = page.extract_text() or ""
            total += len(text)
            if total > max_chars:
                return {"error": "too_much_text"}
            pages.append(text)
        if not any(page.strip() for page in pages) and _complaints:
            # pypdf read around broken objects (e.g. nested too deep) and found nothing.
            return {"error": "pdf_unreadable"}
        return {"pages": pages}
    except RecursionError:
        return {"error": "too_complex"}
    except MemoryError:
        return {"error": "too_complex"}
    except (FileNotDecryptedError, DependencyError):
        return {"error": "pdf_encrypted"}
    except LimitReachedError:
        return {"error": "too_complex"}
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, AssertionError,
            OSError, UnicodeError, ZeroDivisionError):
        return {"error": "pdf_unreadable"}
    except Exception as exc:  # pypdf's limits raise their own types (LimitReachedError, …)
        name = type(exc).__name__
        return {"error": "too_complex" if "Limit" in name else "pdf_unreadable"}


def main():
    max_pages, max_chars, memory_mb, cpu_sec = (int(value) for value in sys.argv[1:5])
    _limits(memory_mb, cpu_sec)
    logger = logging.getLogger("pypdf")
    logger.addHandler(_Complaints(logging.WARNING))
    logger.propagate = False
    sys.setrecursionlimit(2000)
    data = sys.stdin.buffer.read()
    result = extract(data, max_pages, max_chars)
    if "error" in result:
        result["message"] = REASONS[result["error"]]
    sys.stdout.write(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
