"""``python -m harness mutate``: how many random mutants of the compiler does fuzzing kill?

The compiler is snapshotted first (other people may edit ``compiler/`` during a long run), so
mutants are drawn from, applied to, and judged against one fixed original. Each mutant is
checked for likely equivalence (``equivalence``), then fuzzed in a scratch copy exactly as the
selftest fuzzes a planted bug: it is *killed* if a finding is saved whose minimized case passes
on the original compiler.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from ..interrupt import Interrupted
from ..selftest import copy_compiler, fuzz_scratch
from .equivalence import SAMPLES, Checker, build_sample
from .operators import Mutant, draw, mutable_files

STATUSES = ("killed", "survived", "likely-equivalent", "unreached", "stillborn", "error")


def evaluate(
    mutant: Mutant, source: str, baseline: Path, checker: Checker, work: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    """One mutant's row: applied to a scratch copy, checked for equivalence, fuzzed if live."""
    row: dict[str, Any] = {
        "id": mutant.id, "file": mutant.file, "line": mutant.line,
        "operator": mutant.operator, "old": mutant.old, "new": mutant.new,
        "diff": mutant.diff(source), "kill_seconds": None, "fuzz": None,
    }  # fmt: skip
    if not checker.reached(mutant.file, mutant.line, mutant.old):
        row.update(
            status="unreached", equivalence="the sample never runs this line", equivalence_seconds=0
        )
        return row  # no scratch copy: nothing runs the mutant
    scratch = copy_compiler(work / "src", baseline)
    (scratch / mutant.file).write_text(mutant.apply(source))
    verdict = checker.check(scratch, [mutant.module], mutant.id)
    row.update(equivalence=verdict.detail, equivalence_seconds=round(verdict.seconds, 1))
    if verdict.status != "live":
        row["status"] = "likely-equivalent" if verdict.status == "equivalent" else "stillborn"
        return row
    result = fuzz_scratch(scratch, work, args.seconds, args.seed, args.workers, real=baseline)
    row["fuzz"] = result
    if result.get("stillborn"):  # what the probe imports passed; the session's startup did not
        row.update(status="stillborn", equivalence=result["error"][-3000:])
    elif result["caught"]:
        row.update(status="killed", kill_seconds=result["first"])
    elif result.get("error") or result.get("harness_errors"):
        row["status"] = "error"
    else:
        row["status"] = "survived"
        row["outputs"] = checker.outputs_differ(scratch, [mutant.module], mutant.id)
    return row


def _change(row: dict[str, Any]) -> str:
    text = f"{row['old']!r} -> {row['new']!r}"
    return text if len(text) <= 44 else text[:41] + "..."


def format_row(row: dict[str, Any]) -> str:
    kill = f"{row['kill_seconds']:.1f}" if row["kill_seconds"] is not None else "-"
    where = f"{row['file'].removeprefix('compiler/')}:{row['line']}"
    return (
        f"{row['id']:4} {where:28} {row['operator']:17} {row['status']:17} {kill:>7}  "
        f"{_change(row)}"
    )


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    # A session that ends in a harness error saved no reproducer: not a kill.
    judged = counts["killed"] + counts["survived"] + counts["error"]
    times = [r["kill_seconds"] for r in rows if r["kill_seconds"] is not None]
    # Survivors whose outputs never differ on the sample change only the IR (a schedule, a dead
    # branch): counted, and also left out of a second rate over mutants that change an answer.
    ir_only = sum(1 for r in rows if r["status"] == "survived" and _ir_only(r))
    answers = judged - ir_only
    return {
        "counts": counts,
        "kill_rate": counts["killed"] / judged if judged else None,
        "ir_only_survivors": ir_only,
        "answer_kill_rate": counts["killed"] / answers if answers else None,
        "median_kill_seconds": statistics.median(times) if times else None,
    }


def _ir_only(row: dict[str, Any]) -> bool:
    return str(row.get("outputs", "")).startswith("outputs identical")


