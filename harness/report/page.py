"""The session report: one self-contained HTML page (inline CSS and SVG, no script, no network)
and the ``summary.json`` it is drawn from.

The page shows the findings over time, the throughput per backend, the coverage matrices
(ops x dtypes x backends, special values x ops, value regimes, shape features, MLIR ops per
stage, BLAS paths) with the cells never hit marked, the error distributions against the error
model's bound, and the corpus with attribution, reproducer and export per entry. Everything it
draws comes from the summary and the corpus, so ``python -m harness report`` redraws the same
page from ``summary.json``.

Everything inserted into the page goes through ``esc`` or is a number formatted here: the
summary may come from a summary.json on disk and the entries from corpus files, neither trusted.
The sections are drawn in ``sections``; here the page around them, its style and its files.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..corpus import Corpus, CorpusError, Entry, atomic_write
from ..coverage import universe
from .data import counts, error_summary, mapping, strict, strings
from .sections import (
    DTYPES,
    corpus_section,
    coverage_section,
    details_section,
    errors_section,
    header,
    mlir_section,
    throughput_section,
    timeline_section,
    values_section,
)
from .svg import esc

#: Where an entry's reproducer, export and IR files go, inside the report directory.
ENTRY_FILES = "entries"


def _regimes() -> tuple[str, ...]:
    from strategies import REGIMES

    return tuple(REGIMES)


def session_universe(summary: dict[str, Any]) -> list[str]:
    """The cells the session could have hit: stored in the summary once computed, so a page
    redrawn later shows the universe of that session."""
    stored = strings(summary.get("universe"))
    if stored:
        return stored
    options = mapping(summary.get("options"))
    backends = strings(options.get("backends"))
    if not backends:
        seen = {c.split("|")[-1] for c in counts(mapping(summary.get("stats")).get("cells"))}
        backends = sorted(b for b in seen if b) or ["cpu-loops", "cpu-blas"]
    return sorted(universe(backends, DTYPES, _regimes()))


def _families(cells: dict[str, float]) -> dict[str, dict[str, float]]:
    """Cells by family: {"op": {"exp|float32|cpu-loops": 3, ...}, ...}."""
    families: dict[str, dict[str, float]] = {}
    for cell, count in cells.items():
        family, _, key = cell.partition(":")
        families.setdefault(family, {})[key] = count
    return families


STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:0 24px 40px;color:#222;max-width:1360px}
h1{margin:12px 0 4px}h2{margin:28px 0 6px;border-bottom:2px solid #ddd;padding-bottom:2px}
h3{margin:14px 0 4px}nav a{margin-right:14px}.note{color:#555}.bad{color:#b00020}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.card{border:1px solid #ccd;border-radius:6px;padding:4px 10px;min-width:110px;background:#f7f8fc}
.card .k{font-size:11px;color:#666}.card .v{font-size:17px;font-weight:600}
.card.alarm{background:#fde2e1;border-color:#b00020}
table{border-collapse:collapse}td,th{border:1px solid #d4d4d4;padding:1px 5px;font-size:11px}
caption{text-align:left;font-weight:600;padding:2px 0}
.matrix td{text-align:right;min-width:16px;padding:1px 3px;font-size:10px}
.matrix th.op{text-align:left;white-space:nowrap}
.matrix th.group{background:#eef}.matrix .total{background:#f4f4f4;font-weight:600}
th.v{vertical-align:bottom;padding:2px 1px}
th.v span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:500}
td.z,span.z{background:#fde2e1;color:#b00020}th.never{color:#b00020}
.bars td.num{text-align:right}.barcell{width:260px}.never{color:#b00020}
.bar{display:inline-block;height:10px;background:#4a7bd0}
.row{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:flex-start}
figure{margin:6px 0}figcaption{font-size:12px;color:#444;max-width:1180px}
svg.plot{font:11px system-ui,sans-serif;background:#fff}svg.plot text{fill:#333}
.list td,.list th{font-size:12px;padding:2px 6px;vertical-align:top;text-align:left}
.list td.num{text-align:right}pre{background:#f5f5f5;padding:6px;overflow:auto;max-height:320px}
.status{padding:0 6px;border-radius:8px;background:#eee}.status.open{background:#ffe7b3}
.status.regressed{background:#b00020;color:#fff}.status.fixed{background:#d9f2de}
tr.more td{border-top:none}
.chip{display:inline-block;margin:1px 2px;padding:0 5px;border-radius:8px;background:#eef1fb;
font-size:11px;white-space:nowrap}.chip b{color:#2a4fa0}
tr.more details summary{color:#555;cursor:pointer}
"""


