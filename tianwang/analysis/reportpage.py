"""The crawl report as one static HTML page: figures, tables and PNG plots inline (data:
URIs), nothing fetched from anywhere. Plots by matplotlib's Agg backend (no display).

Each plot is an <img class="plot"> with an id; a small script marks the page with how many
plots the browser decoded (data-plots-loaded on <body>), which the browser test reads.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
from collections import Counter

from tianwang.analysis.crawlreport import CrawlReport

TOP = 15  # bars in a "largest" plot


def render(report: CrawlReport, title: str) -> str:
    plots = [
        ("over-time", "Pages and bytes over time", _over_time(report)),
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
        ("refusals", "Refused and failed, by reason", _bars(
            Counter({**{f"refused: {k}": v for k, v in report.refusals.items()},
                     **{f"failed: {k}": v for k, v in report.failures.items()}}), "requests")),
        ("dedup", "Stored and not stored as duplicates (MD5)", _bars(
            Counter({"stored": report.pages, "duplicates": report.duplicates}), "pages",
            ordered=True)),
    ]
    figures = [("pages stored", f"{report.pages:,}"), ("hosts", f"{len(report.hosts):,}"),
               ("body bytes", f"{report.body_bytes:,}"),
               ("duplicates not stored", f"{report.duplicates:,}"),
               ("damaged records skipped", f"{report.damaged:,}"),
               ("crawl processes with stats", f"{report.stats_files:,}")]
    return _page(title, figures, plots, report)


def _page(title: str, figures: list[tuple[str, str]], plots: list[tuple[str, str, str]],
          report: CrawlReport) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td id='fig-{_slug(k)}'>{v}</td></tr>"
                   for k, v in figures)
    cells = "".join(
        f"<figure><figcaption>{html.escape(caption)}</figcaption>"
        f"<img class='plot' id='plot-{name}' alt='{html.escape(caption)}' "
        f"src='data:image/png;base64,{png}'></figure>" for name, caption, png in plots)
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
    return "-".join(text.split())


def _top(counts: Counter[str]) -> Counter[str]:
    return Counter(dict(counts.most_common(TOP)))


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot, *pyplot.subplots(figsize=(5.6, 3.2), dpi=100)


def _png(pyplot, fig) -> str:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    pyplot.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _bars(counts: Counter, unit: str, ordered: bool = False) -> str:
    pyplot, fig, ax = _figure()
    items = list(counts.items()) if ordered else counts.most_common()
    if items:
        labels, values = zip(*items, strict=True)
        ax.barh([str(label) for label in labels][::-1], list(values)[::-1], color="#3b7dd8")
        ax.tick_params(axis="y", labelsize=7)
    else:
        ax.text(0.5, 0.5, "none recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(unit)
    return _png(pyplot, fig)


def _over_time(report: CrawlReport) -> str:
    pyplot, fig, ax = _figure()
    if report.times:
        start = report.times[0][0]
        span = report.times[-1][0] - start
        unit, seconds = ("hours", 3600) if span > 2 * 86400 else (
            ("minutes", 60) if span > 600 else ("seconds", 1))
        minutes = [(moment - start) / seconds for moment, _ in report.times]
        pages = list(range(1, len(minutes) + 1))
        total, megabytes = 0, []
        for _moment, size in report.times:
            total += size
            megabytes.append(total / 1e6)
        ax.plot(minutes, pages, color="#3b7dd8", label="pages")
        ax.set_ylabel("pages stored")
        other = ax.twinx()
        other.plot(minutes, megabytes, color="#d8603b", label="MB")
        other.set_ylabel("MB of bodies")
        began = datetime.datetime.fromtimestamp(start, datetime.UTC)
        ax.set_xlabel(f"{unit} from {began:%Y-%m-%d %H:%M:%S} UTC")
    else:
        ax.text(0.5, 0.5, "no dated record", ha="center", va="center", transform=ax.transAxes)
    return _png(pyplot, fig)
