import string
from functools import cache
from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import mark_safe

from evaluation.held_out import held_out_column_band
from evaluation.links import web_url
from evaluation.scorer import PART_LABELS
from evaluation.slices import MIN_TASKS
from evaluation.stats import Z95

register = template.Library()


@cache
def _url_pattern(name: str) -> str:
    """A URL with one integer argument, reversed once: "/systems/{}/". Rows of a large board
    would otherwise each pay for a full reverse()."""
    marker = 987654321
    return reverse(name, args=[marker]).replace(str(marker), "{}")


def url_for(name: str, pk: int) -> str:
    return _url_pattern(name).format(int(pk))


def web_link_html(value, text: str = "", css_class: str = "") -> str:
    """An address as HTML: a link (rel nofollow noopener) when it is an http(s) address
    (evaluation/links.py), else the value as plain text. Escaped here."""
    url = web_url(value)
    shown = escape(text or str(value or ""))
    if not url:
        return shown
    css = f' class="{escape(css_class)}"' if css_class else ""
    return f'<a{css} href="{escape(url)}" rel="nofollow noopener">{shown}</a>'


@register.filter
def web_link(value) -> str:
    """``{{ system.paper_url|web_link }}``: a link for an http(s) address, text otherwise."""
    return mark_safe(web_link_html(value))  # escaped by web_link_html


@register.filter
def pct(rate) -> str:
    """A rate {"count", "total", "pct"} as the paper prints it; a dash when undefined."""
    if not isinstance(rate, dict) or rate.get("pct") is None:
        return "–"
    return f"{rate['pct']:.2f}"


@register.filter
def seconds(value) -> str:
    return "–" if value is None else f"{value:.1f}"


