"""A fuzzing session: Hypothesis draws cases, the runner judges them, findings are shrunk,
minimized, bisected and saved to the corpus.

Each driver process runs Hypothesis rounds of a few dozen examples with its own seed. The test
function raises only for a failure not yet in the corpus, so Hypothesis shrinks that one and the
session goes on with the next round. A found failure is written to the corpus at once,
unminimized (nothing is lost if the session dies while shrinking), and replaced by its minimized
form when minimization ends. A failure that matches an entry marked ``fixed`` is a regression:
the entry is marked ``regressed`` and the session reports it. ``--workers N`` runs N drivers
(started and merged by ``parent.session``); they share the corpus and the Hypothesis database,
both safe for concurrent writers.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import random
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..case import CPU_BACKENDS, SIBLINGS, Case, Earlier
from ..corpus import Corpus, Entry
from ..coverage import novelty
from ..oracles.base import Finding
from ..run.isolation import PROFILE_VARIABLE as WORKER_PROFILE_VARIABLE
from ..run.isolation import die_with_parent, release_signals, request_stop, stop_requested
from ..run.runner import Runner, Stats, Stopped
from ..run.task import Task
from ..triage.attribution import Attributor
from ..triage.export import PROCESS_STATE
from ..triage.history import needed_earlier, recurs_after
from ..triage.minimize import Minimized, minimize
from .admission import Admission
from .known import Known

#: The growth of a driver's memory past its settled size (``FuzzOptions.driver_growth``) at which
#: the session starts a new process in its place, handing it the driver's state, as the
#: isolated workers are replaced every ``RECYCLE_AFTER`` tasks. A driver's RSS rose 14% from
#: five minutes to an hour (320 -> 365 MiB), most of it not Python's: under tracemalloc one
#: driver's Python allocations grew 2.4 MiB a minute (the largest growing sites: the Hypothesis
#: round in progress) while a session's drivers gained about 10 MiB of anonymous memory a minute
#: in their first five; 1,800 JAX references in a loop grew no more than drawing the cases alone.
DRIVER_GROWTH = 0.08


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
    database: Path | str | None = Path(".hypothesis/examples")  # a folder, or redis://HOST:PORT
    quiet: bool = False
    relay: bool = False  # a Dask shard: drivers publish write-aheads and corpus writes (session)
    extra: dict[str, Any] = field(default_factory=dict)
    #: compiler workarounds for upstream bugs turned off on every case (``--disable-workaround``):
    #: the session then rediscovers the bugs they avoid, and its findings carry the setting.
    disable_workarounds: tuple[str, ...] = ()
    #: a share of the cases start from an (op, dtype) pair not exercised yet (``focus_cases``)
    focus: bool = True
    #: each case's program judged again on values of other regimes (``generate.siblings``)
    siblings: int = SIBLINGS
    #: Hypothesis's span-duplication mutator on (``span_duplication``: off by default)
    duplicate_spans: bool = False
    #: a driver whose RSS grew past this share of its settled size (its RSS once it has run
    #: ``settle_seconds``) hands its state to a new process (``DRIVER_GROWTH``); None: never
    driver_growth: float | None = DRIVER_GROWTH
    settle_seconds: float = 300.0


def describe_error(error: BaseException, limit: int = 4000) -> str:
    """A harness error's traceback, its end (where it was raised) kept whole: Hypothesis notes
    the strategy it was drawing from, a repr of the whole session mix that filled the kept tail
    and hid the error (a compiler rule that raised while a case was generated)."""
    notes = list(getattr(error, "__notes__", ()))
    if notes:
        del error.__notes__
    try:
        text = "".join(traceback.format_exception(error))
    finally:
        if notes:
            error.__notes__ = notes
    note = "\n".join(notes)[:300]
    return text[-(limit - len(note) - 1) :] + ("\n" + note if note else "")


#: A ``GUIDED_EVERY``-th of the cases are judged in rounds with Hypothesis's target phase
#: (``guided``).
GUIDED_EVERY = 4


def guided(judged_guided: int, judged: int) -> bool:
    """Whether the next round has Hypothesis's target phase, given the cases the driver judged
    so far (``judged``) and those of them in guided rounds: while fewer than a
    ``GUIDED_EVERY``-th of them were. The target phase spends the second half of its round
    hill-climbing from the best cases so far. In every round, 40-second sessions (seeds 5-7)
    ran 41, 28 and 22 distinct programs where unguided ones ran 50, 36 and 46, and a planted
    bool-to-float cast bug was found only unguided. A guided round runs to its end (the target
    phase comes last), where an unguided one may end early (``_RoundOver``): one round in four,
    as it was, gave the guided rounds two thirds of the cases."""
    if os.environ.get("HARNESS_UNGUIDED") == "1":
        return False
    return judged_guided * GUIDED_EVERY < judged


class _Found(Exception):
    """Raised inside the Hypothesis test so that it shrinks a new failure."""


class _ShrinkBudgetSpent(Exception):
    """Raised for every example once shrinking has used its budget, so Hypothesis stops."""


class _RoundOver(BaseException):
    """Raised through Hypothesis (a BaseException: not a failure to shrink) to end a round
    whose focus went stale (``Admission.focus_went_stale``); the session's example database is
    muted meanwhile (``_Mutable``)."""


def _mutable(database: Any) -> Any:
    """``database`` behind a switch that drops its saves: Hypothesis saves the case of any
    exception that ends a test, so each round ended by ``_RoundOver`` would store its stale case
    (tens a session), and every later round, of the session and of the next ones, would replay
    them all first."""
    if database is None:
        return None
    from hypothesis.database import ExampleDatabase

    class _Mutable(ExampleDatabase):
        def __init__(self) -> None:
            super().__init__()
            self.muted = False

        def save(self, key: bytes, value: bytes) -> None:
            if not self.muted:
                database.save(key, value)

        def fetch(self, key: bytes) -> Any:
            return database.fetch(key)

        def delete(self, key: bytes, value: bytes) -> None:
            database.delete(key, value)

        def move(self, src: bytes, dest: bytes, value: bytes) -> None:
            database.move(src, dest, value)

    return _Mutable()


def _only_found(error: BaseException) -> bool:
    """Is ``error`` (or every exception of its group: Hypothesis's ``FlakyFailure`` when a
    replay met another finding) one of the session's own signals?"""
    if isinstance(error, BaseExceptionGroup):
        return all(_only_found(e) for e in error.exceptions)
    return isinstance(error, (_Found, _ShrinkBudgetSpent))


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
    if (minimization or {}).get("earlier"):  # what it needs run first in its process
        evidence["earlier"] = [record.to_dict() for record in finding.before]
    return Entry(
        case={"case": case.to_dict(), "oracle": finding.oracle},
        signature=finding.signature.to_dict(),
        size=case.size,
        status=status,
        detail=finding.detail,
        reproducer=reproducer(case, finding, evidence.get("earlier", ())),
        mlir=mlir,
        versions=tool_versions(),
        minimization=minimization or {},
        evidence=evidence,
    )


