"""Runs one case start to finish: write-ahead, isolated execution, references, oracles.

The data moves one way: the case is written to disk, a worker compiles and runs it per backend,
the references evaluate the same program, the oracles compare. The runner also executes the
derived cases of the metamorphic relations and the perturbed inputs of the causality check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import oracles, relations, tolerance
from .case import Case, encode_array, execute
from .corpus import Corpus
from .isolation import Outcome, Worker
from .references import Reference, references

DEFAULT_TIMEOUT = 120.0


@dataclass
class Stats:
    """Counters a session reports."""

    cases: int = 0
    backend_runs: int = 0
    findings: int = 0
    unsupported: int = 0
    rejected_agreed: int = 0
    ambiguities: int = 0
    seconds_worker: float = 0.0
    seconds_references: float = 0.0
    coverage: dict[str, int] = field(default_factory=dict)  # "op|dtype|backend" -> cases
    errors: dict[str, list[float]] = field(default_factory=dict)  # backend -> ULP errors
    kinds: dict[str, int] = field(default_factory=dict)

    def merge(self, other: dict[str, Any]) -> None:
        for key in (
            "cases",
            "backend_runs",
            "findings",
            "unsupported",
            "rejected_agreed",
            "ambiguities",
        ):
            setattr(self, key, getattr(self, key) + other.get(key, 0))
        for key in ("seconds_worker", "seconds_references"):
            setattr(self, key, getattr(self, key) + other.get(key, 0.0))
        for k, v in other.get("coverage", {}).items():
            self.coverage[k] = self.coverage.get(k, 0) + v
        for k, v in other.get("errors", {}).items():
            self.errors.setdefault(k, []).extend(v)
        for k, v in other.get("kinds", {}).items():
            self.kinds[k] = self.kinds.get(k, 0) + v

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Runner:
    """Evaluates cases in an isolated worker; one runner per driver process."""

    def __init__(
        self,
        corpus: Corpus | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        use_jax: bool = True,
        relation_names: tuple[str, ...] = tuple(relations.RELATIONS),
        repeat_checks: bool = True,
    ) -> None:
        self.corpus = corpus
        self.name = name or f"runner-{os.getpid()}"
        self.worker = Worker(execute, timeout)
        self.use_jax = use_jax
        self.relation_names = relation_names
        self.repeat_checks = repeat_checks
        self.stats = Stats()

    def close(self) -> None:
        self.worker.stop()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- execution -------------------------------------------------------------------------
    def run_task(self, case: Case, **extra: Any) -> Outcome:
        """Write the case ahead, run it in the worker, clear the write-ahead record."""
        task = {"case": case.to_dict(), **extra}
        if self.corpus is not None:
            self.corpus.write_pending(self.name, task)
        outcome = self.worker.run(task)
        self.stats.seconds_worker += outcome.seconds
        if self.corpus is not None and outcome.status in ("ok", "error"):
            self.corpus.clear_pending(self.name)
        return outcome

    def _failed_outcome(self, case: Case, outcome: Outcome) -> oracles.Finding:
        kind = outcome.status if outcome.status in ("crash", "hang") else "internal-error"
        finding = oracles.Finding(
            kind, tuple(case.backends), "isolation", outcome.detail[:2000], case
        )
        if self.corpus is not None:
            self.corpus.clear_pending(self.name)  # recorded as a finding: nothing is lost
        return finding

    def evaluate(
        self, case: Case, relation_names: tuple[str, ...] | None = None
    ) -> oracles.Judgement:
        """All oracles on one case; never raises for anything the compiler does."""
        self.stats.cases += 1
        outcome = self.run_task(case, repeat_checks=self.repeat_checks)
        if outcome.status != "ok":
            judgement = oracles.Judgement(findings=[self._failed_outcome(case, outcome)])
            return self._account(case, judgement)
        results = outcome.value
        self.stats.backend_runs += len(results)
        refs = self.references(case)
        judgement = oracles.differential(case, results, refs)
        if case.check == "causal" and not judgement.findings:
            judgement.findings.extend(self._causality(case, results))
        names = self.relation_names if relation_names is None else relation_names
        if names and not judgement.findings and refs["numpy"].ok:
            judgement.findings.extend(self._relations(case, results, refs, names))
        return self._account(case, judgement)

    def references(self, case: Case) -> dict[str, Reference]:
        import time

        start = time.perf_counter()
        refs = references(case, self.use_jax)
        self.stats.seconds_references += time.perf_counter() - start
        return refs

    def _account(self, case: Case, judgement: oracles.Judgement) -> oracles.Judgement:
        s = self.stats
        s.findings += len(judgement.findings)
        s.unsupported += bool(judgement.unsupported)
        s.rejected_agreed += judgement.agreed_rejection
        s.ambiguities += len(judgement.ambiguities)
        dtype = case.program.output_type.dtype
        for op in set(case.program.ops):
            for backend in case.backends:
                key = f"{op}|{dtype}|{backend}"
                s.coverage[key] = s.coverage.get(key, 0) + 1
        for backend, ulps in judgement.errors.items():
            s.errors.setdefault(backend, []).append(float(ulps))
        for finding in judgement.findings:
            s.kinds[finding.kind] = s.kinds.get(finding.kind, 0) + 1
        return judgement

    # -- structural oracles -------------------------------------------------------------------
    def _causality(self, case: Case, results: list) -> list[oracles.Finding]:
        x = case.inputs[0]
        rows = x.shape[0]
        if rows < 3:
            return []
        keep = rows - 2
        perturbed = x.copy()
        rng = np.random.default_rng(rows)
        perturbed[keep:] = (rng.standard_normal(perturbed[keep:].shape) * 3).astype(x.dtype)
        alt = [encode_array(perturbed)] + [encode_array(a) for a in case.inputs[1:]]
        outcome = self.run_task(case, input_sets=[alt])
        if outcome.status != "ok":
            return [self._failed_outcome(case, outcome)]
        return oracles.causal(case, results, outcome.value, keep)

    def _relations(
        self, case: Case, results: list, refs: dict[str, Reference], names: tuple[str, ...]
    ) -> list[oracles.Finding]:
        findings: list[oracles.Finding] = []
        original = {r.backend: r for r in results}
        truth = refs["truth"].output if refs["truth"].ok else refs["numpy"].output
        for derived in relations.derive(case, names):
            outcome = self.run_task(derived.case)
            if outcome.status != "ok":
                findings.append(self._failed_outcome(derived.case, outcome))
                continue
            derived_numpy = None
            if derived.mode == "close":
                derived_numpy = references(derived.case, False)
            bad: dict[str, str] = {}
            for result in outcome.value:
                before = original.get(result.backend)
                if result.status != "ok" or before is None or before.status != "ok":
                    continue
                got = np.asarray(result.output)
                if derived.mode == "equal":
                    if got.tobytes() != np.asarray(before.output).tobytes():
                        bad[result.backend] = "output changed bits"
                    continue
                expected = derived.select(truth)
                others = [derived.select(refs["numpy"].output)]
                own = [derived_numpy["numpy"].output] if derived_numpy["numpy"].ok else []
                verdict = tolerance.compare(
                    got,
                    expected,
                    others,
                    oracles.error_steps(derived.case.program),
                    oracles.working_dtype(derived.case.program),
                    allowance=own,
                )
                if not verdict.ok:
                    bad[result.backend] = verdict.reason
            if bad:
                detail = next(iter(bad.values()))
                findings.append(
                    oracles.Finding(
                        "metamorphic",
                        tuple(sorted(bad)),
                        f"metamorphic:{derived.relation}",
                        detail,
                        case,
                    )
                )
        return findings
