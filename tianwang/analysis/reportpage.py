"""The crawl report as one static HTML page: figures, tables and PNG plots inline (data:
URIs), nothing fetched from anywhere. Plots by matplotlib's Agg backend (no display).

Each plot is an <img class="plot"> with an id and, in data-legend, the entries of the
legend drawn on it; a small script marks the page with how many plots the browser decoded
(data-plots-loaded on <body>), which the browser test reads. The labels are the crawl log's
(tianwang/outcome.py): "robots.txt", "kept N already stored". A crawl of several sessions
(runs) has a line per session in the plots over time and a row per session in its table.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
from collections import Counter

from tianwang.analysis.crawlreport import CrawlReport, Session

TOP = 15  # bars in a "largest" plot
COLOURS = ("#3b7dd8", "#d8603b", "#3ba55d", "#9b59b6", "#c9a227", "#17a2b8")
Plot = tuple[str, list[str]]  # (PNG in base64, the legend's entries)


def render(report: CrawlReport, title: str) -> str:
    plots = [
        ("over-time", "Pages stored over time, by session",
         _over_time(report, lambda _size: 1, "pages stored")),
        ("bytes-over-time", "Bytes stored over time, by session",
         _over_time(report, lambda size: size / 1e6, "MB of bodies stored")),
        ("status", "Status codes (stored pages; all responses when stats are kept)",
         _bars(report.fetched_statuses or report.statuses, "responses")),
        ("media-types", "Media types stored", _bars(report.media_types, "pages")),
        ("hosts", f"Largest hosts (top {TOP}, pages)", _bars(_top(report.hosts), "pages")),
        ("slowest-hosts", f"Slowest hosts (top {TOP}, mean download latency, s)",
         _bars(Counter(dict(report.slowest_hosts(TOP))), "seconds", ordered=True)),
        ("refused-hosts", f"Most refused hosts (top {TOP})",
         _bars(_top(report.host_refused), "requests refused")),
        ("depths", "Directory depth of the urls stored", _bars(
            Counter({str(k): v for k, v in sorted(report.depths.items())}), "pages", ordered=True)),
        ("refusals", "Refused and failed, by reason (as the log names them)", _bars(
            Counter({**{f"{k} (refused)": v for k, v in report.refusals.items()},
                     **{f"{k} (failed)": v for k, v in report.failures.items()}}), "requests",
            series={"refused": [f"{k} (refused)" for k in report.refusals],
                    "failed": [f"{k} (failed)" for k in report.failures]})),
        ("dedup", "Pages stored, and kept already stored (as the log says)", _bars(
            Counter({"stored": report.pages, **{f"kept already stored: {how}": n for how, n
                                                in report.kept_before.items()}}),
            "pages", ordered=True,
            series={"stored": ["stored"], "kept already stored": [
                f"kept already stored: {how}" for how in report.kept_before]})),
    ]
    figures = [("pages stored", f"{report.pages:,}"), ("hosts", f"{len(report.hosts):,}"),
               ("body bytes", f"{report.body_bytes:,}"),
               ("kept already stored", f"{sum(report.kept_before.values()):,}"),
               ("other urls of a body stored (mirrors.tsv)", f"{report.duplicates:,}"),
               ("damaged records skipped", f"{report.damaged:,}"),
               ("sessions", f"{len(report.sessions):,}"),
               ("crawl processes with stats", f"{report.stats_files:,}")]
    return _page(title, figures, plots, report)


def _page(title: str, figures: list[tuple[str, str]], plots: list[tuple[str, str, Plot]],
          report: CrawlReport) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td id='fig-{_slug(k)}'>{v}</td></tr>"
                   for k, v in figures)
    cells = "".join(
        f"<figure><figcaption>{html.escape(caption)}</figcaption>"
        f"<img class='plot' id='plot-{name}' alt='{html.escape(caption)}' "
        f"data-legend='{html.escape(chr(10).join(legend))}' "
        f"src='data:image/png;base64,{png}'></figure>" for name, caption, (png, legend) in plots)
    reasons = "".join(
        f"<tr><td>{html.escape(reason)}</td><td>{kind}</td><td>{n:,}</td></tr>"
        for kind, counts in (("refused", report.refusals), ("failed", report.failures))
        for reason, n in counts.most_common())
    sessions = "".join(
        f"<tr><td>{number}</td><td>{_when(session.started)}</td>"
        f"<td>{_when(session.finished)}</td><td>{session.processes}</td>"
        f"<td>{html.escape(session.line)}</td></tr>"
        for number, session in enumerate(report.sessions, 1))
    hosts = "".join(f"<tr><td>{html.escape(h)}</td><td>{n:,}</td><td>{report.host_bytes[h]:,}"
                    f"</td><td>{report.mirrored_hosts.get(h, 0):,}</td></tr>"
                    for h, n in report.hosts.most_common(TOP))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 14px sans-serif; margin: 16px; color: #222; background: #fff; }}
table {{ border-collapse: collapse; margin-bottom: 16px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
.plots {{ display: grid; grid-template-columns: repeat(2, 560px); gap: 12px; }}
figure {{ margin: 0; }} img.plot {{ width: 560px; height: 320px; display: block; }}
</style></head>
<body data-plots="{len(plots)}">
<h1>{html.escape(title)}</h1>
<table id="figures">{rows}</table>
<div class="plots">{cells}</div>
<h2>Sessions</h2>
<p>Each run of the crawl (a JOBDIR resumed, another run into this directory) and the line its
log closed with.</p>
<table id="sessions">
<tr><th>session</th><th>started</th><th>ended</th><th>processes</th><th>closing line</th></tr>
{sessions}</table>
<h2>Refused and failed, by reason</h2>
<table id="reasons">
<tr><th>reason</th><th>what</th><th>requests</th></tr>{reasons}</table>
<h2>Largest hosts</h2>
<table id="hosts">
<tr><th>host</th><th>pages</th><th>bytes</th><th>duplicates</th></tr>{hosts}</table>
<script>
window.addEventListener("load", function () {{
  var plots = document.querySelectorAll("img.plot"), loaded = 0;
  plots.forEach(function (img) {{
    if (img.complete && img.naturalWidth > 0) loaded++;
    var r = img.getBoundingClientRect();
    img.setAttribute("data-rect", [r.left, r.top, r.width, r.height].map(Math.round).join(","));
  }});
  document.body.setAttribute("data-plots-loaded", loaded);
}});
</script>
</body></html>
"""


