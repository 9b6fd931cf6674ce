"""Runs one case start to finish: write-ahead, isolated execution, references, oracles.

The data moves one way: the task is written to disk, a worker compiles and runs it per backend,
the references evaluate the same program, the registered oracles judge. Oracles that need more
(perturbed inputs, a related program) plan derived tasks, which run the same way. A task whose
worker crashes or hangs becomes a finding that keeps the worker's stderr and the stage it died in;
a crash in a multi-backend task is re-run backend by backend, so only the backends that crash
are blamed.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

from compiler.mlir_variants import family

from .. import oracles as oracle_registry
from ..case import Case, Earlier
from ..corpus import Corpus
from ..coverage import case_cells
from ..oracles.base import Finding, Judgement, Observation, Oracle, group, overwrites
from ..oracles.tolerance import working_dtype
from ..pending import WriteAhead
from .isolation import Outcome, Worker
from .references import Reference, references, wants_jax
from .task import Task, TaskResult
from .worker import execute

DEFAULT_TIMEOUT = 120.0
#: How many of the worker process's latest evaluations a finding keeps (``Finding.before``): a
#: failure its case does not repeat alone is replayed after them (``triage.history``).
HISTORY = 32


class Stopped(BaseException):
    """This process was asked to stop (a signal, the time box) while a task was running. Not an
    Exception: Hypothesis and the harness's own handlers let it through to the driver."""


#: The error histograms' fixed bins (the same in every worker, so counts add up): bin 0 holds
#: exact zeros, bin 1 values below 10**HISTOGRAM_LOW, then BINS_PER_DECADE log-spaced bins per
#: decade up to 10**HISTOGRAM_HIGH; the last bin holds everything above, non-finite included.
HISTOGRAM_LOW, HISTOGRAM_HIGH, BINS_PER_DECADE = -4, 8, 4
HISTOGRAM_BINS = 3 + (HISTOGRAM_HIGH - HISTOGRAM_LOW) * BINS_PER_DECADE


def histogram_bin(value: float) -> int:
    """The bin of ``value`` (an error in ULPs, or error / allowed) in the fixed histogram."""
    if value == 0:
        return 0
    if not value < 10.0**HISTOGRAM_HIGH:  # inf and nan too
        return HISTOGRAM_BINS - 1
    if value < 10.0**HISTOGRAM_LOW:
        return 1
    position = int((math.log10(value) - HISTOGRAM_LOW) * BINS_PER_DECADE)
    return 2 + min(max(position, 0), HISTOGRAM_BINS - 4)


