"""Charts as server-rendered SVG: no script, no chart library, nothing from another
origin, and nothing the admin's Content-Security-Policy stops (geometry and colour
are attributes or classes of the dashboard's style sheet, never `style=`)."""
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

WIDTH, HEIGHT, PAD = 600, 160, 20


def _scale(values, extra=0):
    top = max([*values, extra, 1])
    return (HEIGHT - PAD) / top


def usage_bar(*, used, reserved, cap, projection, label):
    """One horizontal bar: used, reserved and the projection to month end against the cap."""
    top = max(cap, used + reserved, projection, 1)
    width = WIDTH - 2

    def x(value):
        return round(value / top * width, 1)

    parts = [
        format_html('<rect class="bar-track" x="1" y="10" width="{}" height="28"/>', x(cap)),
        format_html('<rect class="bar-used" data-value="{}" x="1" y="10" width="{}" height="28"/>', used, x(used)),
        format_html('<rect class="bar-reserved" x="{}" y="10" width="{}" height="28"/>', x(used) + 1, x(reserved)),
        format_html('<line class="projection" x1="{0}" x2="{0}" y1="4" y2="44"/>', x(projection) + 1),
        format_html('<line class="cap" x1="{0}" x2="{0}" y1="0" y2="48"/>', x(cap) + 1),
    ]
    return format_html('<svg class="chart usage-bar" viewBox="0 0 {} 50" role="img" aria-label="{}">{}</svg>',
                       WIDTH, label, mark_safe("".join(parts)))


def day_columns(*, days, series, line=None, label, css_classes):
    """Stacked columns per day (series: lists of values in `days` order, one per
    class in `css_classes`), with an optional horizontal line (e.g. the cap's daily
    share). Each day is one `<g class="day">` holding its columns."""
    totals = [sum(values) for values in zip(*series, strict=True)] if series else []
    scale = _scale(totals, line or 0)
    step = WIDTH / max(len(days), 1)
    groups = []
    for index, day in enumerate(days):
        bottom = HEIGHT
        rects = []
        for values, css in zip(series, css_classes, strict=True):
            value = values[index]
            height = round(value * scale, 1)
            bottom -= height
            rects.append(format_html('<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
                                     css, round(index * step + 1, 1), round(bottom, 1), round(step - 2, 1), height,
                                     day.strftime("%d.%m."), value))
        groups.append(format_html('<g class="day" data-day="{}">{}</g>', day.isoformat(), mark_safe("".join(rects))))
    drawn_line = ""
    if line is not None:
        y = round(HEIGHT - line * scale, 1)
        drawn_line = format_html('<line class="share" x1="0" x2="{}" y1="{}" y2="{}"/>', WIDTH, y, y)
    return format_html('<svg class="chart columns" viewBox="0 0 {} {}" role="img" aria-label="{}">{}{}</svg>',
                       WIDTH, HEIGHT, label, mark_safe("".join(groups)), drawn_line)


def horizontal_bars(*, rows, label):
    """Labelled horizontal bars, one per (label, value)."""
    top = max([value for _name, value in rows] + [1])
    height = 22 * len(rows)
    bars = format_html_join("", '<g class="row"><text x="0" y="{}">{}</text>'
                                '<rect class="bar-used" x="130" y="{}" width="{}" height="14"/>'
                                '<text x="{}" y="{}">{}</text></g>',
                            ((22 * i + 14, name, 22 * i + 3, round(value / top * 400, 1),
                              round(value / top * 400, 1) + 136, 22 * i + 14, value)
                             for i, (name, value) in enumerate(rows)))
    return format_html('<svg class="chart bars" viewBox="0 0 {} {}" role="img" aria-label="{}">{}</svg>',
                       WIDTH, height, label, bars)


def cap_bars(*, rows, near, label):
    """One bar per tenant (rows: (name, used, cap, share)): the share of its cap used
    this month, the cap at a fixed mark (bars beyond it run to the edge), the `near`
    share dashed. A bar at or past `near` is `near-cap`, past the cap `over-cap`."""
    track, left = 360, 170
    top = max([1.25, *(min(share, 1.5) for _n, _u, _c, share in rows)])

    def x(share):
        return round(left + min(share, top) / top * track, 1)

    bars = format_html_join("", '<g class="row {}"><text x="0" y="{}">{}</text>'
                                '<rect class="bar-track" x="{}" y="{}" width="{}" height="14"/>'
                                '<rect class="bar-used" x="{}" y="{}" width="{}" height="14"/>'
                                '<text x="{}" y="{}">{} %</text></g>',
                            (("over-cap" if share > 1 else "near-cap" if share >= near else "",
                              22 * i + 14, name[:24], left, 22 * i + 3, x(1) - left, left, 22 * i + 3,
                              round(x(share) - left, 1), x(max(share, 1)) + 6, 22 * i + 14, round(share * 100))
                             for i, (name, _used, _cap, share) in enumerate(rows)))
    height = max(22 * len(rows), 22)
    marks = format_html('<line class="share" x1="{0}" x2="{0}" y1="0" y2="{1}"/>'
                        '<line class="cap" x1="{2}" x2="{2}" y1="0" y2="{1}"/>', x(near), height, x(1))
    return format_html('<svg class="chart cap-bars" viewBox="0 0 {} {}" role="img" aria-label="{}">{}{}</svg>',
                       WIDTH, height, label, bars, marks)