def _slug(text: str) -> str:
    return "-".join(text.replace("(", "").replace(")", "").replace(".", "").split())


def _when(moment: float | None) -> str:
    if moment is None:
        return "?"
    return f"{datetime.datetime.fromtimestamp(moment, datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"


def _top(counts: Counter[str]) -> Counter[str]:
    return Counter(dict(counts.most_common(TOP)))


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot, *pyplot.subplots(figsize=(5.6, 3.2), dpi=100)


def _png(pyplot, fig, ax) -> Plot:
    legend = ax.get_legend()
    entries = [text.get_text() for text in legend.get_texts()] if legend is not None else []
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    pyplot.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii"), entries


def _bars(counts: Counter, unit: str, ordered: bool = False,
          series: dict[str, list[str]] | None = None) -> Plot:
    """Horizontal bars, largest first (or in the order given); `series` colours the bars of
    each named group alike and puts the groups in a legend."""
    pyplot, fig, ax = _figure()
    items = list(counts.items()) if ordered else counts.most_common()
    if items:
        labels, values = zip(*items, strict=True)
        colour_of = {label: COLOURS[i % len(COLOURS)]
                     for i, members in enumerate((series or {}).values()) for label in members}
        bars = ax.barh([str(label) for label in labels][::-1], list(values)[::-1],
                       color=[colour_of.get(label, COLOURS[0]) for label in labels][::-1])
        ax.tick_params(axis="y", labelsize=7)
        if series:
            shown = [(name, members) for name, members in series.items()
                     if any(label in members for label in labels)]
            handles = [bars[len(labels) - 1 - labels.index(members[0])]
                       for _name, members in shown]
            ax.legend(handles, [name for name, _members in shown], fontsize=7)
    else:
        ax.text(0.5, 0.5, "none recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(unit)
    return _png(pyplot, fig, ax)


def _over_time(report: CrawlReport, amount, label: str) -> Plot:
    """A line per session, each from its own start to its end: the running total of
    amount(size) over the records stored in it (flat for a session that stored nothing), in
    seconds, minutes or hours as the longest session asks."""
    pyplot, fig, ax = _figure()
    runs = [(f"session {number}", session) for number, session
            in enumerate(report.sessions, 1) if session.started is not None or session.times]
    if not runs and report.times:  # no stats files: the records alone
        runs = [("all records", Session(None, None, 0, "", 0, 0, report.times))]
    if runs:
        lines = [(name, _running_total(session, amount)) for name, session in runs]
        span = max(xs[-1] for _name, (xs, _ys, _start) in lines)
        unit, seconds = ("hours", 3600) if span > 2 * 86400 else (
            ("minutes", 60) if span > 600 else ("seconds", 1))
        for index, (name, (xs, ys, start)) in enumerate(lines):
            began = datetime.datetime.fromtimestamp(start, datetime.UTC)
            ax.plot([x / seconds for x in xs], ys, color=COLOURS[index % len(COLOURS)],
                    label=f"{name}: from {began:%Y-%m-%d %H:%M} UTC")
        ax.set_xlabel(f"{unit} from the session's start")
        ax.set_ylabel(label)
        ax.legend(fontsize=7, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no dated record", ha="center", va="center", transform=ax.transAxes)
    return _png(pyplot, fig, ax)


def _running_total(session: Session, amount) -> tuple[list[float], list[float], float]:
    """(seconds from the start, running total) from the session's start to its end, and
    its start (POSIX time)."""
    times = session.times
    start = session.started if session.started is not None else times[0][0]
    xs, ys, total = [0.0], [0.0], 0.0
    for moment, size in times:
        total += amount(size)
        xs.append(max(moment - start, 0.0))
        ys.append(total)
    if session.finished is not None and session.finished - start > xs[-1]:
        xs.append(session.finished - start)
        ys.append(total)
    return xs, ys, start
