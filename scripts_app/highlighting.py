"""HTML of a script with its findings marked, for the admin."""
from django.utils.html import format_html, format_html_join


def highlighted(text, findings):
    """The text with each finding's excerpt in a <mark> (message as its title);
    overlapping findings (e.g. `dauer`, which spans the whole text) are listed, not marked."""
    pieces, position = [], 0
    for finding in sorted(findings, key=lambda f: f["offset"]):
        start, end = finding["offset"], finding["offset"] + finding["length"]
        if finding["rule"] == "dauer" or start < position:
            continue
        pieces.append(format_html("{}", text[position:start]))
        pieces.append(format_html(
            '<mark class="script-finding script-{}" title="{}: {}">{}</mark>',
            finding["level"], finding["rule"], finding["message"], text[start:end],
        ))
        position = end
    pieces.append(format_html("{}", text[position:]))
    return format_html('<div class="script-text">{}</div>', format_html_join("", "{}", ((p,) for p in pieces)))


def findings_list(findings):
    if not findings:
        return format_html('<p class="script-clean">{}</p>', "Keine Hinweise: der Text ist sauber.")
    items = format_html_join(
        "", '<li class="script-{}"><strong>{}</strong> ({}, Zeile {}, Spalte {}): {}{}</li>',
        (
            (f["level"], f["rule"], f["level"], f["line"], f["column"], f["message"],
             format_html(" → „{}“", f["suggestion"]) if f["suggestion"] else "")
            for f in findings
        ),
    )
    return format_html('<ul class="script-findings">{}</ul>', items)


def analysis_html(text, analysis):
    """The highlighted text, its duration, what the voice will say where that differs
    from the text, and the list of findings."""
    spoken = analysis.get("spoken", text)
    return format_html(
        '{}<p class="script-meta">{} Wörter, etwa {} s gesprochen{}</p>{}{}',
        highlighted(text, analysis["findings"]),
        analysis["words"], analysis["durationSec"],
        format_html(", Variablen: {}", ", ".join(analysis["variables"])) if analysis["variables"] else "",
        format_html('<p class="script-spoken">Gesprochen: „{}“</p>', spoken) if spoken != text else "",
        findings_list(analysis["findings"]),
    )