@dataclass
class Stats:
    """Counters a session reports."""

    cases: int = 0
    backend_runs: int = 0
    findings: int = 0
    unsupported: int = 0
    rejected_agreed: int = 0
    ambiguities: int = 0
    # focused cases not run: every focus item they exercise was already done (Driver.stale_focus)
    focus_skipped: int = 0
    # focus items given up: rounds of focused cases exercised none of them (Driver)
    focus_given_up: int = 0
    # cases not run: their kind was ahead of its share of the mix (generate.MixBalance)
    mix_skipped: int = 0
    # cases not run: this driver already judged the very same case (Driver.repeated)
    repeats_skipped: int = 0
    # siblings judged: a case's program on values of another regime (session.generate.siblings)
    siblings: int = 0
    # triage runs: minimizer candidates, attribution's variants, replays (``evaluate(probe=)``)
    probes: int = 0
    seconds_worker: float = 0.0
    seconds_references: float = 0.0
    cells: dict[str, int] = field(default_factory=dict)  # coverage cell -> cases (see coverage)
    kinds: dict[str, int] = field(default_factory=dict)
    oracles: dict[str, int] = field(default_factory=dict)  # oracle -> cases it judged
    runs: dict[str, int] = field(default_factory=dict)  # backend -> backend runs
    # stage (or "llvm") -> backend runs that reused it from the compiler's in-process cache
    reused: dict[str, int] = field(default_factory=dict)
    # "backend: message" of each known limitation (UnsupportedFeature) hit -> cases
    limitations: dict[str, int] = field(default_factory=dict)
    # "backend|working dtype" -> histogram (``histogram_bin``) of each case's worst error in
    # ULPs, of its error / allowed (above 1 is a finding), and the largest finite error in ULPs.
    error_bins: dict[str, list[int]] = field(default_factory=dict)
    margin_bins: dict[str, list[int]] = field(default_factory=dict)
    error_max: dict[str, float] = field(default_factory=dict)

    _COUNTS = (
        "cases", "backend_runs", "findings", "unsupported", "rejected_agreed", "ambiguities",
        "focus_skipped", "focus_given_up", "mix_skipped", "repeats_skipped", "siblings",
        "probes",
    )  # fmt: skip
    _SECONDS = ("seconds_worker", "seconds_references")
    _TABLES = ("cells", "kinds", "oracles", "runs", "reused", "limitations")
    _HISTOGRAMS = ("error_bins", "margin_bins")

    def merge(self, other: dict[str, Any]) -> None:
        for key in self._COUNTS + self._SECONDS:
            setattr(self, key, getattr(self, key) + other.get(key, 0))
        for key in self._TABLES:
            table = getattr(self, key)
            for k, v in other.get(key, {}).items():
                table[k] = table.get(k, 0) + v
        for key in self._HISTOGRAMS:
            table = getattr(self, key)
            for k, counts in other.get(key, {}).items():
                mine = table.setdefault(k, [0] * HISTOGRAM_BINS)
                for i, count in enumerate(counts[:HISTOGRAM_BINS]):
                    mine[i] += count
        for k, v in other.get("error_max", {}).items():
            self.error_max[k] = max(self.error_max.get(k, 0.0), v)

    def record_error(self, key: str, ulps: float, margin: float | None) -> None:
        """Count one case's worst error (ULPs) and its error / allowed under ``key``: bounded,
        mergeable histograms instead of raw lists, so a long session's summary stays small."""
        self.error_bins.setdefault(key, [0] * HISTOGRAM_BINS)[histogram_bin(ulps)] += 1
        if margin is not None:
            self.margin_bins.setdefault(key, [0] * HISTOGRAM_BINS)[histogram_bin(margin)] += 1
        if math.isfinite(ulps):  # summary.json is strict JSON: no infinities
            self.error_max[key] = max(self.error_max.get(key, 0.0), float(ulps))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class Runner:
    """Evaluates cases in an isolated worker; one runner per driver process."""

    def __init__(
        self,
        corpus: Corpus | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        use_jax: bool = True,
        skip: tuple[str, ...] = (),
    ) -> None:
        self.corpus = corpus
        self.skip = tuple(skip)  # oracle names (or prefixes such as "metamorphic:") not to run
        self.name = name or f"runner-{os.getpid()}"
        self.worker = Worker(execute, timeout)
        # The case under evaluation is written ahead; with ``hold`` set (a fuzz driver), the
        # record stays until the driver has recorded the case's findings (``release``).
        self.ahead = WriteAhead(corpus.directory, self.name) if corpus is not None else None
        self.hold = False
        self.use_jax = use_jax
        self.stats = Stats()
        self.last_cells: set[str] = set()  # the cells of the case evaluated last
        # The evaluations the worker's current process has run, oldest first (``HISTORY``).
        self.history: list[Earlier] = []

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- execution -------------------------------------------------------------------------
    def _marker(self) -> str:
        return os.path.join(self.worker.stderr_path + ".stage")

    def run_task(self, task: Task) -> Outcome:
        """Run a task in the isolated worker (the case it belongs to is written ahead)."""
        task.marker = self._marker()
        outcome = self.worker.run(task)
        self.stats.seconds_worker += outcome.seconds
        if outcome.status == "stopped":
            raise Stopped()
        if outcome.status not in ("ok", "error"):
            outcome.detail += _stage_of(task.marker)
        return outcome

    def release(self) -> None:
        """Drop the write-ahead record: the case and its findings are safely recorded."""
        if self.ahead is not None:
            self.ahead.clear()

    def _failed(self, task: Task, outcome: Outcome) -> list[Finding]:
        """Findings for a task whose worker crashed, hung or raised: re-run a multi-backend
        task backend by backend, so only the backends that fail are blamed, each verifying the
        IR after every pass (``compiler.pipelines.verify_each``), as the crash's ``mlir-opt``
        reproducer will: a pass that crashes on an earlier pass's invalid output is then seen
        as that pass's verifier error."""
        case = task.case
        failing: list[tuple[str, Outcome]] = []
        if len(task.backends) > 1 and outcome.status in ("crash", "hang"):
            for backend in task.backends:
                alone = self.run_task(
                    Task(case, (backend,), input_sets=task.input_sets, verify_each=True)
                )
                if alone.status != "ok":
                    failing.append((backend, alone))
        if not failing:
            failing = [(b, outcome) for b in task.backends]
        findings: list[Finding] = []
        by_status: dict[tuple[str, str], list[str]] = {}
        evidence: dict[tuple[str, str], Outcome] = {}
        for backend, failed in failing:
            kind = failed.status if failed.status in ("crash", "hang") else "internal-error"
            key = (kind, failed.detail.split(" [stage ")[0])
            by_status.setdefault(key, []).append(backend)
            evidence.setdefault(key, failed)
        for (kind, _), backends in by_status.items():
            failed = evidence[(kind, _)]
            stage = _stage_name(failed.detail)
            finding = Finding(
                kind, tuple(backends), "isolation", failed.detail[:2000], case,
                stderr=failed.stderr, stage=stage,
            )  # fmt: skip
            findings.append(finding)
        return findings

    def references(
        self, case: Case, with_jax: bool | None = None, perturbed: bool = True
    ) -> dict[str, Reference]:
        """The references of ``case``; JAX's when ``with_jax`` (default: the runner's setting);
        the perturbed evaluations when ``perturbed``."""
        start = time.perf_counter()
        use_jax = self.use_jax if with_jax is None else with_jax and self.use_jax
        refs = references(case, use_jax, perturbed)
        self.stats.seconds_references += time.perf_counter() - start
        return refs

    def oracles_for(self, case: Case, only: tuple[str, ...] | None) -> list[Oracle]:
        """The primary oracles, and either the ones ``only`` names (forced, where they fit) or
        every other oracle that wants the case."""
        chosen = []
        for oracle in oracle_registry.ORACLES.values():
            if any(oracle.name.startswith(s) for s in self.skip) and not oracle.primary:
                continue
            if only is not None:
                if (oracle.primary and oracle.name != "determinism") or oracle.name in only:
                    if oracle.fits(case):
                        chosen.append(oracle)
            elif oracle.wants(case):
                chosen.append(oracle)
        return chosen

    def evaluate(
        self,
        case: Case,
        only: tuple[str, ...] | None = None,
        sibling: bool = False,
        probe: bool = False,
        fresh: bool = False,
    ) -> Judgement:
        """All oracles on one case; never raises for anything the compiler does.

        ``only`` names the non-primary oracles to run (e.g. the one a finding came from, when
        minimizing it); by default every oracle that wants the case runs. A ``sibling`` (a
        case's program on other values: ``session.generate.siblings``) counts as such, not as a
        case. A ``probe`` (triage's run: a minimizer candidate, an attribution variant, a
        replay) counts as one and adds nothing else to the session's figures: a variant that
        aborts on purpose (``+poison-checks``) showed as a crash among the findings, and the
        minimizer's candidates as cases. ``fresh``: its main task compiles past the worker's
        memos, each backend's kernel JIT-compiled alone (``Task.fresh``).
        """
        if probe:
            counted, self.stats = self.stats, Stats()
            try:
                return self.evaluate(case, only, fresh=fresh)
            finally:
                scratch, self.stats = self.stats, counted
                counted.probes += 1
                counted.seconds_worker += scratch.seconds_worker
                counted.seconds_references += scratch.seconds_references
        if sibling:
            self.stats.siblings += 1
        else:
            self.stats.cases += 1
        if self.ahead is not None:
            self.ahead.write({"case": case.to_dict()})
        try:
            judgement = self._evaluate(case, only, fresh)
        except Stopped:
            raise  # the record stays: the next session runs this case again
        if not self.hold:
            self.release()
        return judgement

    def _evaluate(self, case: Case, only: tuple[str, ...] | None, fresh: bool) -> Judgement:
        """``_evaluate_in_worker``, with the worker process's history kept: each finding holds
        the evaluations its process ran before it (``Finding.before``)."""
        if self.worker.restarts_next():
            self.history.clear()
        before, starts = tuple(self.history), self.worker.starts
        try:
            judgement = self._evaluate_in_worker(case, only, fresh)
        finally:
            if self.worker.starts != starts:  # restarted on the way (after a crash, a hang)
                self.history.clear()
            self.history = [*self.history, Earlier(case, only, fresh)][-HISTORY:]
        for finding in judgement.findings:
            finding.before = before
        return judgement

    def after(self, earlier: tuple[Earlier, ...]) -> None:
        """A new worker process that has run ``earlier`` (probes, counted as such): where a
        failure that needed them is judged again."""
        self.worker.stop()
        self.history.clear()
        for record in earlier:
            self.evaluate(record.case, record.only, probe=True, fresh=record.fresh)

    def _evaluate_in_worker(
        self, case: Case, only: tuple[str, ...] | None, fresh: bool
    ) -> Judgement:
        chosen = self.oracles_for(case, only)
        self.last_cells = case_cells(case)
        task = Task(case, fresh=fresh)
        for oracle in chosen:
            oracle.configure(case, task)
        outcome = self.run_task(task)
        judgement = Judgement(oracles=[o.name for o in chosen])
        if outcome.status != "ok":
            judgement.findings.extend(self._failed(task, outcome))
            return self._account(case, judgement)
        result: TaskResult = outcome.value
        self.stats.backend_runs += len(result.results)
        for backend_result in result.results:
            runs = self.stats.runs
            name = family(backend_result.backend)  # mlir: variants count as mlir:*
            runs[name] = runs.get(name, 0) + 1
            self.last_cells.update(backend_result.cells)
            for stage in filter(None, backend_result.shared_stages.split(",")):
                self.stats.reused[stage] = self.stats.reused.get(stage, 0) + 1
        # JAX up front for a share of cases; for the others only if something is found, then
        # everything is judged again with it (a bound JAX's own error widens is not a finding).
        upfront = self.use_jax and wants_jax(case)
        derived_done: dict[str, list] = {}
        judgement = self._judge(case, chosen, result, upfront, derived_done)
        if judgement.findings and self.use_jax and not upfront and case.invalid is None:
            judgement = self._judge(case, chosen, result, True, derived_done)
        return self._account(case, judgement)

    def _judge(
        self, case: Case, chosen: list[Oracle], result: TaskResult, with_jax: bool,
        derived_done: dict[str, list],
    ) -> Judgement:  # fmt: skip
        """Every chosen oracle on the main task's result; derived tasks run once and their
        outcomes are kept in ``derived_done`` for a second judgement."""
        judgement = Judgement(oracles=[o.name for o in chosen])

        def refs_of(other: Case) -> dict[str, Reference]:
            # A derived case's references bound its error as a whole (the metamorphic
            # relations): each one's largest error, the perturbed evaluations' included.
            return self.references(other, with_jax)

        obs = Observation(case, result.results, self.references(case, with_jax), judgement, refs_of)
        for oracle in chosen:
            if oracle.primary:
                judgement.findings.extend(oracle.judge(obs, []))
        if not judgement.findings:
            for oracle in chosen:
                if oracle.primary:
                    continue
                if oracle.name not in derived_done:
                    outcomes, failed = [], []
                    for item in oracle.plan(obs):
                        done = self.run_task(item.task)
                        if done.status != "ok":
                            failed.extend(self._failed(item.task, done))
                        outcomes.append((item, done))
                    derived_done[oracle.name] = [outcomes, failed]
                outcomes, failed = derived_done[oracle.name]
                judgement.findings.extend(failed)
                judgement.findings.extend(oracle.judge(obs, outcomes))
                judgement.findings.extend(_overwritten_sets(case, oracle.name, outcomes))
        return judgement

    def _account(self, case: Case, judgement: Judgement) -> Judgement:
        s = self.stats
        s.findings += len(judgement.findings)
        s.unsupported += bool(judgement.unsupported)
        for text in dict.fromkeys(judgement.unsupported):
            key = text[:160]
            s.limitations[key] = s.limitations.get(key, 0) + 1
        s.rejected_agreed += judgement.agreed_rejection
        s.ambiguities += len(judgement.ambiguities)
        for cell in self.last_cells:
            s.cells[cell] = s.cells.get(cell, 0) + 1
        if judgement.errors:
            dtype = working_dtype(case.program).name
            for backend, ulps in judgement.errors.items():
                margin = judgement.margins.get(backend)
                s.record_error(f"{family(backend)}|{dtype}", float(ulps), margin)
        for finding in judgement.findings:
            s.kinds[finding.kind] = s.kinds.get(finding.kind, 0) + 1
        for name in judgement.oracles:
            s.oracles[name] = s.oracles.get(name, 0) + 1
        return judgement