@register.filter
def part(results, key: str):
    return (results or {}).get(key) or {}


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template; None when it is not there."""
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def yes_no_unknown(value) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


@register.filter
def fraction_pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


@register.filter
def kappa(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def metric_text(value, metric) -> str:
    """A metric's value as the benchmark prints it: its declared decimals (or significant
    digits, for a p-value); a dash when there is none."""
    if value is None:
        return "–"
    if metric.significant:
        return significant_text(value, metric.significant)
    return f"{value:.{metric.decimals}f}"


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def significant_text(value: float, digits: int = 2) -> str:
    """A p-value in significant digits: 0.031, 1, 7.6 × 10⁻⁶ (never 0.000)."""
    if value == 0 or value >= 0.001:
        text = f"{value:.{digits}g}"
        return "1" if value >= 1 else text
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"


def _parent(results, column):
    """The node holding a metric's value (its rate or mean node, or the mapping a plain number
    sits in)."""
    node = column._results(results)
    for part in column.metric.key.split(".")[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _units(metric, n) -> str:
    units = metric.units
    if n == 1 and units.endswith("s"):
        units = units[:-1]
    return f"{n} {units}"


@register.simple_tag
def board_cell(results, column, intervals=None) -> dict:
    """What one board cell shows: the number, its 95% interval text, and the hover text (with
    the n behind every interval)."""
    metric = column.metric
    value = column.value(results)
    text = metric_text(value, metric)
    if value is None:
        return {"text": text, "interval": "", "title": "no items" if column.kind == "rate" else ""}
    interval = intervals.get(column.key) if intervals is not None else column.interval(results)
    counts = ""
    node = metric.node(column._results(results))
    n = None
    if column.kind == "rate":
        rate = column.rate(results) or {}
        if isinstance(rate.get("count"), int):
            counts = f"{rate['count']}/{rate['total']} {metric.units}; "
            n = rate["total"]
    elif isinstance(node, dict):
        found = node.get("n", node.get("total"))
        n = found if isinstance(found, int) else None
        if n is not None:
            counts = f"n = {_units(metric, n)}; "
    if metric.detail:
        parent = _parent(results, column) or {}
        fields = [field for _, field, _, _ in string.Formatter().parse(metric.detail) if field]
        if all(parent.get(field) is not None for field in fields):
            counts = metric.detail.format(**parent) + "; "
    if metric.interval == "none":
        return {"text": text, "interval": "", "title": counts + metric.description}
    if interval is None:
        if n is None:
            why = "reported in the paper without counts: no interval"
        elif n < MIN_TASKS and column.kind != "rate":
            why = f"no interval from fewer than {MIN_TASKS} {metric.units}"
        else:
            why = "no interval"
        return {"text": text, "interval": "", "title": counts + why}
    span = f"{interval[0]:.{metric.decimals}f}–{interval[1]:.{metric.decimals}f}"
    if metric.interval == "wilson":
        method = "Wilson" if column.wilson_z == Z95 else f"Wilson (z = {column.wilson_z:g})"
    else:
        method = "bootstrap"
    title = f"{counts}95% {method} interval {span}{metric.unit}"
    if metric.interval == "wilson" and metric.nested_in:
        title += f", taking the {metric.units} as independent (they are nested in "
        title += f"{metric.nested_in})"
    return {"text": text, "interval": f"[{span}]", "title": title}


def _td(results, column, intervals) -> str:
    cell = board_cell(results, column, intervals)
    interval = f'<span class="ci"> {escape(cell["interval"])}</span>' if cell["interval"] else ""
    return f'<td title="{escape(cell["title"])}">{escape(cell["text"])}{interval}</td>'


def _badges(entry, judge_name: str) -> list[str]:
    badges = []
    if entry.verified:
        url = url_for("submission", entry.submission_id)
        badges.append(
            f'<a class="badge verified" href="{escape(url)}" '
            'title="Scored on Floorboard from the submitted bundle">scored here</a>'
        )
    if entry.staff_verified:
        badges.append(
            '<span class="badge staff" title="Checked by the benchmark&#x27;s staff">'
            "verified by staff</span>"
        )
    if entry.reported_in_paper:
        badges.append(
            f'<span class="badge reported" title="{escape(entry.reported_source)}">'
            "reported in paper</span>"
        )
    for label, title in entry.badges:
        badges.append(f'<span class="badge fact" title="{escape(title)}">{escape(label)}</span>')
    if entry.incomplete:
        badges.append(
            '<span class="badge incomplete" title="Some tasks were missing from the bundle">'
            "incomplete bundle</span>"
        )
    if entry.flagged:
        reason = escape(entry.flag_reason)
        badges.append(
            f'<span class="badge flagged" title="{reason}">flagged</span> '
            f'<span class="flag-reason">{reason}</span>'
        )
    if entry.private:
        hidden = "; hidden by staff" if entry.hidden else ""
        badges.append(
            f'<span class="badge private" title="Unpublished: seen only by its team{hidden}">'
            "private</span>"
        )
    if entry.failed_judgments:
        retrying = "; retried automatically shortly" if entry.retrying_failed else ""
        badges.append(
            f'<span class="badge incomplete" title="{entry.failed_judgments} judge call(s) '
            f'failed and count as wrong{retrying}">{entry.failed_judgments} failed '
            f"judgment{'s' if entry.failed_judgments != 1 else ''}</span>"
        )
    if entry.under_review:
        badges.append(
            '<span class="badge private" title="Others see this row as Anonymous (under review) '
            'until your team reveals it">anonymous to others</span>'
        )
    if entry.rescoring:
        badges.append(
            '<span class="badge rescoring" title="Being re-scored: these are the numbers until '
            'the new ones replace them">re-scoring</span>'
        )
    if entry.contamination == "yes":
        note = escape(entry.contamination_note or "disclosed by the submitter")
        badges.append(
            f'<span class="badge contamination" title="Saw the benchmark&#x27;s data in '
            f'training: {note}">saw test data</span>'
        )
    elif entry.contamination == "no":
        badges.append(
            '<span class="badge clean" title="Disclosed: did not see the benchmark&#x27;s data '
            'in training">no contamination</span>'
        )
    if entry.config_differs and entry.system_id:
        # Its system's page sets the runs' configurations out one by one.
        where = reverse("system", args=[entry.system_id]) + "#run-configs"
        badges.append(
            f'<a class="badge config" href="{where}" title="This system&#x27;s runs here used '
            'different configurations: see them on its page">configurations differ</a>'
        )
    if entry.older_scorer:
        parts = ", ".join(PART_LABELS[part] for part in entry.older_scorer)
        badges.append(
            f'<span class="badge older" title="Scored with {escape(parts)} than the current '
            'scorer: see the scorer changelog">older scorer</span>'
        )
    if entry.offline_judge:
        badges.append('<span class="badge offline">offline judge</span>')
    elif entry.verified:
        badges.append(
            f'<span class="badge judge" title="{escape(judge_name)}">'
            f"judge: {escape(entry.judge)}</span>"
        )
    return badges


def _links(entry) -> str:
    """The system's paper and code, where its owner (or the paper) gave them."""
    links = []
    for key, text in (("paper_url", "paper"), ("code_url", "code")):
        # Only a web address makes a link; anything else is left out of the row.
        url = web_url(entry.facets.get(key))
        if url:
            links.append(web_link_html(url, text, "ext"))
    return f' <span class="links">{" · ".join(links)}</span>' if links else ""