def _rss() -> int | None:
    """This process's resident set, in bytes (None where psutil cannot tell)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # noqa: BLE001 - no number: no recycling
        return None


class Driver(Admission):
    """One fuzzing process: a runner, a corpus, Hypothesis rounds (which drawn cases it judges:
    ``Admission``). ``handoff``: the state of the previous process of this driver's slot,
    which handed over when its memory had grown (``handoff()``)."""

    def __init__(
        self, options: FuzzOptions, index: int, events: Any = None, handoff: dict | None = None
    ) -> None:
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
        if options.relay and events is not None:
            from ..distributed.relay import relay

            relay(self)  # a shard's writes travel to the campaign's client as they happen
        self.known = Known(self.corpus, announce=index == 0)
        self.saved: list[str] = []
        self.cell_counts: dict[str, int] = {}  # coverage so far, for steering
        self.init_admission()
        self.total = Stats()  # everything this driver ran
        self.ambiguities: list[str] = []
        base = options.seed if options.seed is not None else random.randrange(2**31)
        self.first_finding_at: float | None = None
        self.start = time.perf_counter()  # (CLOCK_MONOTONIC: one clock for every process)
        self.generation = 0  # processes of this slot before this one
        self.judged_counts = (0, 0)  # cases judged, and in guided rounds (``guided``)
        self.settled: int | None = None  # the slot's RSS once settled (``recycle_due``)
        self.recycled = False  # run() ended to hand over (``handoff``)
        if handoff:
            self.generation = handoff["generation"]
            self.start = handoff["start"]
            self.first_finding_at = handoff["first_finding_at"]
            self.judged_counts = handoff["judged_counts"]
            self.cell_counts = handoff["cell_counts"]
            self.settled = handoff["settled"]
            self.restore_admission(handoff["admission"])
        self.seed = base + 7919 * index + 104_729 * self.generation
        self.born = time.perf_counter()

    def recycle_due(self) -> bool:
        """Whether this process's memory grew past ``driver_growth`` of its slot's settled size
        (the RSS of the slot's first process after ``settle_seconds``; each later process is
        held to it too, and lives ``settle_seconds`` at least): the session then starts another
        in its place (``handoff``). With a bound of each process's own, two drivers' slots
        were 9.8% above their five-minute size after 16 minutes (4 processes). Not
        in a fixed number of rounds (a pytest shard's), nor in a Dask campaign's shard, whose
        client follows each driver's messages to its "done"."""
        growth = self.options.driver_growth
        if growth is None or self.options.rounds is not None or self.options.relay:
            return False
        if time.perf_counter() - self.born < self.options.settle_seconds:
            return False
        rss = _rss()
        if rss is None:
            return False
        if self.settled is None:
            self.settled = rss
        return rss > self.settled * (1 + growth)

    def handoff(self) -> dict[str, Any]:
        """What the next process of this slot starts from: the focus and repeat bookkeeping,
        the coverage that steers, the session's clock and this slot's generation (its seeds
        are new)."""
        return {
            "generation": self.generation + 1,
            "start": self.start,
            "first_finding_at": self.first_finding_at,
            "judged_counts": self.judged_counts,
            "cell_counts": self.cell_counts,
            "settled": self.settled,
            "admission": self.admission_state(),
        }

    # -- events to the parent ---------------------------------------------------------------
    def publish(self, kind: str, payload: Any) -> None:
        if self.events is not None:
            self.events.send((self.index, kind, payload))

    def _flush_stats(self) -> None:
        stats = self.runner.stats.to_dict()
        self.total.merge(stats)
        self.publish("stats", stats)
        self.runner.stats = Stats()

    # -- evaluation ---------------------------------------------------------------------------
    def judge(self, case: Case, siblings: tuple[Case, ...] = ()) -> list[Finding]:
        """All oracles on ``case``, then the primary ones on each of its ``siblings`` (the same
        program on other values: ``generate.siblings``) until one finds something new; the
        write-ahead record (the case, then the sibling being judged) stays until
        ``runner.release()``. The focus items the case exercised are counted (in every spelling
        where the spelling oracle ran); siblings count as such, not as cases."""
        from .focus import exercised_items

        self.runner.hold = True
        try:
            judgement = self.runner.evaluate(case)
            findings = list(judgement.findings)
            for sibling in siblings:
                if any(self.is_new(f) for f in findings):
                    break
                judged = self.runner.evaluate(sibling, (), sibling=True)
                findings += judged.findings
                self.ambiguities.extend(judged.ambiguities[:1])
        finally:
            self.runner.hold = False
        self.ambiguities.extend(judgement.ambiguities[:1])
        self._steer(judgement)
        self.note_exercised(exercised_items(case, "spelling" in judgement.oracles))
        return findings

    #: Whether the round in progress has Hypothesis's target phase (``guided``).
    steering = True

    def _steer(self, judgement: Any) -> None:
        """Point Hypothesis's target phase at the cases closest to failing (the largest error
        as a fraction of its bound) and at the rarest coverage cells so far. ``HARNESS_UNGUIDED=1``
        turns it off, to measure what it buys (README, Using the harness). A round without the
        target phase observes nothing: Hypothesis would keep each observed case in its Pareto
        front of targets and write it to the example database (the front's upkeep took 3-10% of
        a driver's time, 0.14 s a case of a few thousand choices), which only that phase and
        the replays of later rounds use."""
        from hypothesis import target
        from hypothesis.errors import InvalidArgument

        if os.environ.get("HARNESS_UNGUIDED") == "1":
            return
        cells = self.runner.last_cells
        score = novelty(cells, self.cell_counts)
        for cell in cells:
            self.cell_counts[cell] = self.cell_counts.get(cell, 0) + 1
        if not self.steering:
            return
        margin = max(judgement.margins.values(), default=0.0)
        try:
            target(min(float(margin), 1e6) if margin == margin else 1e6, label="error/bound")
            target(score, label="coverage novelty")
        except InvalidArgument:
            pass  # outside a Hypothesis test (replaying, minimizing)

    def known_as(self, finding: Finding) -> Entry | None:
        """The corpus entry this finding is already known as (open or fixed), if any."""
        return self.known.entry_of(finding)

    def is_new(self, finding: Finding) -> bool:
        """Not in the corpus, or in it as fixed (then it is a regression: reported)."""
        entry = self.known_as(finding)
        return entry is None or entry.status == "fixed"

    def predicate(self, restrict: Finding):
        """For the minimizer: run a candidate on the failing backends with the finding's oracle
        (forced as a replay forces it: a ``spelling[methods]`` finding runs ``spelling``, which
        its own name, not a registered one, had left out, so no such finding ever reproduced)."""
        from ..replay import MINIMIZE_RACE_RUNS, oracles_of, recurring

        only = oracles_of(restrict.signature, restrict.detail)

        def check(candidate: Case) -> Finding | None:
            signature = restrict.signature  # judged on its backends (``recurring``)
            return recurring(self.runner, candidate, signature, only, MINIMIZE_RACE_RUNS)[0]

        return check

    # -- the session ----------------------------------------------------------------------
    def run(self) -> None:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hypothesis_seed

        from .generate import cases, with_siblings

        if self.generation == 0:
            # Not in a later process of the slot: the first did these, and the entry another
            # driver is minimizing now is an unminimized entry too.
            self.recover_pending()
            self.resume_unminimized()
            self.replay_fixed()
        deadline = self.start + self.options.seconds
        database = _mutable(example_database(self.options.database))
        round_number = 0
        judged, judged_guided = self.judged_counts
        harness_errors = 0
        last_flush = time.perf_counter()
        while not stop_requested() and (
            time.perf_counter() < deadline
            if self.options.rounds is None
            else round_number < self.options.rounds
        ):
            if self.recycle_due():
                self.judged_counts = (judged, judged_guided)
                self.recycled = True
                break
            round_number += 1
            is_guided = self.steering = guided(judged_guided, judged)
            # A round of a time-boxed session ends early once its focus went stale, unless it is
            # guided (its target phase comes last); a fixed number of rounds (a pytest shard's
            # one round of --fuzz-examples) runs each to its end.
            ends_early = self.options.rounds is None and not is_guided
            state: dict[str, Any] = {
                "target": None, "best": None, "found_at": None, "others": [], "judged": 0,
            }  # fmt: skip
            # Fixed for the round (a replay while shrinking sees the same strategy).
            focus = self.focus_pairs()
            done_before = len(self.exercised.intersection(focus))
            strategy = cases(
                self.options.backends,
                self.options.max_nodes,
                self.options.mix,
                focus=focus,
                focus_regimes=self.focus_regimes(),
                held_back=self.mix.ahead() if self.mix is not None else (),
            )
            if self.options.disable_workarounds:
                off = tuple(sorted(self.options.disable_workarounds))
                strategy = strategy.map(lambda case: replace(case, workarounds_off=off))
            drawn = with_siblings(strategy, self.options.siblings)

            def test(pair: tuple[Case, tuple[Case, ...]]) -> None:
                nonlocal last_flush
                case, siblings = pair
                now = time.perf_counter()
                if stop_requested():
                    raise Stopped()
                if state["target"] is not None:
                    if now - state["found_at"] > self.options.shrink_seconds:
                        raise _ShrinkBudgetSpent()
                elif now >= deadline and self.options.rounds is None:
                    return
                elif self.stale_focus(case, focus):
                    self.runner.stats.focus_skipped += 1
                    if ends_early and self.focus_went_stale(case, focus):
                        if database is not None:
                            database.muted = True
                        raise _RoundOver()
                    return
                elif self.repeated(case):
                    self.runner.stats.repeats_skipped += 1
                    return
                elif self.mix is not None and not self.mix.admit(case):
                    self.runner.stats.mix_skipped += 1
                    return
                self.note_judged(case)
                state["judged"] += 1
                findings = self.judge(case, siblings)
                if now - last_flush > 1.0:
                    self._flush_stats()
                    last_flush = now
                try:
                    self._consider(findings, state)
                finally:
                    self.runner.release()  # every finding of this case is recorded

            # The seed first: ``@seed`` drops the database from the settings it finds, so the
            # settings (with the database) are applied after it.
            wrapped = hypothesis_seed(self.seed * 1000 + round_number)(given(drawn)(test))
            wrapped = settings(
                max_examples=self.options.examples_per_round,
                deadline=None,
                database=database,
                suppress_health_check=list(HealthCheck),
                phases=[Phase.explicit, Phase.reuse, Phase.generate]
                + ([Phase.target] if is_guided else [])
                + [Phase.shrink],
                print_blob=False,
                report_multiple_bugs=False,
            )(wrapped)
            try:
                with span_duplication(
                    self.options.duplicate_spans or os.environ.get("HARNESS_MUTATOR") == "on"
                ):
                    wrapped()
            except (_Found, _ShrinkBudgetSpent):
                pass
            except _RoundOver:
                if database is not None:
                    database.muted = False
            except Exception as error:  # noqa: BLE001 - a harness bug: report, do not spin
                if not _only_found(error):  # "flaky": replays met other findings, no error
                    # Reported even while a finding was being shrunk: saving a finding that
                    # raised used to vanish here (the case counted as a finding, no entry).
                    self.publish("harness-error", describe_error(error))
                    harness_errors += 1
                    if harness_errors >= 3:
                        break
            judged += state["judged"]
            judged_guided += state["judged"] if is_guided else 0
            if state["target"] is None:  # (no finding: nothing to finish below)
                self._focus_progress(focus, done_before)
            best = [state["best"]] if state["best"] else []
            for case, finding, raw in best + state["others"]:
                self.finish(case, finding, raw)
                if self.options.stop_on_first:
                    self._flush_stats()
                    return
        self._flush_stats()

    def _consider(self, findings: list[Finding], state: dict[str, Any]) -> None:
        """Record what is new; raise _Found so Hypothesis shrinks the round's target. A finding
        is kept with its own case: a derived case that fails alone (an intermediate value's
        program, a related case that crashed) is the reproducer, not the case it came from."""
        for finding in findings:
            own = finding.case
            target = state["target"]
            if target is None:
                if not self.is_new(finding):
                    continue
                raw = self.record_raw(own, finding)  # raising here is a harness error
                state.update(target=finding, found_at=time.perf_counter())
                state["best"] = (own, finding, raw)
                raise _Found(finding.kind)
            if finding.signature.matches(target.signature):
                if own.size < state["best"][0].size:
                    state["best"] = (own, finding, state["best"][2])
                raise _Found(finding.kind)
            if self.is_new(finding):
                state["others"].append((own, finding, self.record_raw(own, finding)))

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
            self._found(finding, known.path, regression=True)
            self.saved.append(str(known.path))
            return ()
        entry = finding_entry(case, finding, status="open", minimization={"state": "unminimized"})
        # Named now, not after minimization: a sibling driver that meets the same known bug
        # meanwhile (on another op) must see this record as covering it (a 90 s two-driver
        # IREE session stored f64-libm-link twice, the second while the first was minimized).
        if name := self.known.issue_name(finding):
            entry.evidence["known_issue"] = name
        stored, path = self.corpus.save(entry)
        first = self.known.saved_before(finding, path) if stored else None
        if first is not None:  # a sibling driver saved this bug at the same moment
            path.unlink(missing_ok=True)
            stored, path = False, first.path
        self._found(finding, path, new=stored)  # not stored: another driver saved it first
        if first is None:
            self.known.add(finding.signature, entry)
        return (path,) if stored else ()

    def _found(
        self, finding: Finding, path: Path | None, regression: bool = False, new: bool = True
    ) -> None:
        """Tell the session at once: its timeline is the time to each finding, not to the end
        of its minimization."""
        payload = {"kind": finding.kind, "backends": list(finding.backends), "path": str(path)}
        self.publish(
            "found", {**payload, "oracle": finding.oracle, "regression": regression, "new": new}
        )

    def finish(self, case: Case, finding: Finding, raw_paths: tuple[Path, ...] = ()) -> None:
        """Minimize, bisect, save; then drop the unminimized record."""
        if not raw_paths and self.known_as(finding) is not None:
            return  # a regression (recorded on its entry) or a duplicate of a saved finding
        predicate = self.predicate(finding)
        result = minimize(case, finding, predicate, self.options.minimize_seconds)
        earlier = None
        # Does the case fail again alone, in a new worker process? A crash whose stderr is
        # another kernel's (a bfloat16 vector abort on a float64 case) needed what its worker
        # had run before; so may a wrong answer, and its smaller candidates failed in the
        # process that still held that state: then the case found is the one kept.
        reproduced = recurs_after(self.runner, (), result.case, predicate)
        if not reproduced and result.steps:
            result = Minimized(case, finding, evaluations=result.evaluations,
                               seconds=result.seconds)  # fmt: skip
            reproduced = recurs_after(self.runner, (), case, predicate)
        if not reproduced:
            # In a new process after what the finding's process had run before it: the
            # fewest of those that bring it back are kept, and replayed first.
            # The case itself on all its backends last: its task compiled them in one process
            # (a stage memo that served cpu-vector cpu-loops' output failed only after that).
            records = (*finding.before, Earlier(case))
            seconds = self.options.minimize_seconds
            earlier = needed_earlier(self.runner, case, predicate, records, seconds)
            if earlier is None:
                result.finding.detail += (
                    "\n(not reproduced: run again alone, the case passed; the failure needed"
                    " what its worker had run before, or it is flaky)"
                )
        if earlier:
            # Kept with the finding: the entry stores them, its reproducer calls them first.
            result.finding.before = earlier
            result.finding.detail += (
                f"\n(reproduced after {len(earlier)} earlier case(s) in the same process, "
                "not alone: the case passes in a new process; replay runs them first)"
            )
            attribution = {
                "layer": PROCESS_STATE, "backend": "", "evidence": {}, "mlir": {},
                "detail": f"the case fails in a new worker process only after the {len(earlier)}"
                " earlier case(s) its entry keeps (evidence.earlier), not alone: state one "
                "process keeps between compiles",
            }  # fmt: skip
        elif not reproduced:
            # Variants of a case that passes alone prove nothing: a module cached under a
            # recycled key failed a later program with a Python error, and the error-path rule
            # named the frontend.
            attribution = {
                "layer": PROCESS_STATE, "backend": "", "evidence": {}, "mlir": {},
                "detail": "the case passes when run again alone: the failure needed what its "
                "worker had run before (state kept between compiles), or it is flaky",
            }  # fmt: skip
        else:
            try:
                attributor = Attributor(self.runner)
                attribution = attributor.attribute(result.case, result.finding).to_dict()
            except Exception as error:  # noqa: BLE001 - the finding is kept without it
                attribution = {"layer": "unknown", "detail": f"attribution failed: {error!r}"}
        minimization = {
            "state": "minimized",
            "steps": result.steps,
            "evaluations": result.evaluations,
            "seconds": round(result.seconds, 2),
            "original_nodes": len(case.subject),
            "nodes": len(result.case.subject),
            "reproduced": reproduced or bool(earlier),
        }
        if earlier:
            minimization["earlier"] = len(earlier)
        if result.finding.signature.to_dict() != finding.signature.to_dict():
            # A smaller case may fail with another output dtype or fewer ops and backends (an
            # earlier output, a bypassed cast): say what the record it replaces was found as.
            minimization["found_as"] = finding.signature.to_dict()
        artifacts = self.artifacts_of(result.case, result.finding)
        if stop_requested():
            # A ^C to the group kills the triage tools this process runs (mlir-opt, llc,
            # mlir-reduce) with the session: attribution would read a tool's SIGINT as its
            # crash, and the artifacts would be the stopped worker's error. The raw record
            # stays, unminimized, and the next session minimizes and attributes it again.
            raise Stopped()
        entry = finding_entry(
            result.case,
            result.finding,
            mlir=artifacts,
            minimization=minimization,
            attribution=attribution,
        )
        stored, path = self.corpus.save(entry, supersedes=raw_paths)
        self.known.add(result.finding.signature, entry)
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
                "raw": [str(raw) for raw in raw_paths],
                "new": stored,
                "detail": result.finding.detail[:200],
                "first_at": self.first_finding_at,
                "layer": attribution.get("layer", "unknown"),
            },
        )

    def artifacts_of(self, case: Case, finding: Finding) -> dict[str, Any]:
        """Every stage's text and command on the failing backend (built in the isolated worker:
        a stage that crashes there leaves the built module and the error). A finding on no
        compiled backend (the spec oracle's ``definition``) has none to build."""
        if case.invalid is not None or not finding.backends:
            return {}
        from compiler import backends

        try:
            backends.get(finding.backends[0])
        except ValueError:
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

        for _, entry in self.known:
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
        """Cases in flight when an earlier process died (its records, never a live one's): run
        them again, record what fails, then drop the record."""
        if self.index != 0:
            return
        from ..pending import claim, release

        for path, record in claim(self.corpus.directory):
            try:
                case = Case.from_dict(record["case"]) if record else None
            except Exception:  # noqa: BLE001 - an unreadable record is kept for a person
                case = None
            if case is None:
                path.rename(path.with_name("unreadable--" + path.name))
                continue
            for finding in self.judge(case):
                if self.is_new(finding):
                    self.finish(case, finding, self.record_raw(case, finding))
            self.runner.release()
            release(path)

    def resume_unminimized(self) -> None:
        """Entries an interrupted session saved but did not minimize: finish them now."""
        if self.index != 0:
            return
        for signature, entry in self.known:
            if entry.status != "open" or not entry.unminimized:
                continue
            try:
                case = Case.from_dict(entry.case["case"])
            except Exception:  # noqa: BLE001 - the loader checked it; a stale format stays
                continue
            found = [f for f in self.judge(case) if f.signature.matches(signature)]
            self.runner.release()
            if found and entry.path is not None:
                self.known.forget(entry)
                self.finish(case, found[0], (entry.path,))

    def close(self) -> None:
        self.runner.close()


