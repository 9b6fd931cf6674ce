"""The differential fuzzing harness of the MLIR tensor compiler: fuzz it, replay the corpus of
its known bugs, prove the harness catches planted bugs, write reports."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from . import arguments as arg
from .case import CPU_BACKENDS, SAMPLED_BACKENDS, SIBLINGS
from .interrupt import Interrupted, signals_interrupt

EXAMPLES = """examples:
  python -m harness fuzz --seconds 300 --workers auto --backends cpu-loops,cpu-blas
  python -m harness replay corpus --junit-xml replay.xml
  python -m harness backends
  python -m harness SUBCOMMAND --help"""


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .corpus import Corpus
    from .report import write_report
    from .session.fuzz import FuzzOptions
    from .session.parent import session
    from .session.progress import Progress, summary_table

    if (args.shards or args.split_backends) and not args.scheduler:
        print("--shards and --split-backends need --scheduler (a campaign)", file=sys.stderr)
        return 2
    options = FuzzOptions(
        seconds=args.seconds,
        backends=args.backends,
        workers=args.workers,
        seed=args.seed if args.seed is not None else int(time.time()) % 100000,
        corpus=Path(args.corpus),
        max_nodes=args.max_nodes,
        mix=args.mix,
        use_jax=not args.no_jax,
        skip_oracles=tuple(args.skip_oracles) + (("metamorphic:",) if args.no_relations else ()),
        stop_on_first=args.stop_on_first,
        shrink_seconds=args.shrink_seconds,
        minimize_seconds=args.minimize_seconds,
        database=args.example_db or (None if args.no_database else Path(args.database)),
        disable_workarounds=tuple(sorted(set(args.disable_workaround))),
        focus=not args.no_focus,
        siblings=args.siblings,
    )
    print(
        f"fuzzing {options.seconds:.0f} s on {', '.join(options.backends)} with "
        f"{options.workers} worker(s), seed {options.seed}, corpus {options.corpus}"
        + (
            f", workarounds off: {','.join(options.disable_workarounds)}"
            if options.disable_workarounds
            else ""
        ),
        file=sys.stderr,
    )
    if args.scheduler:  # a campaign on Dask: the shards are sessions, this process the writer
        from .distributed.client import CampaignProgress, campaign, campaign_table

        progress = CampaignProgress(options.seconds, args.quiet)
        summary = campaign(options, args.scheduler, args.shards, args.split_backends, progress)
        print(summary_table(summary) + "\n" + campaign_table(summary))
    else:
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


def cmd_corpus_merge(args: argparse.Namespace) -> int:
    """Merge corpora made elsewhere (content-addressed: a set union, deduplicated by
    signature); exit 1 if a file could not be read (it is named, and left out)."""
    from .corpus import printable
    from .distributed.merge import merge

    merged = merge(Path(args.into), [Path(p) for p in args.sources])
    for problem in merged.unreadable:
        print(f"left out: {printable(problem)}", file=sys.stderr)
    print(
        f"merged into {printable(args.into)}: {len(merged.added)} added, {merged.duplicates} "
        f"duplicates, {len(merged.unreadable)} unreadable"
    )
    return 1 if merged.unreadable else 0


def cmd_recover(args: argparse.Namespace) -> int:
    """Finish what interrupted sessions left: re-run cases whose owner died in flight, and
    minimize, attribute and save findings left unminimized (no fuzzing, no time box)."""
    from .corpus import Corpus, Entry
    from .pending import orphans
    from .session.fuzz import Driver, FuzzOptions

    class Minimized(list):
        """The driver's "finding" events: which entry each record was minimized into."""

        def send(self, message: tuple[int, str, Any]) -> None:
            if message[1] == "finding":
                self.append(message[2])

    corpus = Path(args.corpus)
    options = FuzzOptions(corpus=corpus, use_jax=not args.no_jax, database=None)
    minimized = Minimized()
    driver = Driver(options, 0, minimized)
    try:
        driver.recover_pending()
        driver.resume_unminimized()
    finally:
        driver.close()
    for done in minimized:  # a smaller case may fail with another signature: say where it went
        into = Path(done["path"]).name
        already = "" if done["new"] else " (an entry already there)"
        for raw in done["raw"] or ["a re-run case"]:
            print(f"minimized {Path(raw).name} into {into}{already}")
    left = [e for e in Corpus(corpus).entries() if isinstance(e, Entry)]
    unminimized = [e for e in left if e.unminimized]
    print(
        f"recovered: {len(driver.saved)} entries saved; {len(orphans(corpus))} orphaned records "
        f"and {len(unminimized)} unminimized entries left"
    )
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """One line per entry (state, file, why), a summary line; hints on stderr. Exit 1 on a
    regression or an unreadable file (and, with --strict, on a still-open entry)."""
    from .corpus import printable
    from .replay import counts, exit_status, replay_iter, summary, write_junit
    from .run.runner import Runner, Stopped

    if args.reopen and not args.update:
        print("python -m harness replay: error: --reopen needs --update", file=sys.stderr)
        return 2
    paths = [Path(p) for p in (args.paths or ["corpus"])]
    results = []
    interrupted = None
    with signals_interrupt(), Runner(None, use_jax=not args.no_jax) as runner:
        try:
            for r in replay_iter(paths, runner, update=args.update, reopen=args.reopen):
                results.append(r)
                note = f"  [{r.updated}]" if r.updated else ""
                reason = f"  ({r.reason})" if r.reason else ""
                print(f"{r.outcome:12} {printable(r.path)}{reason}{note}", flush=True)
        except (Interrupted, Stopped) as stop:
            interrupted = getattr(stop, "number", signal.SIGINT)
            runner.worker.kill()
    print(summary(results))
    if args.junit_xml:
        written = write_junit(results, Path(args.junit_xml))
        print(f"JUnit XML: {printable(written)}", file=sys.stderr)
    tally = counts(results)
    hints = {
        "regressed": "fixed entries failing again (exit 1): fix the compiler, or reopen them "
        "with --update --reopen",
        "unreadable": "files the loader refuses (exit 1): fix or remove them",
        "fixed-now": "open entries that pass now: --update marks them fixed",
        "not-run": "entries not judged here (reasons above): neither fixed nor failing",
    }
    for state, hint in hints.items():
        if tally[state] and not (state == "fixed-now" and args.update):
            print(f"{tally[state]} {state}: {hint}", file=sys.stderr)
    if interrupted is not None:
        name = signal.Signals(interrupted).name
        print(f"stopped by {name}: {len(results)} entries replayed", file=sys.stderr)
        return {"SIGINT": 130, "SIGTERM": 143}.get(name, 2)
    return exit_status(results, args.strict)


