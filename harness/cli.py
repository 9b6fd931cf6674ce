"""``python -m harness fuzz | replay | selftest | report``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .case import CPU_BACKENDS


def _backends(text: str) -> tuple[str, ...]:
    from compiler.backends import get

    names = tuple(b.strip() for b in text.split(",") if b.strip())
    for name in names:
        get(name)  # ValueError listing the known targets
    return names


def _workers(text: str) -> int:
    if text == "auto":
        return max(1, os.cpu_count() or 1)
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("--workers must be >= 1 or 'auto'")
    return value


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .corpus import Corpus
    from .report import write_report
    from .session.fuzz import FuzzOptions, session
    from .session.progress import Progress, summary_table

    options = FuzzOptions(
        seconds=args.seconds,
        backends=args.backends,
        workers=args.workers,
        seed=args.seed if args.seed is not None else int(time.time()) % 100000,
        corpus=Path(args.corpus),
        max_nodes=args.max_nodes,
        mix=args.mix,
        use_jax=not args.no_jax,
        skip_oracles=("metamorphic:",) if args.no_relations else (),
        stop_on_first=args.stop_on_first,
        shrink_seconds=args.shrink_seconds,
        minimize_seconds=args.minimize_seconds,
        database=None if args.no_database else Path(args.database),
    )
    print(
        f"fuzzing {options.seconds:.0f} s on {', '.join(options.backends)} with "
        f"{options.workers} worker(s), seed {options.seed}, corpus {options.corpus}",
        file=sys.stderr,
    )
    summary = session(options, Progress(options.seconds, args.quiet))
    print(summary_table(summary))
    if args.summary_json:
        from .corpus import atomic_write

        atomic_write(Path(args.summary_json), json.dumps(summary, default=str, indent=1))
    if args.report:
        try:
            path = write_report(summary, Corpus(options.corpus), Path(args.report))
            print(f"report: {path}")
        except Exception as error:  # noqa: BLE001 - the session's results are saved; say so
            summary["harness_errors"].append(f"the report failed: {error!r}")
    for error in summary["harness_errors"][:3]:
        print("harness error:\n" + error, file=sys.stderr)
    new = sum(1 for f in summary["findings"] if f["new"])
    for regression in summary.get("regressions", []):
        print(f"REGRESSION: a fixed entry fails again: {regression['path']}", file=sys.stderr)
    if summary.get("interrupted"):
        print(f"stopped by {summary['interrupted']}: findings so far are saved", file=sys.stderr)
        return {"SIGINT": 130, "SIGTERM": 143}.get(summary["interrupted"], 2)
    if summary["harness_errors"]:
        return 2
    return 1 if new or summary.get("regressions") else 0


def cmd_recover(args: argparse.Namespace) -> int:
    """Finish what interrupted sessions left: re-run cases whose owner died in flight, and
    minimize, attribute and save findings left unminimized (no fuzzing, no time box)."""
    from .corpus import Corpus, Entry
    from .pending import orphans
    from .session.fuzz import Driver, FuzzOptions

    corpus = Path(args.corpus)
    options = FuzzOptions(corpus=corpus, use_jax=not args.no_jax, database=None)
    driver = Driver(options, 0)
    try:
        driver.recover_pending()
        driver.resume_unminimized()
    finally:
        driver.close()
    left = [e for e in Corpus(corpus).entries() if isinstance(e, Entry)]
    unminimized = [e for e in left if e.minimization.get("state") == "unminimized"]
    print(
        f"recovered: {len(driver.saved)} entries saved; {len(orphans(corpus))} orphaned records "
        f"and {len(unminimized)} unminimized entries left"
    )
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from .corpus import printable
    from .replay import replay
    from .run.runner import Runner

    paths = [Path(p) for p in (args.paths or ["corpus"])]
    with Runner(None, use_jax=not args.no_jax) as runner:
        results = replay(paths, runner, update_status=args.update)
    still = 0
    for r in results:
        detail = r.detail.splitlines()[0][:120] if r.detail.strip() else ""
        print(
            f"{r.outcome:12} {printable(r.path)}" + (f"  ({printable(detail)})" if detail else "")
        )
        still += r.outcome != "fixed"
    counts = {
        o: sum(1 for r in results if r.outcome == o) for o in ("still fails", "fixed", "error")
    }
    print(f"{len(results)} entries: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["error"] or (args.strict and counts["still fails"]) else 0


def cmd_report(args: argparse.Namespace) -> int:
    from .corpus import Corpus, CorpusError, parse_json, printable, read_limited
    from .report import write_report

    summary = {"seconds": 0, "stats": {}, "findings": [], "options": {}}
    if args.summary and Path(args.summary).exists():
        try:
            summary = parse_json(args.summary, read_limited(args.summary))
        except CorpusError as error:
            print(f"summary left out: {printable(error)}", file=sys.stderr)
    print(write_report(summary, Corpus(args.corpus), Path(args.out)))
    for bad in Corpus(args.corpus).entries():
        if isinstance(bad, CorpusError):
            print(f"unreadable corpus file: {printable(bad)}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .corpus import load
    from .triage.export import export_report, write_files

    entry = load(args.file)
    text = export_report(entry, args.format)
    if args.out:
        out = Path(args.out)
        write_files(entry, out)
        name = "report.json" if args.format == "json" else "report.md"
        (out / name).write_text(text)
        print(f"wrote {out / name} and the reproducer files in {out}")
    else:
        print(text, end="")
    return 0


def cmd_repro(args: argparse.Namespace) -> int:
    from .corpus import load
    from .triage.export import write_files

    for path in write_files(load(args.file), Path(args.mlir)):
        print(path)
    return 0


def cmd_selftest(args: argparse.Namespace) -> int:
    from .selftest import run_selftest

    return run_selftest(args)


def cmd_mutate(args: argparse.Namespace) -> int:
    from .mutate import run_mutate

    return run_mutate(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    fuzz = sub.add_parser("fuzz", help="run a time-boxed fuzzing session")
    fuzz.add_argument("--seconds", type=float, default=60.0)
    fuzz.add_argument("--backends", type=_backends, default=CPU_BACKENDS)
    fuzz.add_argument("--workers", type=_workers, default=1, help="driver processes, or 'auto'")
    fuzz.add_argument("--seed", type=int, default=None)
    fuzz.add_argument("--corpus", default="corpus")
    fuzz.add_argument("--report", default="report", help="report directory ('' for none)")
    fuzz.add_argument("--max-nodes", type=int, default=6)
    fuzz.add_argument(
        "--mix",
        choices=["all", "programs"],
        default="all",
        help="what to generate: everything, or random programs only",
    )
    fuzz.add_argument("--no-jax", action="store_true", help="skip the jax.jit reference")
    fuzz.add_argument("--no-relations", action="store_true", help="skip metamorphic relations")
    fuzz.add_argument("--stop-on-first", action="store_true")
    fuzz.add_argument("--shrink-seconds", type=float, default=30.0)
    fuzz.add_argument("--minimize-seconds", type=float, default=60.0)
    fuzz.add_argument("--database", default=".hypothesis/examples")
    fuzz.add_argument("--no-database", action="store_true")
    fuzz.add_argument("--quiet", action="store_true")
    fuzz.add_argument("--summary-json", default="", help="also write the session summary here")
    fuzz.set_defaults(func=cmd_fuzz)

    rc = sub.add_parser(
        "recover", help="re-run cases left in flight and finish unminimized findings"
    )
    rc.add_argument("--corpus", default="corpus", help="default: %(default)s")
    rc.add_argument("--no-jax", action="store_true", help="skip the jax.jit reference")
    rc.set_defaults(func=cmd_recover)

    rep = sub.add_parser("replay", help="re-run corpus entries: which still fail, which are fixed")
    rep.add_argument("paths", nargs="*")
    rep.add_argument("--update", action="store_true", help="flip each entry's status")
    rep.add_argument("--strict", action="store_true", help="exit 1 if any entry still fails")
    rep.add_argument("--no-jax", action="store_true")
    rep.set_defaults(func=cmd_replay)

    st = sub.add_parser("selftest", help="plant known bugs in a scratch copy; are they caught?")
    st.add_argument("--seconds", type=float, default=60.0, help="budget per planted bug")
    st.add_argument("--only", default="", help="comma-separated mutation names")
    st.add_argument("--workers", type=_workers, default=1)
    st.add_argument("--seed", type=int, default=1)
    st.set_defaults(func=cmd_selftest)

    mu = sub.add_parser("mutate", help="random compiler mutants: how many does fuzzing kill?")
    mu.add_argument("--count", type=int, default=10, help="mutants to draw")
    mu.add_argument("--seconds", type=float, default=60.0, help="fuzz budget per mutant")
    mu.add_argument("--seed", type=int, default=1, help="fixes the mutants drawn")
    mu.add_argument("--workers", type=_workers, default=1, help="fuzz drivers per mutant")
    mu.add_argument("--files", default="compiler/**/*.py", help="which files to mutate (a glob)")
    mu.add_argument("--json", default="", help="also write every mutant, diff and status here")
    mu.set_defaults(func=cmd_mutate)

    ex = sub.add_parser("export", help="write an upstream-ready bug report for a corpus entry")
    ex.add_argument("file", help="a corpus entry (JSON)")
    ex.add_argument("--format", choices=["md", "json"], default="md", help="default: %(default)s")
    ex.add_argument("--out", default="", help="write report and reproducer files in this folder")
    ex.set_defaults(func=cmd_export)

    rr = sub.add_parser("repro", help="write a corpus entry's .mlir files and commands.sh")
    rr.add_argument("file", help="a corpus entry (JSON)")
    rr.add_argument("--mlir", required=True, help="the folder to write them in")
    rr.set_defaults(func=cmd_repro)

    rp = sub.add_parser("report", help="rewrite the HTML/JSON report from the corpus")
    rp.add_argument("--corpus", default="corpus")
    rp.add_argument("--summary", default="report/summary.json")
    rp.add_argument("--out", default="report")
    rp.set_defaults(func=cmd_report)

    args = parser.parse_args(argv)
    return args.func(args)
