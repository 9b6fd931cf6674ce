"""The report page's sections, each drawn from the session summary (and the corpus entries).

Apart from ``page`` (the page, its style and its files) so that each section reads as one piece;
everything inserted goes through ``esc`` or is a number formatted here (see ``page``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..corpus import CorpusError, Entry
from ..coverage import SHAPE_FEATURES, SPECIAL_NAMES
from ..oracles.tolerance import FACTOR, ULPS_PER_STEP
from . import svg
from .data import (
    bin_range,
    counts,
    histogram,
    mapping,
    number,
    sequence,
    series,
    strict,
    strings,
)
from .reproducer import tool_versions
from .svg import esc, fmt

DTYPES = ("float32", "float64", "int32")
STATUS_ORDER = {"regressed": 0, "open": 1, "fixed": 2}
HISTOGRAM_WIDTH = 326  # four backends side by side


# --------------------------------------------------------------------------------------------
# Reading the summary


def _timeline(summary: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for raw in sequence(summary.get("timeline")):
        item = mapping(raw)
        if "kind" not in item:
            continue
        items.append(
            {
                "seconds": max(number(item.get("seconds")), 0.0),
                "kind": str(item.get("kind")),
                "backends": [str(b) for b in sequence(item.get("backends"))],
                "oracle": str(item.get("oracle", "")),
                "path": str(item.get("path", "")),
                "regression": item.get("regression") is True,
                "new": item.get("new") is not False,
            }
        )
    return sorted(items, key=lambda i: i["seconds"])


# --------------------------------------------------------------------------------------------
# Pieces of HTML


def _heat(count: float, top: float) -> str:
    """A table cell for ``count``: blue by log count, a never-hit cell marked red."""
    if not count:
        return '<td class="z" title="never hit">0</td>'
    level = math.log1p(count) / math.log1p(max(top, 1))
    shade = int(235 - 150 * level)
    ink = "#fff" if level > 0.7 else "#123"
    return (
        f'<td style="background:rgb({shade},{shade + 10},255);color:{ink}" '
        f'title="{fmt(count)} cases">{esc(fmt(count))}</td>'
    )


def _cases(count: float) -> str:
    return f"{fmt(count)} case{'' if count == 1 else 's'}"


def _vertical(label: str) -> str:
    return f'<th class="v"><span>{esc(label)}</span></th>'


def _hit_line(family: dict[str, float], cells: list[str], what: str) -> str:
    hit = sum(1 for c in cells if family.get(c, 0) > 0)
    share = 100 * hit / len(cells) if cells else 0.0
    return f"<p class='note'>{what}: <b>{hit}</b> of {len(cells)} cells hit ({share:.0f}%)</p>"


def _op_matrix(ops: list[str], dtypes: list[str], backends: list[str], op_cells: dict) -> str:
    top = max(op_cells.values(), default=1)
    head_dtypes = "".join(
        f'<th colspan="{len(backends)}" class="group">{esc(d)}</th>' for d in dtypes
    )
    head_backends = "".join(_vertical(b) for _ in dtypes for b in backends)
    rows = []
    for op in ops:
        values = [op_cells.get(f"{op}|{d}|{b}", 0) for d in dtypes for b in backends]
        total = sum(values)
        name = f'<th class="op{" never" if not total else ""}">{esc(op)}</th>'
        cells = "".join(_heat(v, top) for v in values)
        rows.append(f"<tr>{name}{cells}<td class='total'>{esc(fmt(total))}</td></tr>")
    return (
        '<table class="matrix" id="op-matrix"><thead>'
        f'<tr><th rowspan="2">op</th>{head_dtypes}<th rowspan="2">all</th></tr>'
        f"<tr>{head_backends}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _special_matrix(ops: list[str], special: dict[str, float]) -> str:
    top = max(special.values(), default=1)
    head = "".join(_vertical(op) for op in ops)
    rows = []
    for value in SPECIAL_NAMES:
        cells = "".join(_heat(special.get(f"{value}|{op}", 0), top) for op in ops)
        rows.append(f'<tr><th class="op">{esc(value)}</th>{cells}</tr>')
    return (
        f'<table class="matrix" id="special-matrix"><thead><tr><th>value</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _bars(title: str, names: list[str], values: dict[str, float], table_id: str) -> str:
    """A table of counts with a bar each; a name never hit is marked red."""
    top = max(values.values(), default=0) or 1
    rows = []
    for name in names:
        count = values.get(name, 0)
        bar = (
            f'<span class="bar" style="width:{max(100 * count / top, 1):.1f}%"></span>'
            if count
            else '<span class="never">never</span>'
        )
        rows.append(
            f'<tr><th class="op">{esc(name)}</th><td class="num">{esc(fmt(count))}</td>'
            f'<td class="barcell">{bar}</td></tr>'
        )
    return (
        f'<table class="bars" id="{table_id}"><caption>{esc(title)}</caption>'
        f"{''.join(rows)}</table>"
    )


def _mlir_table(mlir: dict[str, float]) -> str:
    """One row per stage: the MLIR operations that reached it, each with its case count."""
    by_stage: dict[str, dict[str, float]] = {}
    for key, count in mlir.items():
        stage, _, op = key.partition("|")
        by_stage.setdefault(stage, {})[op] = count
    if not by_stage:
        return "<p class='note'>no MLIR operations were reported (no backend compiled)</p>"
    order = {s: i for i, s in enumerate(("optimized", "bufferized", "blas", "lowered"))}
    rows = []
    for stage in sorted(by_stage, key=lambda s: (order.get(s, len(order)), s)):
        ops = by_stage[stage]
        chips = " ".join(
            f"<span class='chip'>{esc(op)} <b>{esc(fmt(n))}</b></span>"
            for op, n in sorted(ops.items())
        )
        rows.append(
            f"<tr><th class='op'>{esc(stage)}</th><td class='num'>{len(ops)}</td>"
            f"<td>{chips}</td></tr>"
        )
    return (
        "<table class='list' id='mlir-table'><caption>MLIR operations reaching each stage "
        "(cases)</caption><tr><th>stage</th><th>ops</th><th>operation and cases</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _figure(plot: str, caption: str, width: int | None = None) -> str:
    style = f' style="width:{width}px"' if width else ""
    return f"<figure{style}>{plot}<figcaption>{caption}</figcaption></figure>"


# --------------------------------------------------------------------------------------------
# Sections


def _limitations(stats: dict[str, Any]) -> str:
    """The count of cases that hit a known limitation, with which ones (the most frequent
    first) on hover: a limitation no one expected is worth a look even when it is no finding."""
    hits = sorted(counts(stats.get("limitations")).items(), key=lambda kv: (-kv[1], kv[0]))
    text = f"known limitations hit: {fmt(number(stats.get('unsupported')))} cases"
    if not hits:
        return esc(text)
    listing = "\n".join(f"{fmt(n)} × {message}" for message, n in hits[:20])
    return f'<span title="{esc(listing)}">{esc(text)}</span>'


def header(summary: dict[str, Any], stats: dict[str, Any], entries: list[Any], hit: str) -> str:
    options = mapping(summary.get("options"))
    seconds = number(summary.get("seconds"))
    cases = number(stats.get("cases"))
    new = int(number(summary.get("entries_added")))  # unminimized entries of a stopped session too
    if "entries_added" not in summary:  # a summary from before the count
        new = sum(1 for f in sequence(summary.get("findings")) if mapping(f).get("new") is True)
    statuses: dict[str, int] = {}
    for e in entries:
        if isinstance(e, Entry):
            statuses[str(e.status)] = statuses.get(str(e.status), 0) + 1
    corpus = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "empty"
    backends = ", ".join(strings(options.get("backends"))) or "unknown"
    errors = len(sequence(summary.get("harness_errors")))
    regressions = len(sequence(summary.get("regressions")))
    figures = [
        ("session", f"{seconds:.0f} s"),
        ("cases", f"{fmt(cases)} ({cases / max(seconds, 1e-9):.2f}/s)" if seconds else fmt(cases)),
        ("backend runs", fmt(number(stats.get("backend_runs")))),
        ("findings judged", fmt(number(stats.get("findings")))),
        ("new corpus entries", str(new)),
        ("regressions", str(regressions)),
        ("coverage", hit),
        ("corpus", corpus),
    ]
    cards = "".join(
        f'<div class="card{" alarm" if (k == "regressions" and regressions) else ""}">'
        f"<div class='k'>{esc(k)}</div><div class='v'>{esc(v)}</div></div>"
        for k, v in figures
    )
    interrupted = summary.get("interrupted")
    notes = [
        f"seed {esc(options.get('seed'))}",
        f"{fmt(number(options.get('workers')))} worker(s)" if "workers" in options else "",
        f"backends {esc(backends)}",
        _limitations(stats),
        f"invalid programs rejected by both: {esc(fmt(number(stats.get('rejected_agreed'))))}",
        f"NumPy/JAX ambiguities (not compiler bugs): {esc(fmt(number(stats.get('ambiguities'))))}",
    ]
    if interrupted:
        notes.append(f"<b class='bad'>stopped by {esc(interrupted)}</b>")
    if errors:
        notes.append(f"<a class='bad' href='#details'>{errors} harness error(s)</a>")
    if not summary:
        notes.append("<b>no session summary: the page shows the corpus only</b>")
    nav = "".join(
        f'<a href="#{i}">{t}</a>'
        for i, t in (
            ("timeline", "findings over time"),
            ("throughput", "throughput"),
            ("coverage", "coverage"),
            ("values", "values"),
            ("mlir", "MLIR &amp; BLAS"),
            ("errors", "errors"),
            ("corpus", "corpus"),
            ("details", "details"),
        )
    )
    return (
        f'<header id="summary"><h1>Fuzzing report</h1><nav>{nav}</nav>'
        f'<div class="cards">{cards}</div>'
        f"<p class='note'>{' · '.join(n for n in notes if n)}</p></header>"
    )


def timeline_section(
    summary: dict[str, Any], stats: dict[str, Any], anchors: dict[str, str]
) -> str:
    items = _timeline(summary)
    seconds = number(summary.get("seconds"))
    rows = []
    for item in items:
        name = Path(item["path"]).name
        link = (
            f'<a href="#{anchors[name]}">{esc(name)}</a>'
            if name in anchors
            else f"<span class='note'>{esc(name) or '—'} (not in the corpus now)</span>"
        )
        kind = esc(item["kind"]) + (" <b class='bad'>regression</b>" if item["regression"] else "")
        if not item["new"]:
            kind += " <span class='note'>again: another driver saved it first</span>"
        rows.append(
            f"<tr><td class='num'>{item['seconds']:.1f}</td><td>{kind}</td>"
            f"<td>{esc(', '.join(item['backends']))}</td><td>{esc(item['oracle'])}</td>"
            f"<td>{link}</td></tr>"
        )
    table = (
        "<table class='list'><tr><th>found at (s)</th><th>kind</th><th>backends</th>"
        f"<th>oracle</th><th>corpus entry</th></tr>{''.join(rows)}</table>"
        if rows
        else ""
    )
    kinds = counts(stats.get("kinds"))
    judged = ", ".join(f"{esc(k)} {esc(fmt(v))}" for k, v in sorted(kinds.items())) or "none"
    first = items[0]["seconds"] if items else number(summary.get("first_finding_seconds"), -1)
    first_text = f"first finding after {first:.1f} s; " if first >= 0 else ""
    caption = (
        "Each failure not in the corpus when it was first seen, by kind, in seconds since the "
        "session started: a dot is a new corpus entry, a ring the same failure seen by another "
        "driver before it knew, a diamond a fixed entry failing again. "
        f"{first_text}failures judged this session, known ones included: {judged}."
    )
    return (
        '<section id="timeline"><h2>Findings over time</h2>'
        + _figure(svg.timeline(items, seconds), caption)
        + table
        + "</section>"
    )


def throughput_section(summary: dict[str, Any]) -> str:
    data = mapping(summary.get("throughput"))
    interval = number(data.get("interval"), 1.0)
    interval = interval if interval > 0 else 1.0
    runs = {str(b): series(s) for b, s in mapping(data.get("runs")).items()}
    seconds = number(summary.get("seconds"))
    plot = svg.throughput(interval, series(data.get("cases")), runs, seconds)
    caption = (
        "Cases per second (each with its derived tasks and minimization steps) and backend "
        "runs per second of each backend, over the session; each driver's reports are spread "
        "over the time since its previous report."
    )
    return '<section id="throughput"><h2>Throughput</h2>' + _figure(plot, caption) + "</section>"


def coverage_section(families: dict[str, dict[str, float]], cells: list[str]) -> str:
    op_cells = families.get("op", {})
    ops: set[str] = set()
    dtypes: list[str] = []
    backends: list[str] = []
    keys = [c.partition(":")[2] for c in cells if c.startswith("op:")] + list(op_cells)
    for key in keys:
        parts = key.split("|")
        if len(parts) != 3:
            continue
        ops.add(parts[0])
        if parts[1] not in dtypes:
            dtypes.append(parts[1])
        if parts[2] not in backends:
            backends.append(parts[2])
    dtypes.sort(key=lambda d: (DTYPES.index(d) if d in DTYPES else len(DTYPES), d))
    backends.sort()
    universe_ops = [c[3:] for c in cells if c.startswith("op:")]
    if not ops:
        matrix = "<p class='note'>no ops in this session's universe</p>"
    else:
        matrix = _op_matrix(sorted(ops), dtypes, backends, op_cells)
    known = set(cells)
    outside = sorted(k for k in op_cells if f"op:{k}" not in known)
    note = (
        f"<p class='note'>{len(outside)} cells hit outside the universe (other output dtypes) "
        "are shown too.</p>"
        if outside
        else ""
    )
    return (
        '<section id="coverage"><h2>Coverage: ops × dtypes × backends</h2>'
        + _hit_line(op_cells, universe_ops, "ops × output dtypes × backends")
        + "<p class='note'>Cases that ran each op of the primitive table, by the program's "
        "output dtype and backend. <span class='z'>&nbsp;0&nbsp;</span> marks a cell never hit; "
        "an op name in red never ran at all.</p>" + note + matrix + "</section>"
    )


def values_section(families: dict[str, dict[str, float]], cells: list[str]) -> str:
    special = families.get("special", {})
    special_cells = [c[8:] for c in cells if c.startswith("special:")]
    ops = sorted({k.split("|", 1)[1] for k in special_cells + list(special) if "|" in k})
    regimes = families.get("regime", {})
    regime_names = sorted({c[7:] for c in cells if c.startswith("regime:")} | set(regimes))
    shapes = families.get("shape", {})
    shape_names = list(SHAPE_FEATURES) + sorted(set(shapes) - set(SHAPE_FEATURES))
    laid_out = families.get("input-layout", {})
    layout_names = sorted({c[13:] for c in cells if c.startswith("input-layout:")} | set(laid_out))
    spelled = families.get("spelling", {})
    spelled_names = sorted({c[9:] for c in cells if c.startswith("spelling:")} | set(spelled))
    return (
        '<section id="values"><h2>Coverage: value regimes, special values, shapes</h2>'
        + '<div class="row">'
        + _bars("value regimes (cases)", regime_names, regimes, "regime-table")
        + _bars("shape and layout features (cases)", shape_names, shapes, "shape-table")
        + _bars("input layouts (cases)", layout_names, laid_out, "layout-table")
        + _bars(
            "ops in another spelling (cases; spelling|op)",
            spelled_names,
            spelled,
            "spelling-table",
        )
        + "</div><h3>Special values × ops</h3>"
        + _hit_line(special, special_cells, "special values × ops")
        + "<p class='note'>Cases whose inputs held the special value, by op of the program.</p>"
        + (_special_matrix(ops, special) if ops else "<p class='note'>no ops</p>")
        + "</section>"
    )


def mlir_section(families: dict[str, dict[str, float]], cells: list[str]) -> str:
    blas = families.get("blas", {})
    paths = sorted({c[5:] for c in cells if c.startswith("blas:")} | set(blas))
    blas_html = (
        _bars("matmuls by BLAS-stage path (cases)", paths, blas, "blas-table")
        if paths
        else "<p class='note'>no BLAS backend in this session</p>"
    )
    return (
        '<section id="mlir"><h2>Coverage: MLIR operations per stage, BLAS paths</h2>'
        f'{blas_html}{_mlir_table(families.get("mlir", {}))}</section>'
    )


def errors_section(stats: dict[str, Any]) -> str:
    error_bins = {str(k): histogram(v) for k, v in mapping(stats.get("error_bins")).items()}
    margin_bins = {str(k): histogram(v) for k, v in mapping(stats.get("margin_bins")).items()}
    worst = counts(stats.get("error_max"))
    by_dtype: dict[str, list[str]] = {}
    for key in sorted(set(error_bins) | set(margin_bins), key=lambda k: k.rpartition("|")):
        if error_bins.get(key) or margin_bins.get(key):
            backend, _, dtype = key.rpartition("|")
            by_dtype.setdefault(dtype, []).append(key)
    intro = (
        "<p class='note'>Each case's worst output error, per working dtype (rows) and backend. "
        "<b>Error in ULPs</b>: |backend − truth| in units of eps(dtype)·max|truth|; the dotted "
        f"line is the error model's floor for one operation at the largest |truth| "
        f"({fmt(ULPS_PER_STEP)} ULPs), a landmark only: the bound of a case grows with its depth "
        f"and with NumPy's and JAX's own errors ({fmt(FACTOR)}× theirs), so no single ULP line "
        "decides. <b>Error / allowed</b>: the decision itself, for the worst element, with the "
        "tolerance line at 1: red bins are findings. In both, the bar at 0 counts exact "
        "matches, the bar left of 10⁻⁴ smaller errors, '∞' errors of 10⁸ or more and "
        "non-finite ones; every non-empty bin is at least 2 px tall.</p>"
    )
    if not by_dtype:
        return (
            '<section id="errors"><h2>Error distributions</h2>'
            + intro
            + "<p class='note'>no outputs were compared</p></section>"
        )
    order = sorted(by_dtype, key=lambda d: (DTYPES.index(d) if d in DTYPES else len(DTYPES), d))
    parts = []
    for dtype in order:
        keys = by_dtype[dtype]
        ulp_row, margin_row = [], []
        for key in keys:
            backend = key.rpartition("|")[0] or key
            ulps, margins = error_bins.get(key), margin_bins.get(key)
            if ulps:
                total = sum(ulps)
                caption = (
                    f"<b>{esc(backend)}</b>: {_cases(total)}, "
                    f"{100 * ulps[0] / total:.0f}% exact, largest "
                    f"{esc(fmt(worst.get(key, 0.0)))} ULPs"
                )
                plot = svg.histogram(
                    ulps,
                    f"{backend}, {dtype}: error in ULPs",
                    "error in ULPs",
                    reference=(ULPS_PER_STEP, "floor, 1 op"),
                    kind="errors-ulps",
                    width=HISTOGRAM_WIDTH,
                )
                ulp_row.append(_figure(plot, caption, HISTOGRAM_WIDTH))
            if margins:
                total = sum(margins)
                beyond = sum(c for i, c in enumerate(margins) if bin_range(i)[0] >= 1.0)
                warn = " class='bad'" if beyond else ""
                caption = (
                    f"<b>{esc(backend)}</b>: {_cases(total)}, "
                    f"<span{warn}>{fmt(beyond)} beyond the bound</span>"
                )
                plot = svg.histogram(
                    margins,
                    f"{backend}, {dtype}: error / allowed",
                    "error / allowed",
                    bound=1.0,
                    kind="errors-margin",
                    width=HISTOGRAM_WIDTH,
                )
                margin_row.append(_figure(plot, caption, HISTOGRAM_WIDTH))
        parts.append(
            f"<h3>{esc(dtype)}</h3>"
            + (f'<div class="row">{"".join(ulp_row)}</div>' if ulp_row else "")
            + (f'<div class="row">{"".join(margin_row)}</div>' if margin_row else "")
        )
    return (
        '<section id="errors"><h2>Error distributions</h2>' + intro + "".join(parts) + "</section>"
    )


def _entry_row(entry: Entry, anchor: str, links: dict[str, str], found: str) -> str:
    sig = entry.signature
    mini = mapping(entry.minimization)
    attribution = mapping(mapping(entry.evidence).get("attribution"))
    layer = str(attribution.get("layer", "")) or "not attributed"
    failing_pass = mapping(attribution.get("mlir")).get("failing_pass")
    where = esc(layer)
    if failing_pass:
        where += f"<br><span class='note'>pass</span> <code>{esc(failing_pass)}</code>"
    if attribution.get("detail"):
        where += f"<br><span class='note'>{esc(str(attribution.get('detail'))[:200])}</span>"
    nodes = mini.get("nodes")
    state = str(mini.get("state", ""))
    minimized = esc(state or "?") + (
        f", {esc(nodes)} node{'' if nodes == 1 else 's'} "
        f"(from {esc(mini.get('original_nodes', '?'))})"
        if nodes is not None
        else ""
    )
    found_as = mapping(mini.get("found_as"))
    if found_as:  # minimized into another output dtype or fewer ops than it was found with
        was = ", ".join(str(o) for o in sequence(found_as.get("ops")))
        minimized += f"<br><span class='note'>found as {esc(found_as.get('dtype', '?'))}"
        minimized += f" ({esc(was)})</span>"
    files = " · ".join(
        f'<a href="{esc(href)}">{esc(name)}</a>' for name, href in links.items() if href
    )
    ops = ", ".join(str(o) for o in sequence(sig.get("ops"))) or "(no ops)"
    status = str(entry.status)
    detail = entry.detail[:3000]
    return (
        f'<tr id="{anchor}" class="entry {esc(status)}">'
        f"<td><span class='status {esc(status)}'>{esc(status)}</span></td>"
        f"<td>{esc(sig.get('kind', '?'))}</td>"
        f"<td>{esc(str(sig.get('backend', '')).replace('+', ', '))}</td>"
        f"<td>{esc(sig.get('oracle', ''))}</td>"
        f"<td>{esc(ops)}<br><span class='note'>{esc(sig.get('dtype', ''))}</span></td>"
        f"<td>{where}</td><td>{minimized}</td><td class='num'>{found}</td>"
        f"<td>{files}</td></tr>"
        f"<tr class='more'><td></td><td colspan='8'><details><summary>"
        f"{esc(entry.path.name if entry.path else '')}: detail and reproducer</summary>"
        f"<pre>{esc(detail)}</pre><pre>{esc(entry.reproducer)}</pre></details></td></tr>"
    )


def corpus_section(
    entries: list[Entry | CorpusError],
    anchors: dict[str, str],
    links: dict[str, dict[str, str]],
    summary: dict[str, Any],
) -> str:
    found = {Path(i["path"]).name: i["seconds"] for i in reversed(_timeline(summary))}
    good = [e for e in entries if isinstance(e, Entry)]
    good.sort(key=lambda e: (STATUS_ORDER.get(str(e.status), 3), str(e.signature.get("kind"))))
    rows = []
    for entry in good:
        name = entry.path.name if entry.path else ""
        when = f"{found[name]:.1f} s" if name in found else "earlier"
        rows.append(_entry_row(entry, anchors.get(name, ""), links.get(name, {}), when))
    bad = "".join(
        f"<li class='bad'>unreadable corpus file: {esc(e)}</li>"
        for e in entries
        if isinstance(e, CorpusError)
    )
    table = (
        "<table class='list' id='corpus-table'><tr><th>status</th><th>kind</th><th>backends</th>"
        "<th>oracle</th><th>ops · dtype</th><th>attribution (layer, pass)</th>"
        "<th>minimized</th><th>found</th><th>files</th></tr>" + "".join(rows) + "</table>"
        if rows
        else "<p class='note'>no findings in the corpus</p>"
    )
    return (
        f'<section id="corpus"><h2>Corpus ({len(good)} entries)</h2>'
        "<p class='note'>Each entry: <i>reproducer</i> is the standalone Python script; "
        "<i>export</i> the upstream-ready report (<code>python -m harness export FILE</code>) "
        "with its IR files and <code>commands.sh</code> next to it; <i>entry</i> the corpus "
        "file (<code>python -m harness replay FILE</code>). <i>found</i>: when this session "
        "first saw it.</p>" + table + (f"<ul>{bad}</ul>" if bad else "") + "</section>"
    )


def details_section(summary: dict[str, Any], stats: dict[str, Any]) -> str:
    options = mapping(summary.get("options"))
    option_rows = "".join(
        f"<tr><th>{esc(k)}</th><td>{esc(json.dumps(strict(v), default=str))}</td></tr>"
        for k, v in sorted(options.items(), key=lambda i: str(i[0]))
    )
    oracles = counts(stats.get("oracles"))
    oracle_rows = (
        "".join(
            f"<tr><th>{esc(k)}</th><td class='num'>{esc(fmt(v))}</td></tr>"
            for k, v in sorted(oracles.items())
        )
        or "<tr><td>none</td></tr>"
    )
    errors = "".join(
        f"<pre class='bad'>{esc(e)}</pre>" for e in sequence(summary.get("harness_errors"))
    )
    ambiguities = "".join(f"<li>{esc(a)}</li>" for a in sequence(summary.get("ambiguities"))[:20])
    seconds = (
        f"worker {number(stats.get('seconds_worker')):.1f} s, references "
        f"{number(stats.get('seconds_references')):.1f} s"
    )
    return (
        '<section id="details"><h2>Session details</h2><div class="row">'
        f"<table class='list'><caption>options</caption>{option_rows}</table>"
        f"<table class='list'><caption>cases judged per oracle</caption>{oracle_rows}</table>"
        f"<table class='list'><caption>tools</caption>"
        + "".join(
            f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>"
            for k, v in sorted(tool_versions().items())
        )
        + f"</table></div><p class='note'>time in {seconds}</p>"
        + (f"<h3>Harness errors</h3>{errors}" if errors else "")
        + (
            f"<h3>NumPy/JAX ambiguities (first 20)</h3><ul>{ambiguities}</ul>"
            if ambiguities
            else ""
        )
        + "</section>"
    )