#: Held while a driver starts (``isolation.signals_held``): a stop asked for while it is still
#: importing reaches its handler once installed, not Python's KeyboardInterrupt.
DRIVER_HELD = (signal.SIGTERM, signal.SIGINT)


def _drive(options: FuzzOptions, index: int, events: Any, handoff: dict | None = None) -> None:
    """One driver process: it dies with the session (``kill -9`` of the parent included), and
    on SIGTERM or SIGINT it gives up its task at once, keeping its write-ahead record. One
    whose memory grew (``Driver.recycle_due``) sends its ``handoff`` ("recycle") before "done":
    the session starts the next process of its slot from it."""
    die_with_parent()
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(0)  # the session died while this process was still starting (importing)
    for number in DRIVER_HELD:
        signal.signal(number, lambda *_: request_stop())
    release_signals(DRIVER_HELD)  # a stop that came while this process was importing: now
    driver = None
    profile = _profiler()
    try:
        driver = Driver(options, index, events, handoff)
        driver.run()
    except Stopped:
        pass
    except Exception:  # noqa: BLE001 - reported to the session, which exits 2
        _send(events, (index, "harness-error", traceback.format_exc()[-4000:]))
    finally:
        if profile is not None:  # first: the session stops a driver that lingers
            profile.disable()
            where = os.path.join(os.environ[PROFILE_VARIABLE], f"driver-{index}.prof")
            profile.dump_stats(where + ".tmp")
            os.replace(where + ".tmp", where)
        if driver is not None:
            try:
                driver._flush_stats()
            except (Stopped, OSError):
                pass
            _send(events, (index, "ambiguities", driver.ambiguities[:20]))
            driver.close()
            if driver.recycled and not stop_requested():
                _send(events, (index, "recycle", driver.handoff()))
        _send(events, (index, "done", driver.saved if driver is not None else []))
        events.close()