def _team(entry) -> str:
    """Who submitted the row: the team's name on this site (which no other team can take, as
    any team can declare any system name or organisation). Nothing on an anonymous row (its
    team is hidden like its system) or a paper's row."""
    if entry.anonymous or entry.reported_in_paper:
        return ""
    if not entry.team:
        return (
            '<span class="team" title="submitted by the site&#x27;s staff, with no team">'
            "team: site staff</span>"
        )
    return (
        '<span class="team" title="the team that submitted this row">'
        f"team: {escape(entry.team)}</span>"
    )


ORGANISATION_UNVERIFIED = "organisation as declared by the team, not verified"
ORGANISATION_FROM_PAPER = "organisation as the paper reports it, not verified"
ORGANISATION_VERIFIED = "organisation checked by the benchmark's staff"


def _organisation(entry) -> str:
    """The organisation a row claims, marked unverified unless staff verified the row."""
    organization = entry.facets.get("organization") or ""
    if not organization:
        return ""
    if entry.staff_verified:
        return f'<span title="{escape(ORGANISATION_VERIFIED)}">{escape(organization)}</span>'
    title = ORGANISATION_FROM_PAPER if entry.reported_in_paper else ORGANISATION_UNVERIFIED
    return (
        f'<span class="declared" title="{escape(title)}">{escape(organization)}</span> '
        f'<span class="unverified" title="{escape(title)}">(unverified)</span>'
    )


def _submitted(entry) -> str:
    if entry.created_at is None:
        return '<td class="date muted" title="reported in a paper">paper</td>'
    day = entry.created_at.date().isoformat()
    return f'<td class="date"><time datetime="{day}">{day}</time></td>'


def _rank_cell(entry, by_intervals: bool = False) -> str:
    """The rank, and under it (a line of its own, and words of its own for a screen reader) its
    plausible range: "1" above "certain", "1" above "1–3", never "1certain" or "11–3"."""
    if entry.rank is None:
        title = (
            "not ranked on a slice: no per-task outcomes"
            if entry.slice_unavailable
            else "this benchmark ranks no system: its rows are listed, not ranked"
        )
        if by_intervals:
            title = "not ranked by human-calibrated values: no calibrated value"
        return f'<td class="rank muted" title="{title}">–</td>'
    spread = ""
    if entry.rank_range:
        best, worst = entry.rank_range
        title = (
            f"plausible rank {best}–{worst}: {best - 1} row(s) significantly better, "
            "the rest as good or not significantly different (exact McNemar tests on the first "
            "rank key, p &lt; 0.05)"
        )
        if by_intervals:
            title = (
                f"plausible rank {best}–{worst}: {best - 1} row(s) whose calibrated 95% "
                "interval lies wholly above this one's, the rest overlapping or below"
            )
        text = f"{best}–{worst}" if best != worst else "certain"
        spread = (
            f'<span class="rank-range" title="{title}">'
            f'<span class="visually-hidden">, plausible rank </span>{text}</span>'
        )
    return f'<td class="rank"><span class="rank-number">{int(entry.rank)}</span>{spread}</td>'


