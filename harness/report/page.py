"""Reproducers, tool versions and the session report (HTML with inline SVG plots, plus JSON).

The report needs no plotting library: the coverage matrix is a coloured table and the error
distributions are SVG histograms drawn here.
"""

from __future__ import annotations

import html
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus import Corpus, CorpusError, Entry, atomic_write
from .reproducer import tool_versions


# --------------------------------------------------------------------------------------------
# HTML


def _histogram_svg(values: list[float], title: str, width: int = 360, height: int = 140) -> str:
    if not values:
        return f"<p>{html.escape(title)}: no data</p>"
    logs = [math.log10(max(v, 1e-3)) for v in values]
    lo, hi = -3.0, max(3.0, math.ceil(max(logs)))
    bins = 24
    counts = [0] * bins
    for v in logs:
        counts[min(bins - 1, int((v - lo) / (hi - lo) * bins))] += 1
    top = max(counts)
    bar = width / bins
    rects = []
    for i, c in enumerate(counts):
        h = 0 if top == 0 else (height - 30) * c / top
        rects.append(
            f'<rect x="{i * bar:.1f}" y="{height - 20 - h:.1f}" width="{bar - 1:.1f}" '
            f'height="{h:.1f}" fill="#4a7bd0"><title>{c}</title></rect>'
        )
    return (
        f'<figure><svg width="{width}" height="{height}" role="img">'
        + "".join(rects)
        + f'<text x="0" y="{height - 4}" font-size="10">1e{lo:.0f} ULP</text>'
        + f'<text x="{width - 50}" y="{height - 4}" font-size="10">1e{hi:.0f} ULP</text>'
        + f"</svg><figcaption>{html.escape(title)} ({len(values)} outputs, worst error in "
        "units of eps·max|truth|)</figcaption></figure>"
    )


def _coverage_table(coverage: dict[str, int]) -> str:
    cells: dict[tuple[str, str], dict[str, int]] = {}
    backends: set[str] = set()
    for key, count in coverage.items():
        op, dtype, backend = key.split("|")
        cells.setdefault((op, dtype), {})[backend] = count
        backends.add(backend)
    if not cells:
        return "<p>no cases ran</p>"
    cols = sorted(backends)
    top = max(max(v.values()) for v in cells.values())
    rows = []
    for (op, dtype), per in sorted(cells.items()):
        tds = []
        for b in cols:
            n = per.get(b, 0)
            shade = int(255 - 155 * (math.log1p(n) / math.log1p(top))) if n else 255
            tds.append(f'<td style="background:rgb({shade},{shade},255)">{n}</td>')
        rows.append(f"<tr><th>{html.escape(op)}</th><td>{dtype}</td>{''.join(tds)}</tr>")
    head = "".join(f"<th>{html.escape(b)}</th>" for b in cols)
    return f"<table><tr><th>op</th><th>dtype</th>{head}</tr>{''.join(rows)}</table>"


def _findings_html(entries: list[Entry | CorpusError]) -> str:
    parts = []
    for e in entries:
        if isinstance(e, CorpusError):
            parts.append(f"<div class='bad'>unreadable corpus file: {html.escape(str(e))}</div>")
            continue
        sig = e.signature
        mini = e.minimization
        parts.append(
            "<details><summary>"
            + html.escape(
                f"[{e.status}] {sig.get('kind')} on {sig.get('backend')} — {sig.get('oracle')} — "
                f"ops {', '.join(sig.get('ops', []))} — {sig.get('dtype')} "
                f"({mini.get('nodes', '?')} nodes, {mini.get('state', '')})"
            )
            + "</summary>"
            + f"<p>{html.escape(e.detail[:1000])}</p>"
            + f"<p>file: <code>{html.escape(str(e.path))}</code></p>"
            + (
                f"<p>pipeline bisection: {html.escape(json.dumps(mini.get('pipeline_bisection')))}"
                "</p>"
                if mini.get("pipeline_bisection")
                else ""
            )
            + f"<pre>{html.escape(e.reproducer)}</pre>"
            + (
                f"<p>mlir-opt: <code>{html.escape(e.mlir.get('mlir_opt', ''))}</code></p>"
                if e.mlir
                else ""
            )
            + "</details>"
        )
    return "".join(parts) or "<p>no findings in the corpus</p>"


def write_report(summary: dict[str, Any], corpus: Corpus, directory: Path) -> Path:
    """Write report/index.html and report/summary.json (atomically); returns the HTML path."""
    directory = Path(directory)
    stats = summary.get("stats", {})
    entries = list(corpus.entries())
    errors = stats.get("errors", {})
    kinds = stats.get("kinds", {})
    findings_rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v}</td></tr>" for k, v in sorted(kinds.items())
    )
    seconds = summary.get("seconds", 0.0) or 1e-9
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>Fuzzing report</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}pre{{background:#f5f5f5;padding:8px;
overflow:auto;font-size:12px}}figure{{display:inline-block;margin:8px}}.bad{{color:#b00}}</style>
</head><body>
<h1>Fuzzing report</h1>
<p>{time.strftime('%Y-%m-%d %H:%M:%S')} — {summary.get('seconds', 0):.0f} s,
{stats.get('cases', 0)} cases ({stats.get('cases', 0) / seconds:.2f}/s),
{stats.get('backend_runs', 0)} backend runs, seed {summary.get('options', {}).get('seed')}.</p>
<h2>Findings this session</h2>
<table><tr><th>kind</th><th>instances</th></tr>{findings_rows}</table>
<p>known limitations hit: {stats.get('unsupported', 0)} cases;
invalid programs rejected by both: {stats.get('rejected_agreed', 0)};
NumPy/JAX ambiguities (not compiler bugs): {stats.get('ambiguities', 0)}</p>
<h2>Error distributions per backend</h2>
{''.join(_histogram_svg(v, k) for k, v in sorted(errors.items()))}
<h2>Coverage: ops × dtypes × backends</h2>
{_coverage_table(stats.get('coverage', {}))}
<h2>Corpus ({len(entries)} entries)</h2>
{_findings_html(entries)}
<h2>Tools</h2><pre>{html.escape(json.dumps(tool_versions(), indent=1))}</pre>
</body></html>
"""
    path = directory / "index.html"
    atomic_write(path, page)
    compact = dict(summary)
    compact["stats"] = {k: v for k, v in stats.items() if k != "errors"}
    compact["error_summary"] = {
        k: {
            "outputs": len(v),
            "median_ulps": float(np.median(v)) if v else 0.0,
            "max_ulps": float(max(v)) if v else 0.0,
        }
        for k, v in errors.items()
    }
    compact["corpus"] = [
        (
            {"file": str(e.path), "signature": e.signature, "status": e.status}
            if isinstance(e, Entry)
            else {"error": str(e)}
        )
        for e in entries
    ]
    atomic_write(directory / "summary.json", json.dumps(compact, indent=1, default=str) + "\n")
    return path
