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
#
# Everything inserted into the page goes through ``_esc`` or ``_number``: the summary may come
# from a summary.json on disk and the entries from corpus files, neither of them trusted.


def _esc(value: Any) -> str:
    """``value`` as HTML text (escaped, lone surrogates replaced so the page stays UTF-8)."""
    text = value if isinstance(value, str) else str(value)
    return html.escape(text.encode("utf-8", "replace").decode("utf-8"))


def _number(value: Any, default: float = 0) -> float:
    """A finite number from the summary, or ``default`` for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return default


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _numbers(values: Any) -> list[float]:
    """The finite numbers of a list from the summary (the rest dropped)."""
    if not isinstance(values, list):
        return []
    return [v for v in values if _number(v, math.nan) == v]


def _histogram_svg(values: list[float], title: str, width: int = 360, height: int = 140) -> str:
    values = _numbers(values)
    if not values:
        return f"<p>{_esc(title)}: no data</p>"
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
        + f"</svg><figcaption>{_esc(title)} ({len(values)} outputs, worst error in "
        "units of eps·max|truth|)</figcaption></figure>"
    )


def _coverage_table(coverage: dict[str, int]) -> str:
    cells: dict[tuple[str, str], dict[str, int]] = {}
    backends: set[str] = set()
    for key, count in _mapping(coverage).items():
        family, _, rest = str(key).partition(":")
        if family != "op":
            continue
        parts = rest.split("|")
        if len(parts) != 3 or not _number(count, -1) >= 0:
            continue  # not "op|dtype|backend" -> count: skipped rather than trusted
        op, dtype, backend = parts
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
            tds.append(f'<td style="background:rgb({shade},{shade},255)">{_esc(n)}</td>')
        rows.append(f"<tr><th>{_esc(op)}</th><td>{_esc(dtype)}</td>{''.join(tds)}</tr>")
    head = "".join(f"<th>{_esc(b)}</th>" for b in cols)
    return f"<table><tr><th>op</th><th>dtype</th>{head}</tr>{''.join(rows)}</table>"


def _findings_html(entries: list[Entry | CorpusError]) -> str:
    parts = []
    for e in entries:
        if isinstance(e, CorpusError):
            parts.append(f"<div class='bad'>unreadable corpus file: {_esc(e)}</div>")
            continue
        sig = e.signature
        mini = e.minimization
        parts.append(
            "<details><summary>"
            + _esc(
                f"[{e.status}] {sig.get('kind')} on {sig.get('backend')} — {sig.get('oracle')} — "
                f"ops {', '.join(sig.get('ops', []))} — {sig.get('dtype')} "
                f"({mini.get('nodes', '?')} nodes, {mini.get('state', '')})"
            )
            + "</summary>"
            + f"<p>{_esc(e.detail[:1000])}</p>"
            + f"<p>file: <code>{_esc(e.path)}</code></p>"
            + (
                f"<p>pipeline bisection: {_esc(json.dumps(mini.get('pipeline_bisection')))}" "</p>"
                if mini.get("pipeline_bisection")
                else ""
            )
            + f"<pre>{_esc(e.reproducer)}</pre>"
            + (
                f"<p>mlir-opt: <code>{_esc(e.mlir.get('mlir_opt', ''))}</code></p>"
                if e.mlir
                else ""
            )
            + "</details>"
        )
    return "".join(parts) or "<p>no findings in the corpus</p>"


def write_report(summary: dict[str, Any], corpus: Corpus, directory: Path) -> Path:
    """Write report/index.html and report/summary.json (atomically); returns the HTML path.

    Unreadable corpus files are listed by name; a summary field of the wrong type is left out.
    """
    directory = Path(directory)
    summary = _mapping(summary)
    stats = _mapping(summary.get("stats"))
    entries = list(corpus.entries())
    errors = {k: _numbers(v) for k, v in _mapping(stats.get("errors")).items()}
    kinds = _mapping(stats.get("kinds"))
    findings_rows = "".join(
        f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>"
        for k, v in sorted(kinds.items(), key=lambda item: str(item[0]))
    )
    seconds = _number(summary.get("seconds")) or 1e-9
    cases = _number(stats.get("cases"))
    seed = _mapping(summary.get("options")).get("seed")
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>Fuzzing report</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}pre{{background:#f5f5f5;padding:8px;
overflow:auto;font-size:12px}}figure{{display:inline-block;margin:8px}}.bad{{color:#b00}}</style>
</head><body>
<h1>Fuzzing report</h1>
<p>{time.strftime('%Y-%m-%d %H:%M:%S')} — {_number(summary.get('seconds')):.0f} s,
{_esc(cases)} cases ({cases / seconds:.2f}/s),
{_esc(_number(stats.get('backend_runs')))} backend runs, seed {_esc(seed)}.</p>
<h2>Findings this session</h2>
<table><tr><th>kind</th><th>instances</th></tr>{findings_rows}</table>
<p>known limitations hit: {_esc(_number(stats.get('unsupported')))} cases;
invalid programs rejected by both: {_esc(_number(stats.get('rejected_agreed')))};
NumPy/JAX ambiguities (not compiler bugs): {_esc(_number(stats.get('ambiguities')))}</p>
<h2>Error distributions per backend</h2>
{''.join(_histogram_svg(v, k) for k, v in sorted(errors.items(), key=lambda i: str(i[0])))}
<h2>Coverage: ops × dtypes × backends</h2>
{_coverage_table(stats.get('cells', {}))}
<h2>Corpus ({len(entries)} entries)</h2>
{_findings_html(entries)}
<h2>Tools</h2><pre>{_esc(json.dumps(tool_versions(), indent=1))}</pre>
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