#: Where each driver of a session writes its cProfile statistics (``driver-N.prof``), if set:
#: where a driver's time goes (``python -m pstats``), the harness's own share among it (its
#: workers write theirs there too: ``run.isolation.PROFILE_VARIABLE``).
PROFILE_VARIABLE = WORKER_PROFILE_VARIABLE


def _profiler() -> Any:
    """A running cProfile profile, where ``PROFILE_VARIABLE`` names a folder; else None."""
    if not os.environ.get(PROFILE_VARIABLE):
        return None
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    return profile


def _send(connection: Any, message: Any) -> None:
    try:
        connection.send(message)
    except (OSError, ValueError):
        pass  # the session is gone


def example_database(where: Path | str | None) -> Any:
    """Hypothesis's example database at ``where``: a folder (safe for concurrent writers on one
    machine), or ``redis://HOST:PORT[/DB]``, shared by every machine of a campaign."""
    if where is None:
        return None
    if str(where).startswith(("redis://", "rediss://", "unix://")):
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(str(where)))
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(str(where))


@contextlib.contextmanager
def span_duplication(on: bool) -> Iterator[None]:
    """Hypothesis's span-duplication mutator on or off while a round runs. After each example
    it generates, Hypothesis runs up to five more that copy the choices of one part of it over
    another part of the same label (to repeat a value); in a program the copied choices fall
    out of step with what the other part draws, and every choice past that point is its
    simplest, so most drawn cases had the first entries of each table: of 1,293 exponents drawn
    from a table of 21, 70% were its first 3 (2, 3, 2.0), 19% of 821 without the mutator.
    Sessions run with it off, so the tables' tails (rare constants, exponents, regimes) are
    drawn as often as they were meant to be (held-out plants: the README's Strategies)."""
    from hypothesis.internal.conjecture.engine import ConjectureRunner

    original = getattr(ConjectureRunner, "generate_mutations_from", None)
    if on or original is None:  # (a Hypothesis without it: nothing to turn off)
        yield
        return
    ConjectureRunner.generate_mutations_from = lambda self, data: None
    try:
        yield
    finally:
        ConjectureRunner.generate_mutations_from = original


__all__ = [
    "Driver",
    "FuzzOptions",
    "describe_error",
    "example_database",
    "finding_entry",
    "span_duplication",
]