def _calibrated_cells(entry, calibrated) -> str:
    """The human-calibrated view's cells of one row: the calibrated value with its interval
    (or how many more labels it needs), the judge's bias (judge − human) with its interval, and
    n of N units labelled."""
    if calibrated is None:
        return ""
    metric = calibrated.column.metric
    found = entry.calibrated.get(calibrated.column.key)
    if found is None:
        why = "no calibration study labelled this row"
        return f'<td class="calibrated muted" title="{why}">–</td>' * 3

    def span(low, high) -> str:
        if low is None or high is None:
            return ""
        # Numbers only: nothing to escape.
        text = f"{metric_text(low, metric)}–{metric_text(high, metric)}"
        return f' <span class="ci-cal">[{text}]</span>'

    if found.stale:
        value = (
            '<td class="calibrated muted stale" title="the judge scored this submission again '
            'after the calibration study sampled it: its labels calibrate the old verdicts">'
            "judge re-scored since</td>"
        )
    elif found.value is None:
        more = int(found.labels_needed)
        value = (
            f'<td class="calibrated needs-labels" title="too few units labelled for a '
            f'calibrated value">needs {more} more label{"s" if more != 1 else ""}</td>'
            if more
            else '<td class="calibrated muted">–</td>'
        )
    else:
        title = (
            f"human-calibrated {metric.label}: {metric_text(found.value, metric)}{metric.unit}, "
            f"95% interval; the judge says {metric_text(found.judge_value, metric)}{metric.unit}"
        )
        value = (
            f'<td class="calibrated" title="{escape(title)}">'
            f"{escape(metric_text(found.value, metric))}"
            f"{span(found.low, found.high)}</td>"
        )
    if found.bias is None:
        bias = '<td class="bias muted">–</td>'
    else:
        sign = "+" if found.bias > 0 else ""
        bias = (
            '<td class="bias" title="the judge&#x27;s estimated bias: judge minus human, with its '
            f'95% interval">{sign}{escape(metric_text(found.bias, metric))}'
            f"{span(found.bias_low, found.bias_high)}</td>"
        )
    n = (
        f'<td class="labelled" title="{int(found.labelled)} of {int(found.population)} '
        f'{escape(metric.units)} labelled by people">{int(found.labelled)}/'
        f"{int(found.population)}</td>"
    )
    return value + bias + n


def _pick(entry, name: str) -> str:
    """A box to tick two rows and compare them (the page's compare form)."""
    if entry.reported_in_paper:
        return ""
    return (
        f'<input type="checkbox" class="pick" name="pick" value="{int(entry.submission_id)}" '
        f'form="compare-form" aria-label="compare {name}"> '
    )


def _held_out_cells(entry, column) -> str:
    if column is None:
        return ""
    if entry.held_out_results is None:
        return '<td class="held-out muted">–</td><td class="rank-delta muted">–</td>'
    # A band, never the number: its counts would say how single held-out tasks were judged.
    band = held_out_column_band(column, entry.held_out_results, tasks=entry.held_out_tasks)
    text = f"{band}{column.metric.unit if column.metric.unit == '%' else ''}" if band else "–"
    shown = f"rank {entry.held_out_rank}" + (f", {text}" if band else "")
    delta = entry.rank_delta
    arrow = "" if not delta else ("▼" if delta > 0 else "▲")
    title = f"rank {entry.held_out_rank} on the held-out tasks, {entry.rank} on the public ones"
    band_title = "rank on the held-out tasks and the band its value falls in; staff see numbers"
    return (
        f'<td class="held-out" title="{band_title}">{escape(shown)}</td>'
        f'<td class="rank-delta" title="{title}">{arrow}{abs(delta) if delta else "±0"}</td>'
    )