def _overwritten_sets(case: Case, oracle: str, outcomes: list) -> list[Finding]:
    """``aliasing`` findings of ``oracle`` where a derived task's call on one input set changed
    the array its call on an earlier set had returned (judged on copies taken before, so the
    oracle's own verdict stands; replaying the oracle runs the same sets again)."""
    flagged = []
    for _, done in outcomes:
        if done.status == "ok":
            flagged += overwrites(done.value.results, "set")
    return group(case, oracle, flagged, case.program.output_type.dtype) if flagged else []


def _stage_of(marker: str) -> str:
    """`` [stage <backend> <stage>]`` from a crashed worker's stage marker, or ""."""
    try:
        with open(marker, encoding="ascii") as handle:
            text = handle.readline().strip()  # the last stage (a longer earlier one may follow)
        os.unlink(marker)
    except (OSError, UnicodeDecodeError):
        return ""
    return f" [stage {text}]" if text else ""


def _stage_name(detail: str) -> str:
    if " [stage " not in detail:
        return ""
    return detail.split(" [stage ", 1)[1].rstrip("]").split(" ", 1)[-1]


__all__ = [
    "DEFAULT_TIMEOUT",
    "HISTOGRAM_BINS",
    "Runner",
    "Stats",
    "Stopped",
    "histogram_bin",
]