def cmd_backends(args: argparse.Namespace) -> int:
    """Every registered backend, whether it is available here and why not."""
    from compiler import backends, pipelines

    rows = backends.describe()
    width = max(len(d["name"]) for d in rows)
    for d in rows:
        if d["unavailable"]:
            state, why = "no", d["unavailable"]
        elif d["limits"]:
            state, why = "partly", d["limits"]
        else:
            state, why = "yes", ""
        print(f"{d['name']:{width}}  {state:6}  {d['description']}")
        if why:
            print(f"{'':{width}}  {'':6}  why: {why}")
    aliases = ", ".join(f"{a} = {b}" for a, b in pipelines.ALIASES.items())
    print(f"aliases: {aliases}")
    print("variants of our CPU targets: NAME@O0..O3 (LLVM level), NAME[:stage#k] (stages up to")
    print("  stage, or its first k steps), NAME+mlir-runtime (MLIR's runtime helpers)")
    from compiler import mlir_variants

    print(
        f"mlir:*: upstream MLIR pass pipelines around our bufferization and lowering, a variant "
        f"per case from a catalog of {len(mlir_variants.CATALOG)} entries (python -m "
        "compiler.mlir_variants); one is named by its entries in order, e.g. "
        "mlir:fold-unit-extent-dims.fuse-elementwise.to-affine-loops.affine-scalrep; "
        "mlir:known-broken:* also runs entries where their known upstream bugs hit"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .corpus import Corpus, CorpusError, parse_json, printable, read_limited
    from .report import write_report

    summary: dict = {}  # the page then says it shows the corpus only
    if args.summary and Path(args.summary).exists():
        try:
            summary = parse_json(args.summary, read_limited(args.summary))
        except CorpusError as error:
            print(f"summary left out: {printable(error)}", file=sys.stderr)
    elif args.summary:
        print(f"no summary at {printable(args.summary)}: the page shows the corpus only")
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

    with signals_interrupt():
        return run_selftest(args)


def cmd_mutate(args: argparse.Namespace) -> int:
    from .mutate import run_mutate

    with signals_interrupt():
        return run_mutate(args)


def main(argv: list[str] | None = None) -> int:
    parser = arg.Parser(prog="python -m harness", description=__doc__, epilog=EXAMPLES)
    parser.add_argument("--version", action="version", version=arg.version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fuzz = sub.add_parser(
        "fuzz",
        help="run a time-boxed fuzzing session",
        description="Fuzz the compiler for a time box; findings are minimized into the corpus. "
        "Exit 1 when it added findings or a fixed entry failed again, 2 on a harness error, 3 "
        "when the compiler under test does not import (named, with a command to see it again).",
        epilog="example:\n  python -m harness fuzz --seconds 300 --workers auto "
        "--backends cpu-loops,cpu-blas --seed 7",
    )
    fuzz.add_argument("--seconds", type=arg.seconds, default=60.0, help="the time box")
    fuzz.add_argument(
        "--backends",
        type=arg.backends,
        default=CPU_BACKENDS,
        help="comma-separated backends to compare (python -m harness backends lists them); "
        "with the default, a quarter of the cases also run on "
        + ",".join(SAMPLED_BACKENDS)
        + " (as shipped: LLVM -O3, and -O2 for cpu, the @jit default)",
    )
    fuzz.add_argument("--workers", type=arg.workers, default=1, help="driver processes, or 'auto'")
    fuzz.add_argument("--seed", type=int, default=None, help="default: from the clock (printed)")
    fuzz.add_argument("--corpus", default="corpus", help="where findings are saved")
    fuzz.add_argument("--report", default="report", help="report directory ('' for none)")
    fuzz.add_argument(
        "--max-nodes", type=arg.count, default=6, help="most operations in a generated program"
    )
    fuzz.add_argument(
        "--mix",
        choices=["all", "programs", "models"],
        default="all",
        help="what to generate: everything, random programs only, or GPT-2 models only (the "
        "compiler's model code: checkpoint loader, forward passes, generation)",
    )
    fuzz.add_argument("--no-jax", action="store_true", help="skip the jax.jit reference")
    fuzz.add_argument("--no-relations", action="store_true", help="skip metamorphic relations")
    fuzz.add_argument(
        "--skip-oracles",
        type=arg.oracles,
        default=(),
        help="comma-separated oracles not to run (names, or prefixes such as 'metamorphic:')",
    )
    fuzz.add_argument("--stop-on-first", action="store_true", help="stop at the first finding")
    fuzz.add_argument(
        "--no-focus",
        action="store_true",
        help="no cases focused on the (op, dtype) pairs not exercised yet (to measure them)",
    )
    fuzz.add_argument(
        "--siblings",
        type=int,
        default=SIBLINGS,
        help="each case's program also judged on values of this many other regimes, reusing "
        "its compiled kernels (0: none, to measure them)",
    )
    fuzz.add_argument(
        "--disable-workaround",
        type=arg.workaround,
        action="append",
        default=[],
        metavar="NAME",
        help="turn a compiler workaround for an upstream bug off on every case (repeatable; "
        "python -m compiler workarounds lists them): the session rediscovers that bug, and its "
        "findings replay with the workaround off",
    )
    fuzz.add_argument(
        "--shrink-seconds", type=arg.budget, default=30.0, help="Hypothesis shrinking per finding"
    )
    fuzz.add_argument(
        "--minimize-seconds", type=arg.budget, default=60.0, help="delta debugging per finding"
    )
    fuzz.add_argument("--database", default=".hypothesis/examples", help="Hypothesis's examples")
    fuzz.add_argument("--no-database", action="store_true", help="keep no Hypothesis examples")
    fuzz.add_argument("--quiet", action="store_true", help="no live progress line")
    fuzz.add_argument("--summary-json", default="", help="also write the session summary here")
    fuzz.add_argument(
        "--scheduler",
        default="",
        help="run as a Dask campaign: tcp://HOST:8786, or local:W (a LocalCluster of W workers)",
    )
    fuzz.add_argument(
        "--shards", type=arg.count, default=None, help="campaign shards (default: worker threads)"
    )
    fuzz.add_argument(
        "--split-backends", action="store_true", help="give each shard a subset of --backends"
    )
    fuzz.add_argument(
        "--example-db",
        default="",
        help="Hypothesis's examples shared by every shard, e.g. redis://HOST:6379 (overrides "
        "--database)",
    )
    fuzz.set_defaults(func=cmd_fuzz)

    co = sub.add_parser("corpus", help="corpus maintenance: merge corpora made elsewhere")
    co_sub = co.add_subparsers(dest="corpus_command", required=True, metavar="ACTION")
    me = co_sub.add_parser(
        "merge",
        help="merge corpus directories into --into (set union, deduplicated by signature)",
    )
    me.add_argument("sources", nargs="+", metavar="DIR", help="corpus directories to merge")
    me.add_argument("--into", default="corpus", help="the corpus that receives them")
    me.set_defaults(func=cmd_corpus_merge)

    rc = sub.add_parser(
        "recover", help="re-run cases left in flight and finish unminimized findings"
    )
    rc.add_argument("--corpus", default="corpus", help="the corpus to recover")
    rc.add_argument("--no-jax", action="store_true", help="skip the jax.jit reference")
    rc.set_defaults(func=cmd_recover)

    rep = sub.add_parser(
        "replay",
        help="re-run corpus entries: still open, fixed now, or regressed",
        description="Replay corpus entries with the oracle that found them. Each is still-open, "
        "fixed-now (open, passes: --update marks it fixed), still-fixed, regressed (fixed, fails "
        "again), not-run (a backend unknown or unavailable here, or the case cannot be rebuilt: "
        "never counted as fixed) or unreadable. Exit 1 on a regression or an unreadable file, "
        "0 otherwise (still-open entries are known bugs, unless --strict).",
        epilog="examples:\n  python -m harness replay corpus --junit-xml replay.xml\n"
        "  python -m harness replay corpus --update   # mark fixed-now entries fixed",
    )
    rep.add_argument("paths", nargs="*", help="corpus folders or entry files (default: corpus)")
    rep.add_argument(
        "--update", action="store_true", help="mark fixed-now entries fixed (nothing else)"
    )
    rep.add_argument(
        "--reopen", action="store_true", help="with --update, also mark regressed entries open"
    )
    rep.add_argument("--strict", action="store_true", help="exit 1 also if an entry is still open")
    rep.add_argument("--junit-xml", default="", metavar="FILE", help="also write JUnit XML here")
    rep.add_argument("--no-jax", action="store_true", help="skip the jax.jit reference")
    rep.set_defaults(func=cmd_replay)

    be = sub.add_parser(
        "backends",
        help="list every backend: is it available here, and why not",
        epilog="example:\n  python -m harness backends",
    )
    be.set_defaults(func=cmd_backends)

    st = sub.add_parser("selftest", help="plant known bugs in a scratch copy; are they caught?")
    st.add_argument("--seconds", type=arg.seconds, default=60.0, help="budget per planted bug")
    st.add_argument(
        "--only",
        type=arg.mutations,
        default="",
        help="comma-separated mutation names (default: all)",
    )
    st.add_argument("--workers", type=arg.workers, default=1, help="driver processes, or 'auto'")
    st.add_argument("--seed", type=int, default=1, help="the fuzz sessions' seed")
    st.set_defaults(func=cmd_selftest)

    mu = sub.add_parser("mutate", help="random compiler mutants: how many does fuzzing kill?")
    mu.add_argument("--count", type=arg.count, default=10, help="mutants to draw")
    mu.add_argument("--seconds", type=arg.seconds, default=60.0, help="fuzz budget per mutant")
    mu.add_argument("--seed", type=int, default=1, help="fixes the mutants drawn")
    mu.add_argument("--workers", type=arg.workers, default=1, help="fuzz drivers per mutant")
    mu.add_argument("--files", default="compiler/**/*.py", help="which files to mutate (a glob)")
    mu.add_argument(
        "--sample", choices=["full", "small"], default="full",
        help="the equivalence sample: full (an op sweep and 64 programs run on every backend) or "
        "small (12 random programs run; a quick look)",
    )  # fmt: skip
    mu.add_argument("--json", default="", help="also write every mutant, diff and status here")
    mu.set_defaults(func=cmd_mutate)

    ex = sub.add_parser("export", help="write an upstream-ready bug report for a corpus entry")
    ex.add_argument("file", help="a corpus entry (JSON)")
    ex.add_argument("--format", choices=["md", "json"], default="md", help="the report's format")
    ex.add_argument("--out", default="", help="write report and reproducer files in this folder")
    ex.set_defaults(func=cmd_export)

    rr = sub.add_parser("repro", help="write a corpus entry's .mlir files and commands.sh")
    rr.add_argument("file", help="a corpus entry (JSON)")
    rr.add_argument("--mlir", required=True, help="the folder to write them in")
    rr.set_defaults(func=cmd_repro)

    rp = sub.add_parser("report", help="rewrite the HTML/JSON report from the corpus")
    rp.add_argument("--corpus", default="corpus", help="the corpus to list")
    rp.add_argument("--summary", default="report/summary.json", help="a session's summary")
    rp.add_argument("--out", default="report", help="the report directory")
    rp.set_defaults(func=cmd_report)

    args = parser.parse_args(argv)
    return args.func(args)
