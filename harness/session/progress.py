"""The live progress line of a session and its summary table."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """One live line: elapsed, cases/s, findings by kind, corpus additions."""

    def __init__(self, seconds: float, quiet: bool = False) -> None:
        self.start = time.perf_counter()
        self.seconds = seconds
        self.quiet = quiet or not sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, kind: str, stats: Any, findings: list[dict[str, Any]]) -> None:
        now = time.perf_counter()
        if kind == "finding":
            f = findings[-1]
            state = "NEW" if f["new"] else "known"
            print(
                f"\n[{state}] {f['kind']} on {','.join(f['backends'])} ({f['oracle']}), "
                f"{f['nodes']} nodes -> {f['path']}",
                file=sys.stderr,
                flush=True,
            )
        if now - self.last < 1.0 and kind != "finding":
            return
        self.last = now
        elapsed = now - self.start
        kinds = " ".join(f"{k}:{v}" for k, v in sorted(stats.kinds.items())) or "none"
        line = (
            f"[{elapsed:6.1f}s/{self.seconds:.0f}s] {stats.cases} cases "
            f"({stats.cases / max(elapsed, 1e-9):.2f}/s) | findings {kinds} | "
            f"corpus +{sum(1 for f in findings if f['new'])}"
        )
        if self.quiet:
            if int(elapsed) % 10 == 0:
                print(line, file=sys.stderr, flush=True)
        else:
            print("\r" + line[:150].ljust(150), end="", file=sys.stderr, flush=True)


def summary_table(summary: dict[str, Any]) -> str:
    stats = summary["stats"]
    lines = [
        "",
        f"{'session':28} {summary['seconds']:.1f} s, seed {summary['options']['seed']}, "
        f"{summary['options']['workers']} worker(s)",
        f"{'cases':28} {stats['cases']} ({stats['cases'] / max(summary['seconds'], 1e-9):.2f}/s)",
        f"{'backend runs':28} {stats['backend_runs']}",
        f"{'known limitations hit':28} {stats['unsupported']}",
        f"{'invalid, rejected by both':28} {stats['rejected_agreed']}",
        f"{'NumPy/JAX ambiguities':28} {stats['ambiguities']}",
        f"{'focused cases skipped':28} {stats.get('focus_skipped', 0)} (their items were done)",
        f"{'focus items given up':28} {stats.get('focus_given_up', 0)} (no focused case did them)",
        f"{'mix cases skipped':28} {stats.get('mix_skipped', 0)} (kind ahead of its share)",
        f"{'repeated cases skipped':28} {stats.get('repeats_skipped', 0)} (judged before)",
        f"{'siblings judged':28} {stats.get('siblings', 0)} (cases' programs on other values)",
        f"{'triage runs':28} {stats.get('probes', 0)} (minimizing, attributing, replaying)",
        f"{'findings (instances)':28} "
        + (", ".join(f"{k} {v}" for k, v in sorted(stats["kinds"].items())) or "none"),
        f"{'corpus entries added':28} {_added(summary)}",
    ]
    if summary.get("entries_unminimized"):
        lines.append(
            f"{'left unminimized':28} {summary['entries_unminimized']} (the next session "
            "minimizes them)"
        )
    if summary.get("drivers_recycled"):
        lines.append(
            f"{'drivers recycled':28} {summary['drivers_recycled']} (their memory grew: each "
            "handed its state to a new process)"
        )
    if summary.get("first_finding_seconds") is not None:
        lines.append(f"{'first finding after':28} {summary['first_finding_seconds']:.1f} s")
    for f in summary["findings"]:
        lines.append(
            f"  {'NEW ' if f['new'] else 'known'} {f['kind']:16} "
            f"{','.join(f['backends']):24} {f['oracle']:28} {f['nodes']} nodes  "
            f"{f['path']}"
        )
    if summary["harness_errors"]:
        lines.append(f"harness errors: {len(summary['harness_errors'])} (see report)")
    return "\n".join(lines)


def _added(summary: dict[str, Any]) -> int:
    if "entries_added" in summary:
        return int(summary["entries_added"])
    return sum(1 for f in summary["findings"] if f["new"])  # a summary from before the count


__all__ = ["Progress", "summary_table"]
