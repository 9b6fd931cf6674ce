"""The typed protocol between the harness and its isolated worker: a Task in, a TaskResult out.

A task is written ahead to disk (``to_dict``) before the worker gets it, so nothing in flight is
lost if the worker (or the whole session) dies; the worker never sees an oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..case import Case, encode_array

#: What a task asks of the worker (``sequence``: the case's jit sequence, call by call;
#: ``model``: the case's GPT-2 model through ``compiler.model``).
KINDS = ("run", "artifacts", "fault", "sequence", "model")


@dataclass
class Task:
    """Run ``case`` on ``backends`` (``run``), or get its artifacts on one backend
    (``artifacts``), or run its jit sequence's calls in order (``sequence``: one result per
    backend and call), or fail on purpose (``fault``: the isolation tests only).

    ``input_sets`` replace the case's own inputs (one result per backend and set); ``repeat``
    adds the determinism and aliasing checks to the first set's run, and on the backend named
    ``recompile`` (one per task: a recompile is the price of a whole case) a fresh compile too.
    """

    case: Case
    backends: tuple[str, ...] = ()
    kind: str = "run"
    input_sets: list[list[np.ndarray]] | None = None
    repeat: bool = False
    recompile: str = ""
    fault: str = ""
    marker: str = ""  # a file the worker writes "<backend> <stage>" to before each stage
    before: str = ""  # artifacts only: stop before this stage (the input of a stage that crashed)
    tupled: str = ""  # the backend that also runs the program twice in one function (tupled)
    misfit: bool = False  # each backend's specialization also called with misfit arguments
    verify_each: bool = False  # IR verified after every pass, not once a stage (crash re-runs)
    fresh: bool = False  # compiled past the worker's stage and kernel memos, each JIT its own

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown task kind {self.kind!r}")
        if not self.backends:
            self.backends = tuple(self.case.backends)

    def sets(self) -> list[list[np.ndarray]]:
        return self.input_sets if self.input_sets is not None else [list(self.case.inputs)]

    def to_dict(self) -> dict[str, Any]:
        """The write-ahead record: enough to run the task again."""
        data: dict[str, Any] = {
            "case": self.case.to_dict(),
            "backends": list(self.backends),
            "kind": self.kind,
            "repeat": self.repeat,
            "recompile": self.recompile,
            "tupled": self.tupled,
            "misfit": self.misfit,
        }
        if self.verify_each:
            data["verify_each"] = True
        if self.fresh:
            data["fresh"] = True
        if self.input_sets is not None:
            data["input_sets"] = [[encode_array(a) for a in s] for s in self.input_sets]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        from ..case import decode_array

        sets = data.get("input_sets")
        return cls(
            Case.from_dict(data["case"]),
            tuple(data.get("backends", ())),
            data.get("kind", "run"),
            [[decode_array(a) for a in s] for s in sets] if sets else None,
            bool(data.get("repeat", False)),
            str(data.get("recompile", "")),
            tupled=str(data.get("tupled", "")),
            misfit=data.get("misfit") is True,
            verify_each=data.get("verify_each") is True,
            fresh=data.get("fresh") is True,
        )


@dataclass
class BackendResult:
    """One backend's answer for one input set: an output array, or an error classified by where
    it came from."""

    backend: str
    status: str  # "ok" | "unsupported" | "rejected" | "compiler-error" | "internal-error"
    output: Any = None
    error_type: str = ""
    # The error's class and its bases, most derived first (``worker.failure``): NumPy's
    # ``except IndexError`` catches the compiler's error only if IndexError is among them.
    error_classes: tuple[str, ...] = ()
    message: str = ""
    stage: str = ""  # the failing stage of a compiler error
    module: str = ""  # that stage's input text
    pipeline: str = ""  # that stage's pass pipeline
    deterministic: bool | None = None  # recompiling and calling again gave identical bits
    # The recompiled kernel stored to and loaded back from the persistent compilation cache
    # gave identical bits; None where not tried (not one of our CPU targets, or not recompiled).
    persisted: bool | None = None
    # Where that was the twin's kernel (``worker._swapped_twin``): the pair of same-typed
    # arguments exchanged; else ().
    persisted_twin: tuple[int, ...] = ()
    # A cache that served a compile under other workarounds what another configuration
    # compiled (``worker.other_configuration``): "" where none did or nothing could tell.
    configured: str = ""
    # A new jitted function of the same code and name, and one made where this program's
    # collected function lived, each owed its first argument (``worker.after_another_function``):
    # "" where both returned it, else which did not; None where not tried.
    successor: str | None = None
    # A new jitted function of the program called from ``worker.THREADS`` threads at once, each
    # call owing what its arguments give alone (``worker.concurrent_calls``): "" where each got
    # it, else what one got; None where not tried.
    concurrent: str | None = None
    reused: bool | None = None  # a second call with the same shapes did not retrace
    independent: bool | None = None  # outputs of later calls neither alias nor overwrite it
    # Which later call of the task changed the array this call returned ("tupled", "misfit",
    # "set": another input set's; the repeat check's: ``independent``); ``output`` is the copy
    # taken before it.
    overwritten: str = ""
    seconds: float = 0.0
    cells: list[str] = field(default_factory=list)  # coverage: MLIR ops per stage, BLAS paths
    # A call of a jit sequence: whether it traced a new specialization, and (where it did not,
    # or where it failed) the same call on a fresh jit function, alone.
    traced: bool | None = None
    alone: BackendResult | None = None
    shared_stages: str = ""  # stages (and "llvm": the JIT) taken from the compiler's cache
    # Gemm calls (promised, made) in the first call, for an instrumented kernel of a backend
    # with a BLAS stage (the blas oracle's).
    blas: tuple[int, int] | None = None
    # Heap blocks the first call of an instrumented kernel allocated and did not free (the
    # memory oracle's; ``compiler.runtime.live_blocks``); None where not counted.
    leaked: int | None = None
    # What an instrumented kernel's call did to memory it does not own, one line each (stores
    # into the guards around its buffers and heap blocks, or into its inputs; the memory
    # oracle's; ``compiler.runtime.memory_faults``); None where not checked.
    memory_faults: list[str] | None = None
    # The program called twice in one function (the tupled oracle's): "" where both results
    # were each call's own, else what differed; None where not checked.
    tupled: str | None = None
    # The program called as a nested @jit function, some arguments captured (the tupled
    # oracle's ``nested``): "" where it returned its own call's bits, else what it did; None
    # where not checked. ``nested_output``: its answer where only its bits differed (judged by
    # the error model: a captured array may take another code path, as cpu-vector's cos did).
    nested: str | None = None
    nested_output: Any = None
    # The specialization called with arguments it was not made for (the arguments oracle's):
    # "" where it refused each with TypeError, else what it did; None where not checked.
    misfit: str | None = None
    # A ``model`` task's run of the case's GPT-2 model (``harness.run.gpt2.ModelRun``).
    model: Any = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TaskResult:
    """The worker's answer: backend-major results (one per backend and input set), or the
    artifacts of an ``artifacts`` task."""

    results: list[BackendResult] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)

    def for_set(self, index: int, sets: int) -> list[BackendResult]:
        """The results of input set ``index`` (of ``sets``), one per backend."""
        return self.results[index::sets]


__all__ = ["KINDS", "BackendResult", "Task", "TaskResult"]