def report(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    counts = summary["counts"]
    rate = summary["kill_rate"]
    median = summary["median_kill_seconds"]
    answer_rate = summary["answer_kill_rate"]
    lines = [
        "",
        f"kill rate: {counts['killed']}/{counts['killed'] + counts['survived'] + counts['error']}"
        + (f" = {rate:.0%}" if rate is not None else "")
        + " (likely-equivalent, unreached and stillborn mutants left out; harness errors count as"
        " missed)",
        f"of the survivors, {summary['ir_only_survivors']} change only the IR (outputs identical"
        " on the whole sample); kill rate over mutants that change an answer: "
        + (f"{answer_rate:.0%}" if answer_rate is not None else "-"),
        "median time to kill: " + (f"{median:.1f} s" if median is not None else "-"),
        ", ".join(f"{n} {s}" for s, n in counts.items()),
    ]
    for status, title in (
        ("survived", "survivors"),
        ("error", "harness errors"),
        ("likely-equivalent", "likely equivalent (not fuzzed)"),
        (
            "unreached",
            "unreached: the sample never runs the line (not fuzzed; the sample runs programs on"
            " the default backends: no jit sequences, triage, IREE, GPU or mlir: variants)",
        ),
        ("stillborn", "stillborn (the compiler no longer imports)"),
    ):
        chosen = [r for r in rows if r["status"] == status]
        if chosen:
            lines.append(f"\n{title}:")
        for r in chosen:
            note = r["equivalence"] if status != "error" else _error_of(r)
            if status == "survived" and r.get("outputs"):
                note += f"; {r['outputs']}"
            shared = (r.get("fuzz") or {}).get("other_findings")
            if shared:
                sessions = (r.get("fuzz") or {}).get("sessions", 1)
                note += f"; {shared} finding(s) the original compiler shares, {sessions} session(s)"
            if (r.get("fuzz") or {}).get("unjudged_findings"):
                note += "; the session stopped at a finding that did not reproduce alone"
            lines.append(f"\n{r['id']} {r['file']}:{r['line']} {r['operator']}  [{note[-300:]}]")
            lines.append(r["diff"].rstrip("\n"))
    return "\n".join(lines)


def _error_of(row: dict[str, Any]) -> str:
    fuzz = row.get("fuzz") or {}
    return (fuzz.get("error") or "\n".join(fuzz.get("harness_errors", [])))[-300:]


def run_mutate(args: argparse.Namespace) -> int:
    """Exit 0 whatever the kill rate (it is a measurement), 2 if the harness itself failed,
    130/143 if stopped by SIGINT/SIGTERM (after reporting the mutants judged so far)."""
    try:
        return _run(args)
    except Interrupted as stop:  # between mutants' verdicts (a mutant in hand is caught below)
        print(f"stopped by {stop.name}", file=sys.stderr)
        return stop.exit_status
    except Exception:  # noqa: BLE001 - anything here is a harness error, not a result
        traceback.print_exc()
        return 2


def _run(args: argparse.Namespace) -> int:
    from ..selftest import ROOT

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp_name:
        tmp = Path(tmp_name)
        baseline = copy_compiler(tmp / "baseline", ROOT)
        files = mutable_files(baseline, args.files)
        if not files:
            print(f"no compiler files match {args.files!r}", file=sys.stderr)
            return 2
        sources = {f: (baseline / f).read_text() for f in files}
        mutants = draw(sources, args.count, args.seed)
        print(
            f"{len(mutants)} mutants of {len(files)} files (seed {args.seed}); "
            f"fuzzing {args.seconds:.0f} s each with {args.workers} worker(s)",
            file=sys.stderr,
        )
        try:
            sample = build_sample(**SAMPLES[args.sample])
            checker = Checker(baseline, tmp / "equivalence", sample)
        except Interrupted as stop:
            print(f"stopped by {stop.name} while probing the original compiler", file=sys.stderr)
            return stop.exit_status
        print(f"equivalence sample: {checker.describe()}", file=sys.stderr)
        print(f"{'id':4} {'file:line':28} {'operator':17} {'status':17} {'kill s':>7}  change")
        rows: list[dict[str, Any]] = []
        stopped = None
        for mutant in mutants:
            work = tmp / mutant.id
            try:
                rows.append(evaluate(mutant, sources[mutant.file], baseline, checker, work, args))
            except Interrupted as stop:
                # The mutant in hand has no verdict; the ones before it do, and are reported.
                stopped = stop
                break
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(format_row(rows[-1]), flush=True)
        summary = summarize(rows)
        print(report(rows, summary))
        if stopped is not None:
            print(
                f"stopped by {stopped.name}: {len(rows)} of {len(mutants)} mutants judged",
                file=sys.stderr,
            )
        if args.json:
            document = {
                "seed": args.seed, "count": args.count, "seconds": args.seconds,
                "workers": args.workers, "files": files, "sample": checker.describe(),
                "unstable_digests": checker.unstable, "wall_seconds": time.perf_counter() - start,
                "interrupted": stopped.name if stopped else None, **summary, "mutants": rows,
            }  # fmt: skip
            Path(args.json).write_text(json.dumps(document, indent=1, default=str))
    return stopped.exit_status if stopped is not None else 0


__all__ = ["evaluate", "format_row", "report", "run_mutate", "summarize"]