def render(
    summary: Any,
    entries: list[Entry | CorpusError],
    links: dict[str, dict[str, str]] | None = None,
    generated: str = "",
) -> str:
    """The page for a session summary and the corpus entries; ``links`` maps an entry's file
    name to its files' relative links (``write_entry_files``)."""
    summary = mapping(summary)
    stats = mapping(summary.get("stats"))
    links = links or {}
    cells = session_universe(summary)
    families = _families(counts(stats.get("cells")))
    hit_all = sum(
        1 for c in cells if families.get(c.partition(":")[0], {}).get(c.partition(":")[2], 0) > 0
    )
    hit = f"{hit_all} / {len(cells)} cells"
    anchors = {
        e.path.name: f"entry-{e.content_id}" for e in entries if isinstance(e, Entry) and e.path
    }
    body = (
        header(summary, stats, entries, hit)
        + timeline_section(summary, stats, anchors)
        + throughput_section(summary)
        + coverage_section(families, cells)
        + values_section(families, cells)
        + mlir_section(families, cells)
        + errors_section(stats)
        + corpus_section(entries, anchors, links, summary)
        + details_section(summary, stats)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        f"<title>Fuzzing report</title><style>{STYLE}</style></head><body>{body}"
        f"<footer class='note'>generated <span id='generated'>{esc(generated)}</span> by "
        "<code>python -m harness report</code> from summary.json and the corpus</footer>"
        "</body></html>\n"
    )


def write_entry_files(entries: list[Entry | CorpusError], directory: Path) -> dict[str, dict]:
    """Each entry's reproducer, export report and IR files under ``entries/<id>/``; returns
    {entry file name: {link name: relative href}}. A failing export is named, not fatal."""
    from ..triage.export import export_report, write_files

    links: dict[str, dict[str, str]] = {}
    for entry in entries:
        if not isinstance(entry, Entry) or entry.path is None:
            continue
        folder = directory / ENTRY_FILES / entry.content_id
        base = f"{ENTRY_FILES}/{entry.content_id}/"
        mine: dict[str, str] = {}
        try:
            written = {p.name for p in write_files(entry, folder)}
            (folder / "report.md").write_text(export_report(entry), encoding="utf-8")
            if "reproducer.py" in written:
                mine["reproducer"] = base + "reproducer.py"
            mine["export"] = base + "report.md"
            mine["commands.sh"] = base + "commands.sh"
        except Exception as error:  # noqa: BLE001 - the page still lists the entry
            mine["export failed: " + repr(error)[:200]] = ""
        mine["entry"] = quote(os.path.relpath(entry.path, directory))
        links[entry.path.name] = mine
    return links


def write_report(summary: dict[str, Any], corpus: Corpus, directory: Path) -> Path:
    """Write report/index.html, report/summary.json and each entry's files; returns the HTML.

    summary.json is the session summary itself (strict JSON, with the session's coverage
    universe and the corpus listing added), so ``python -m harness report`` redraws this page
    from it. Unreadable corpus files are listed by name; a summary field of the wrong type is
    left out of the page.
    """
    directory = Path(directory)
    summary = dict(summary) if isinstance(summary, dict) else {}
    summary["universe"] = session_universe(summary)
    entries = list(corpus.entries())
    links = write_entry_files(entries, directory)
    page = render(summary, entries, links, time.strftime("%Y-%m-%d %H:%M:%S"))
    path = directory / "index.html"
    atomic_write(path, page)
    stored = strict(summary)
    stored["error_summary"] = error_summary(mapping(summary.get("stats")))
    stored["corpus"] = [
        (
            {"file": str(e.path), "signature": e.signature, "status": e.status}
            if isinstance(e, Entry)
            else {"error": str(e)}
        )
        for e in entries
    ]
    text = json.dumps(strict(stored), indent=1, allow_nan=False)
    atomic_write(directory / "summary.json", text + "\n")
    return path


__all__ = ["render", "session_universe", "write_entry_files", "write_report"]
