"""A fuzzing session: Hypothesis draws cases, the runner judges them, findings are shrunk,
minimized, bisected and saved to the corpus.

Each driver process runs Hypothesis rounds of a few dozen examples with its own seed. The test
function raises only for a failure not yet in the corpus, so Hypothesis shrinks that one and the
session goes on with the next round. A found failure is written to the corpus at once,
unminimized (nothing is lost if the session dies while shrinking), and replaced by its minimized
form when minimization ends. A failure that matches an entry marked ``fixed`` is a regression:
the entry is marked ``regressed`` and the session reports it. ``--workers N`` runs N drivers;
they share the corpus and the Hypothesis database, both safe for concurrent writers.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import CPU_BACKENDS, Case
from ..corpus import Corpus, Entry
from ..oracles import ORACLES
from ..oracles.base import Finding
from ..run.runner import Runner, Stats
from ..run.task import Task
from ..triage.attribution import Attributor
from ..triage.minimize import minimize
from ..triage.signature import Signature


@dataclass
class FuzzOptions:
    seconds: float = 60.0
    backends: tuple[str, ...] = CPU_BACKENDS
    workers: int = 1
    seed: int | None = None
    corpus: Path = Path("corpus")
    max_nodes: int = 6
    use_jax: bool = True
    skip_oracles: tuple[str, ...] = ()
    stop_on_first: bool = False
    shrink_seconds: float = 30.0
    minimize_seconds: float = 60.0
    timeout: float = 120.0
    examples_per_round: int = 40
    rounds: int | None = None  # a fixed number of rounds instead of the time box
    mix: str = "all"  # which cases: "all", or "programs" (random programs only)
    database: Path | None = Path(".hypothesis/examples")
    quiet: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class _Found(Exception):
    """Raised inside the Hypothesis test so that it shrinks a new failure."""


class _ShrinkBudgetSpent(Exception):
    """Raised for every example once shrinking has used its budget, so Hypothesis stops."""


def finding_entry(
    case: Case,
    finding: Finding,
    status: str = "open",
    minimization: dict[str, Any] | None = None,
    mlir: dict[str, Any] | None = None,
    attribution: dict[str, Any] | None = None,
) -> Entry:
    """The corpus entry for a finding (with its standalone reproducers and evidence)."""
    from ..report.reproducer import reproducer, tool_versions

    mlir = dict(mlir or {})
    if finding.result is not None and finding.result.module:
        mlir.update(
            failing_stage=finding.result.stage,
            failing_pipeline=finding.result.pipeline,
            module=finding.result.module,
        )
    evidence = {}
    if finding.stderr:
        evidence["stderr"] = finding.stderr
    if finding.stage:
        evidence["stage"] = finding.stage
    if attribution:
        evidence["attribution"] = attribution
    return Entry(
        case={"case": case.to_dict(), "oracle": finding.oracle},
        signature=finding.signature.to_dict(),
        size=case.size,
        status=status,
        detail=finding.detail,
        reproducer=reproducer(case, finding),
        mlir=mlir,
        versions=tool_versions(),
        minimization=minimization or {},
        evidence=evidence,
    )


class Driver:
    """One fuzzing process: a runner, a corpus, Hypothesis rounds."""

    def __init__(self, options: FuzzOptions, index: int, events: Any = None) -> None:
        self.options = options
        self.index = index
        self.events = events
        self.corpus = Corpus(options.corpus)
        self.runner = Runner(
            self.corpus,
            name=f"driver{index}-{os.getpid()}",
            timeout=options.timeout,
            use_jax=options.use_jax,
            skip=options.skip_oracles,
        )
        self.known: list[tuple[Signature, Entry]] = []
        for e in self.corpus.entries():  # an unreadable file is named once, then left out
            if isinstance(e, Entry):
                self.known.append((Signature.from_dict(e.signature), e))
            elif index == 0:
                print(f"skipping unreadable corpus file: {str(e)!r}", file=sys.stderr)
        self.saved: list[str] = []
        self.total = Stats()  # everything this driver ran
        self.ambiguities: list[str] = []
        base = options.seed if options.seed is not None else random.randrange(2**31)
        self.seed = base + 7919 * index
        self.first_finding_at: float | None = None
        self.start = time.perf_counter()

    # -- events to the parent ---------------------------------------------------------------
    def publish(self, kind: str, payload: Any) -> None:
        if self.events is not None:
            self.events.put((self.index, kind, payload))

    def _flush_stats(self) -> None:
        stats = self.runner.stats.to_dict()
        self.total.merge(stats)
        self.publish("stats", stats)
        self.runner.stats = Stats()

    # -- evaluation ---------------------------------------------------------------------------
    def judge(self, case: Case) -> list[Finding]:
        judgement = self.runner.evaluate(case)
        self.ambiguities.extend(judgement.ambiguities[:1])
        return judgement.findings

    def known_as(self, finding: Finding) -> Entry | None:
        """The corpus entry this finding is already known as (open or fixed), if any."""
        signature = finding.signature
        for known, entry in self.known:
            if known.covers(signature):
                return entry
        return None

    def is_new(self, finding: Finding) -> bool:
        """Not in the corpus, or in it as fixed (then it is a regression: reported)."""
        entry = self.known_as(finding)
        return entry is None or entry.status == "fixed"

    def predicate(self, restrict: Finding):
        """For the minimizer: run a candidate on the failing backends with the finding's oracle."""
        oracle = restrict.oracle
        only = (oracle,) if oracle in ORACLES and not ORACLES[oracle].primary else ()
        if restrict.kind in ("nondeterministic", "retrace", "aliasing"):
            only = ("determinism",)

        def check(candidate: Case) -> Finding | None:
            failing = tuple(b for b in candidate.backends if b in restrict.backends)
            candidate = candidate.on(failing or candidate.backends)
            judgement = self.runner.evaluate(candidate, only)
            for f in judgement.findings:
                if f.signature.matches(restrict.signature):
                    return f
            return None

        return check

    # -- the session ----------------------------------------------------------------------
    def run(self) -> None:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hypothesis_seed

        from .generate import cases

        self.recover_pending()
        self.replay_fixed()
        deadline = self.start + self.options.seconds
        strategy = cases(self.options.backends, self.options.max_nodes, self.options.mix)
        database = None
        if self.options.database is not None:
            from hypothesis.database import DirectoryBasedExampleDatabase

            database = DirectoryBasedExampleDatabase(str(self.options.database))
        round_number = 0
        harness_errors = 0
        last_flush = time.perf_counter()
        while (
            time.perf_counter() < deadline
            if self.options.rounds is None
            else round_number < self.options.rounds
        ):
            round_number += 1
            state: dict[str, Any] = {"target": None, "best": None, "found_at": None, "others": []}

            def test(case: Case) -> None:
                nonlocal last_flush
                now = time.perf_counter()
                if state["target"] is not None:
                    if now - state["found_at"] > self.options.shrink_seconds:
                        raise _ShrinkBudgetSpent()
                elif now >= deadline and self.options.rounds is None:
                    return
                findings = self.judge(case)
                if now - last_flush > 1.0:
                    self._flush_stats()
                    last_flush = now
                for finding in findings:
                    target = state["target"]
                    if target is None:
                        if not self.is_new(finding):
                            continue
                        state.update(target=finding, found_at=time.perf_counter())
                        state["best"] = (case, finding, self.record_raw(case, finding))
                        raise _Found(finding.kind)
                    if finding.signature.matches(target.signature):
                        if case.size < state["best"][0].size:
                            state["best"] = (case, finding, state["best"][2])
                        raise _Found(finding.kind)
                    if self.is_new(finding):
                        state["others"].append((case, finding, self.record_raw(case, finding)))

            wrapped = settings(
                max_examples=self.options.examples_per_round,
                deadline=None,
                database=database,
                suppress_health_check=list(HealthCheck),
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
                print_blob=False,
                report_multiple_bugs=False,
            )(given(strategy)(test))
            wrapped = hypothesis_seed(self.seed * 1000 + round_number)(wrapped)
            try:
                wrapped()
            except (_Found, _ShrinkBudgetSpent):
                pass
            except Exception as error:  # noqa: BLE001 - a harness bug: report, do not spin
                if state["target"] is None:
                    self.publish(
                        "harness-error", "".join(traceback.format_exception(error))[-4000:]
                    )
                    harness_errors += 1
                    if harness_errors >= 3:
                        break
                    continue
            best = [state["best"]] if state["best"] else []
            for case, finding, raw in best + state["others"]:
                self.finish(case, finding, raw)
                if self.options.stop_on_first:
                    self._flush_stats()
                    return
        self._flush_stats()

    def record_raw(self, case: Case, finding: Finding) -> tuple[Path, ...]:
        """Save a failure before shrinking: a kill during minimization loses nothing. A failure
        of a fixed entry marks that entry ``regressed``."""
        if self.first_finding_at is None:
            self.first_finding_at = time.perf_counter() - self.start
            self.publish("first-finding", self.first_finding_at)
        known = self.known_as(finding)
        if known is not None and known.status == "fixed":
            known.status = "regressed"
            known.detail = f"regressed: {finding.detail}\n(was fixed) {known.detail}"
            self.corpus.update(known)
            self.publish("regression", {"path": str(known.path), "kind": finding.kind})
            self.saved.append(str(known.path))
            return ()
        entry = finding_entry(case, finding, status="open", minimization={"state": "unminimized"})
        stored, path = self.corpus.save(entry)
        self.known.append((finding.signature, entry))
        return (path,) if stored else ()

    def finish(self, case: Case, finding: Finding, raw_paths: tuple[Path, ...] = ()) -> None:
        """Minimize, bisect, save; then drop the unminimized record."""
        if not raw_paths and self.known_as(finding) is not None:
            return  # a regression (recorded on its entry) or a duplicate of a saved finding
        predicate = self.predicate(finding)
        result = minimize(case, finding, predicate, self.options.minimize_seconds)
        try:
            attribution = Attributor(self.runner).attribute(result.case, result.finding).to_dict()
        except Exception as error:  # noqa: BLE001 - the finding is kept without it
            attribution = {"layer": "unknown", "detail": f"attribution failed: {error!r}"}
        entry = finding_entry(
            result.case,
            result.finding,
            mlir=self.artifacts_of(result.case, result.finding),
            minimization={
                "state": "minimized",
                "steps": result.steps,
                "evaluations": result.evaluations,
                "seconds": round(result.seconds, 2),
                "original_nodes": len(case.subject),
                "nodes": len(result.case.subject),
            },
            attribution=attribution,
        )
        stored, path = self.corpus.save(entry, supersedes=raw_paths)
        self.known.append((result.finding.signature, entry))
        for raw in raw_paths:
            if raw != path and raw.exists():
                raw.unlink()
        if stored:
            self.saved.append(str(path))
        self.publish(
            "finding",
            {
                "kind": result.finding.kind,
                "backends": list(result.finding.backends),
                "oracle": result.finding.oracle,
                "nodes": len(result.case.subject),
                "path": str(path),
                "new": stored,
                "detail": result.finding.detail[:200],
                "first_at": self.first_finding_at,
                "layer": attribution.get("layer", "unknown"),
            },
        )

    def artifacts_of(self, case: Case, finding: Finding) -> dict[str, Any]:
        """Every stage's text and command on the failing backend (built in the isolated worker:
        a stage that crashes there leaves the built module and the error)."""
        if case.invalid is not None or not finding.backends:
            return {}
        task = Task(case, (finding.backends[0],), kind="artifacts")
        outcome = self.runner.worker.run(task)
        if outcome.status == "ok":
            return outcome.value.artifacts
        return {"error": outcome.detail[:500], "stderr": outcome.stderr[-2000:]}

    def replay_fixed(self) -> None:
        """Entries marked fixed are regression tests: driver 0 replays them first, and one that
        fails again is marked ``regressed`` and reported (libFuzzer runs its corpus first too)."""
        if self.index != 0:
            return
        from ..replay import reproduce

        for _, entry in list(self.known):
            if entry.status != "fixed" or entry.path is None:
                continue
            try:
                finding = reproduce(entry, self.runner)
            except Exception as error:  # noqa: BLE001 - an entry that cannot run is reported
                self.publish("harness-error", f"replaying {entry.path}: {error!r}")
                continue
            if finding is not None:
                self.record_raw(finding.case, finding)

    def recover_pending(self) -> None:
        """Cases in flight when an earlier session died: run them again, record what fails."""
        if self.index != 0:
            return
        for path, task in self.corpus.leftover_pending():
            try:
                case = Case.from_dict(task["case"])
            except Exception:  # noqa: BLE001 - unreadable leftovers are kept for a person
                continue
            path.unlink()
            for finding in self.judge(case):
                if self.is_new(finding):
                    self.finish(case, finding, self.record_raw(case, finding))

    def close(self) -> None:
        self.runner.close()


