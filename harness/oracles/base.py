"""What every oracle shares: findings, the judgement of one case, and the oracle protocol.

An oracle is an object registered by name. ``wants(case)`` says whether it runs on a case (drawn
from the case's own data, so a replay sees the same checks); ``configure`` may ask the main task
for more (the repeat checks); ``plan`` returns derived tasks to run (perturbed inputs, a related
program); ``judge`` turns what ran into findings. An oracle never knows which strategy made the
case, and a backend never knows it is being tested.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..triage.signature import Signature

if TYPE_CHECKING:
    from ..case import Case
    from ..run.isolation import Outcome
    from ..run.references import Reference
    from ..run.task import BackendResult, Task


@dataclass
class Finding:
    """A suspected compiler bug (or a crash/hang), with what is needed to file it."""

    kind: str  # mismatch, wrong-dtype, wrong-shape, wrong-error, verifier-error, pass-failure,
    # internal-error, crash, hang, causality, nondeterministic, retrace, aliasing, metamorphic
    backends: tuple[str, ...]
    oracle: str
    detail: str
    case: Case
    dtype: str = ""
    result: BackendResult | None = None
    stderr: str = ""  # a crashed worker's stderr (MLIR's assertion text, stack frames)
    stage: str = ""  # the compiler stage it failed in, when known
    # The failure is the same whatever the program's ops and dtype and the backend (a layer's
    # above them, such as the jit cache's key for a function): one corpus entry covers it (a
    # planted key by id(fn) made 20 entries in a 30 s session, then one per backend family).
    program_free: bool = False
    facet: str = ""  # what a program-free failure depends on (``Signature.facet``)
    # What the worker process had evaluated before the case (``case.Earlier``, oldest first),
    # as the runner saw it: a failure the case alone does not repeat may need them.
    before: tuple[Any, ...] = ()

    @property
    def signature(self) -> Signature:
        if self.program_free:
            backends = tuple(self.backends)
            return Signature(self.kind, self.oracle, backends, program_free=True, facet=self.facet)
        return Signature(
            self.kind,
            self.oracle,
            tuple(self.backends),
            tuple(sorted(set(self.case.subject.ops))),
            self.dtype or self.case.program.output_type.dtype,
        )


@dataclass
class Judgement:
    """Everything the oracles concluded about one case."""

    findings: list[Finding] = field(default_factory=list)
    ambiguities: list[str] = field(default_factory=list)  # NumPy vs JAX
    unsupported: list[str] = field(default_factory=list)  # known limitations hit
    errors: dict[str, float] = field(default_factory=dict)  # backend -> worst error in ULPs
    margins: dict[str, float] = field(default_factory=dict)  # backend -> error / allowed
    agreed_rejection: bool = False
    oracles: list[str] = field(default_factory=list)  # the oracles that judged the case


@dataclass
class Observation:
    """What the main task produced: the results per backend and the references."""

    case: Case
    results: list[BackendResult]
    refs: dict[str, Reference]
    judgement: Judgement
    #: The runner's references for another case (with the runner's settings, e.g. JAX on/off).
    references: Callable[[Case], dict[str, Reference]] | None = None


@dataclass
class Derived:
    """A task an oracle wants run, with what it needs to judge the outcome."""

    label: str
    task: Task
    info: dict[str, Any] = field(default_factory=dict)


class Oracle:
    """The protocol (and a do-nothing base): override what the oracle needs."""

    name = ""
    primary = False  # primary oracles judge every case from the main task alone

    def wants(self, case: Case) -> bool:
        """Does this oracle run on ``case`` (by default; a caller may force it)?"""
        return True

    def fits(self, case: Case) -> bool:
        """Can this oracle judge ``case`` at all?"""
        return True

    def configure(self, case: Case, task: Task) -> None:
        """Ask the main task for more (e.g. repeat calls)."""

    def plan(self, obs: Observation) -> list[Derived]:
        """Derived tasks to run after the main task."""
        return []

    def judge(self, obs: Observation, derived: list[tuple[Derived, Outcome]]) -> list[Finding]:
        return []


def per_backend(obs: Observation, label: str, kind: str) -> list[Derived]:
    """One derived task of ``kind`` per backend of the case: an oracle whose run is the case's
    own (a jit sequence's calls, a GPT-2 model), backend by backend."""
    from ..run.task import Task

    return [
        Derived(f"{label} on {backend}", Task(obs.case, (backend,), kind=kind))
        for backend in obs.case.backends
    ]


ORACLES: dict[str, Oracle] = {}


def register(oracle: Oracle) -> Oracle:
    if not oracle.name or oracle.name in ORACLES:
        raise ValueError(f"oracle name {oracle.name!r} is empty or already registered")
    ORACLES[oracle.name] = oracle
    return oracle


def unregister(name: str) -> None:
    ORACLES.pop(name, None)


def get(name: str) -> Oracle:
    if name not in ORACLES:
        raise ValueError(f"unknown oracle {name!r}; known: {', '.join(ORACLES)}")
    return ORACLES[name]


def group(
    case: Case, oracle: str, flagged: list[tuple[str, BackendResult, str]], dtype: str = ""
) -> list[Finding]:
    """One finding per kind, naming every backend that failed that way."""
    by_kind: dict[str, list[tuple[BackendResult, str]]] = {}
    for kind, result, detail in flagged:
        by_kind.setdefault(kind, []).append((result, detail))
    findings = []
    for kind, items in by_kind.items():
        detail = "\n".join(f"{r.backend}: {d}" for r, d in items)
        backends = tuple(dict.fromkeys(r.backend for r, _ in items))
        stage = items[0][0].stage
        findings.append(
            Finding(kind, backends, oracle, detail, case, dtype, items[0][0], stage=stage)
        )
    return findings


#: What changed an earlier call's answer, by ``BackendResult.overwritten``.
_OVERWRITERS = {
    "tupled": "the tupled oracle's call of the program",
    "nested": "the tupled oracle's nested call of the program",
    "misfit": "a call with misfit arguments",
    "set": "the call on the task's next input set",
}


def overwrites(results: list[BackendResult], by: str) -> list[tuple[str, BackendResult, str]]:
    """``aliasing`` flags (for ``group``) of the ``results`` whose returned array a later call
    of their task (``by``: ``BackendResult.overwritten``) changed; each result's ``output`` is
    the copy taken before, so this is a finding of its own, not a wrong answer."""
    what = _OVERWRITERS[by]
    return [
        ("aliasing", r, f"{what} changed the array the call before it returned")
        for r in results
        if r.ok and r.overwritten == by
    ]


def instrumented_kernel(compiled: Any) -> bool:
    """Whether ``compiled`` (``compiler.jit(f).compile(...)``) runs an instrumented kernel of
    ours (``compiler.runtime.instrumented``), whose gemm calls and heap blocks are counted; not
    ``xla-cpu``'s or IREE's, nor one made without instrumentation."""
    native = getattr(getattr(compiled, "artifacts", None), "native", None)
    return bool(getattr(native, "instrumented", False))


__all__ = [
    "ORACLES",
    "Derived",
    "Finding",
    "Judgement",
    "Observation",
    "Oracle",
    "get",
    "group",
    "instrumented_kernel",
    "overwrites",
    "per_backend",
    "register",
    "unregister",
]