@register.simple_tag
def board_row(entry, columns, judge_name: str = "", held_out_column=None, calibrated=None):
    """One board row, built in one go: rank, system with its badges and links, type,
    organisation, submission date, and every number (then, under the human-calibrated view of
    ``calibrated``, a column, that metric's calibrated value, the judge's bias and n). A board
    can hold hundreds of systems; template nodes per cell would dominate the page. Every value
    is escaped here (html.escape, quotes included)."""
    classes = ["reported" if entry.reported_in_paper else "verified"]
    classes += [name for name, on in (("private", entry.private), ("flagged", entry.flagged)) if on]
    name = escape(entry.system)
    if entry.system_id:
        shown = f'<a href="{escape(url_for("system", entry.system_id))}">{name}</a>'
    else:  # anonymous to this viewer: no page to go to
        shown = f'<span class="anonymous">{name}</span>'
    if entry.slice_unavailable:
        why = (
            "reported in a paper: no per-task outcomes, so no numbers on a slice"
            if entry.reported_in_paper
            else "this score's slice results are not stored yet"
        )
        cells = f'<td class="slice-unavailable muted" title="{why}">not available</td>' * len(
            columns
        )
    else:
        cells = "".join(_td(entry.results, c, entry.intervals) for c in columns)
    return mark_safe(  # every part escaped above or in its helper
        f'<tr class="{" ".join(classes)}" data-system="{name}" '
        f'data-submission="{int(entry.submission_id)}">'
        f"{_rank_cell(entry, by_intervals=bool(calibrated and calibrated.ranked))}"
        f'<td class="system">{_pick(entry, name)}{shown}{_links(entry)} '
        f"{' '.join(filter(None, [_team(entry), *_badges(entry, judge_name)]))}</td>"
        f'<td>{escape(entry.system_type_label)}</td><td class="org">{_organisation(entry)}</td>'
        f"{_submitted(entry)}{cells}{_calibrated_cells(entry, calibrated)}"
        f"{_held_out_cells(entry, held_out_column)}</tr>"
    )


@register.simple_tag
def calibrated_numbers(found, metric) -> dict:
    """One human-calibrated metric as the submission page words it (texts in the metric's unit
    and decimals; "" where there is no number)."""

    def text(value) -> str:
        return "" if value is None else f"{metric_text(value, metric)}{metric.unit}"

    def span(low, high) -> str:
        if low is None or high is None:
            return ""
        return f"[{metric_text(low, metric)}–{metric_text(high, metric)}]{metric.unit}"

    bias = "" if found.bias is None else ("+" if found.bias > 0 else "") + text(found.bias)
    return {
        "judge": text(found.judge_value),
        "value": text(found.value),
        "interval": span(found.low, found.high),
        "classical": text(found.classical_value),
        "classical_interval": span(found.classical_low, found.classical_high),
        "bias": bias,
        "bias_interval": span(found.bias_low, found.bias_high),
    }


@register.simple_tag
def task_cell(value, format: str = "text") -> str:
    """A value of the per-task table, formatted as its column declares."""
    if value is None or value == "":
        return "–"
    if format == "bool":
        return "yes" if value else "no"
    if format == "seconds":
        return f"{value:g}" if isinstance(value, int | float) else str(value)
    text = str(value)
    if format == "truncate" and len(text) > 110:
        return text[:109] + "…"
    return text