def _drive(options: FuzzOptions, index: int, events: Any) -> None:
    driver = Driver(options, index, events)
    try:
        driver.run()
    except Exception:  # noqa: BLE001
        events.put((index, "harness-error", traceback.format_exc()[-4000:]))
    finally:
        events.put((index, "ambiguities", driver.ambiguities[:20]))
        driver.close()
        events.put((index, "done", driver.saved))


def session(options: FuzzOptions, on_event: Any = None) -> dict[str, Any]:
    """Run ``options.workers`` drivers for ``options.seconds``; returns the session summary."""
    context = mp.get_context("spawn")
    events: Any = context.Queue()
    processes = [
        context.Process(target=_drive, args=(options, i, events), daemon=False)
        for i in range(options.workers)
    ]
    for p in processes:
        p.start()
    stats = Stats()
    findings: list[dict[str, Any]] = []
    regressions: list[dict[str, Any]] = []
    errors: list[str] = []
    ambiguities: list[str] = []
    first: float | None = None
    done = 0
    start = time.perf_counter()
    hard_deadline = start + options.seconds + options.shrink_seconds + 4 * options.minimize_seconds
    hard_deadline += 120
    while done < len(processes):
        try:
            index, kind, payload = events.get(timeout=0.5)
        except queue_module.Empty:
            if time.perf_counter() > hard_deadline or not any(p.is_alive() for p in processes):
                break
            if on_event:
                on_event("tick", stats, findings)
            continue
        if kind == "stats":
            stats.merge(payload)
        elif kind == "finding":
            findings.append(payload)
            if options.stop_on_first:
                for p in processes:
                    if p.is_alive() and p is not processes[index]:
                        p.terminate()
        elif kind == "regression":
            regressions.append(payload)
        elif kind == "first-finding":
            first = payload if first is None else min(first, payload)
        elif kind == "harness-error":
            errors.append(payload)
        elif kind == "ambiguities":
            ambiguities.extend(payload)
        elif kind == "done":
            done += 1
        if on_event:
            on_event(kind, stats, findings)
    for p in processes:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    return {
        "seconds": time.perf_counter() - start,
        "stats": stats.to_dict(),
        "findings": findings,
        "regressions": regressions,
        "harness_errors": errors,
        "ambiguities": ambiguities,
        "first_finding_seconds": first,
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in options.__dict__.items()},
        "python": sys.version.split()[0],
    }


__all__ = ["Driver", "FuzzOptions", "finding_entry", "session"]
