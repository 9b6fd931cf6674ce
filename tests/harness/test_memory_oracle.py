"""The memory oracle: an instrumented kernel frees every heap block it allocates before it
returns (it writes its results into buffers it is given), whatever the values say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import verdict_fails_only_with_the_bug

from harness.selftest import Mutation


def _keep_the_row_sums(b):
    """``x - x.sum(axis=1, keepdims=True)``: the row sums are a temporary buffer."""
    x = b.input((3, 5), "float32")
    return b.build(b.node("subtract", x, b.node("sum", x, axis=1, keepdims=True)))


def test_blocks_left_allocated_are_a_leak_and_extra_frees_a_bad_free() -> None:
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.memory import Memory
    from harness.run.task import BackendResult
    from harness.triage.attribution import Attributor
    from harness.triage.export import owner
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(_keep_the_row_sums(b), [np.ones((3, 5), np.float32)])
    results = [
        BackendResult("cpu-loops@O0", "ok", leaked=2),
        BackendResult("cpu-blas@O0", "ok", leaked=0),
        BackendResult("cpu-vector@O0", "ok", leaked=-1),
        BackendResult("xla-cpu", "ok"),  # not counted
        BackendResult("cpu-loops-unfused@O0", "compiler-error", leaked=3),  # no answer
    ]
    found = Memory().judge(Observation(case, results, {}, Judgement()), [])
    assert [(f.kind, f.backends) for f in found] == [
        ("leak", ("cpu-loops@O0",)),
        ("bad-free", ("cpu-vector@O0",)),
    ]
    assert "2 heap block(s)" in found[0].detail and "1 more heap block(s)" in found[1].detail
    attribution = Attributor(None).attribute(case, found[1])
    assert attribution.layer == "deallocation" and "buffer-deallocation" in owner("deallocation")


def test_the_worker_counts_what_each_instrumented_kernel_leaves_allocated() -> None:
    """Every CPU backend frees its temporaries (a program with a row reduction that fusion
    cannot absorb, unfused too); a backend not running our kernels is not counted."""
    from harness.case import Case
    from harness.run.task import Task
    from harness.run.worker import execute
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = _keep_the_row_sums(b)
    inputs = [np.arange(15, dtype=np.float32).reshape(3, 5)]
    backends = (
        "cpu-loops@O0", "cpu-blas@O0", "cpu-loops-unfused@O0", "cpu-vector@O0",
        "cpu-loops+mlir-runtime", "xla-cpu",
    )  # fmt: skip
    results = execute(Task(Case(program, inputs, backends))).results
    assert all(r.ok for r in results), [(r.backend, r.message) for r in results]
    assert {r.backend: r.leaked for r in results} == {
        **{backend: 0 for backend in backends[:-1]},
        "xla-cpu": None,
    }


_MAKE = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((3, 5), "float32")
program = b.build(b.node("subtract", x, b.node("sum", x, axis=1, keepdims=True)))
inputs = [np.arange(15, dtype=np.float32).reshape(3, 5)]
case = Case(program, inputs, ("cpu-loops@O0",))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
    (finding,) = judgement.findings  # the values are right: only the memory oracle sees it
    assert (finding.kind, finding.oracle, finding.backends) == (
        "leak", "memory", ("cpu-loops@O0",)), finding
    attribution = Attributor(runner).attribute(case, finding)
    assert attribution.layer == "deallocation", attribution
    assert attribution.evidence["stage bufferized"].endswith(" 0 deallocations"), attribution
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_pipeline_without_deallocation_is_found_and_reproduced(tmp_path: Path) -> None:
    """The deallocation pipeline planted out of the bufferized stage: every answer stays right,
    every temporary leaks. A ``leak`` finding attributed to ``deallocation``, whose reproducer
    fails with the bug and passes without it."""
    mutation = Mutation(
        "no-deallocation",
        "pipelines.py",
        'BUFFERIZED = Stage("bufferized", BUFFERIZE, ',
        'BUFFERIZED = Stage("bufferized", BUFFERIZE.replace('
        '"buffer-deallocation-pipeline, ", ""), ',
        "the bufferized stage runs no deallocation: temporaries are never freed",
    )
    verdict_fails_only_with_the_bug(tmp_path, mutation, _MAKE, "memory")


def test_stores_outside_the_buffers_are_overruns_and_into_inputs_input_written() -> None:
    """Each kind of line ``compiler.runtime.memory_faults`` writes is its own finding, one per
    backend and kind (the first lines as its detail); a result with no answer is not judged."""
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.memory import Memory
    from harness.run.task import BackendResult
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(_keep_the_row_sums(b), [np.ones((3, 5), np.float32)])
    past = "overrun: output 0 (float32[3, 1], 12 bytes) written up to 4 byte(s) past its end"
    heap = "overrun: 1 heap block(s) the kernel allocated were written within 64 bytes outside"
    written = "input-written: input 0 (float32[3, 5], 60 bytes): 1 of 15 element(s) changed"
    results = [
        BackendResult("cpu-loops@O0", "ok", memory_faults=[past, heap]),
        BackendResult("cpu-blas@O0", "ok", memory_faults=[]),
        BackendResult("cpu-vector@O0", "ok", memory_faults=[written]),
        BackendResult("cpu-loops-unfused@O0", "compiler-error", memory_faults=[past]),
        BackendResult("xla-cpu", "ok"),  # not checked
    ]
    found = Memory().judge(Observation(case, results, {}, Judgement()), [])
    assert [(f.kind, f.backends) for f in found] == [
        ("overrun", ("cpu-loops@O0",)),
        ("input-written", ("cpu-vector@O0",)),
    ]
    assert found[0].detail.startswith("output 0 (float32[3, 1], 12 bytes) written up to 4")
    assert "1 heap block(s)" in found[0].detail
    assert found[1].detail == "input 0 (float32[3, 5], 60 bytes): 1 of 15 element(s) changed"


def test_the_worker_sees_no_store_outside_the_buffers_of_a_correct_kernel() -> None:
    """Every CPU backend, on a program with a temporary, a matmul (BLAS) and a slice: no
    guard byte changes, no input is written, and the memory oracle says nothing."""
    from harness.case import Case
    from harness.run.task import Task
    from harness.run.worker import execute
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, w = b.input((3, 5), "float32"), b.input((2, 4, 4), "float32")
    rows = b.node("subtract", x, b.node("sum", x, axis=1, keepdims=True))
    program = b.build(b.node("matmul", b.node("index", rows, key=(slice(None), slice(1, 5))), w))
    inputs = [np.arange(15, dtype=np.float32).reshape(3, 5), np.ones((2, 4, 4), np.float32)]
    backends = ("cpu-loops@O0", "cpu-blas@O0", "cpu-loops-unfused@O0", "cpu-vector@O0")
    results = execute(Task(Case(program, inputs, (*backends, "xla-cpu")))).results
    assert all(r.ok for r in results), [(r.backend, r.message) for r in results]
    assert {r.backend: r.memory_faults for r in results} == {
        **{backend: [] for backend in backends},
        "xla-cpu": None,
    }


_MAKE_OVERRUN = """
import sys
import numpy as np
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, y = b.input((2, 3, 4), "float32"), b.input((2, 4, 5), "float32")
program = b.build(b.node("matmul", x, y))
inputs = [np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)]
case = Case(program, inputs, ("cpu-blas@O0",))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
    kinds = {(f.kind, f.oracle) for f in judgement.findings}
    assert kinds == {("overrun", "memory")}, judgement.findings  # the values are right
    finding = judgement.findings[0]
    assert "past its end" in finding.detail, finding.detail
    attribution = Attributor(runner).attribute(case, finding)
    assert attribution.layer == "blas", attribution
    assert attribution.evidence["cpu-blas[:bufferized]"] == "passes", attribution
open(sys.argv[1], "w").write(reproducer(case, finding))
"""


@pytest.mark.slow
def test_a_gemm_past_the_last_matrix_is_found_attributed_and_reproduced(tmp_path: Path) -> None:
    """The BLAS stage's batched helper planted to run one gemm too many: every answer stays
    right, the output's guard bytes change. An ``overrun`` finding attributed to ``blas`` (the
    bufferized stage completed without it passes), whose reproducer fails with the bug and
    passes without it."""
    from harness.selftest import MUTATIONS

    mutation = next(m for m in MUTATIONS if m.name == "batch-gemm-overrun")
    verdict_fails_only_with_the_bug(tmp_path, mutation, _MAKE_OVERRUN, "memory")


_MAKE_UNINSTRUMENTED = _MAKE.replace('"leak", "memory"', '"uninstrumented", "memory"').replace(
    """    assert attribution.layer == "deallocation", attribution
    assert attribution.evidence["stage bufferized"].endswith(" 0 deallocations"), attribution
""",
    """    assert attribution.layer == "runtime", attribution
""",
)


@pytest.mark.slow
def test_a_kernel_that_comes_back_uninstrumented_is_a_finding(tmp_path: Path) -> None:
    """``compiler.runtime.instrumented()`` planted to turn instrumentation off (mutant m11 of a
    mutation run made its default ``on=True`` False; the worker now says which it wants, so
    here it ignores what it is asked): every answer stays right and the memory and blas
    oracles would pass blind. An ``uninstrumented`` memory finding attributed to the runtime,
    whose reproducer (compiling inside ``instrumented()`` as the worker does) fails with the
    bug and passes without it."""
    mutation = Mutation(
        "instrumented-off",
        "runtime.py",
        '    return setting(_LOCAL, "instrument", on)',
        '    return setting(_LOCAL, "instrument", False)',
        "instrumented() turns instrumentation off",
    )
    verdict_fails_only_with_the_bug(tmp_path, mutation, _MAKE_UNINSTRUMENTED, "memory")


def test_an_uninstrumented_line_is_its_own_finding_of_the_runtime() -> None:
    """The worker's ``uninstrumented`` lines are one finding of the case (the setting is the
    process's: a 40 s session with it planted had filed 23 entries, one per backend and dtype),
    attributed to the runtime (compiler/runtime.py), not to deallocation."""
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.memory import UNINSTRUMENTED_LINE, Memory
    from harness.run.task import BackendResult
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(_keep_the_row_sums(b), [np.ones((3, 5), np.float32)])
    results = [
        BackendResult("cpu-loops@O0", "ok", memory_faults=[UNINSTRUMENTED_LINE]),
        BackendResult("cpu-blas@O0", "ok", memory_faults=[]),
        BackendResult("cpu-vector@O0", "ok", memory_faults=[UNINSTRUMENTED_LINE]),
    ]
    (found,) = Memory().judge(Observation(case, results, {}, Judgement()), [])
    assert (found.kind, found.backends) == ("uninstrumented", ("cpu-loops@O0", "cpu-vector@O0"))
    assert found.signature.dtype == "any"  # one entry, whatever the case's dtype
    assert Attributor(None).attribute(case, found).layer == "runtime"


def test_backends_named_as_users_run_them_run_uninstrumented() -> None:
    """Instrumentation changes what LLVM optimizes (cpu-vector's temporaries get a poisoned
    initializer and a guard whose address escapes): a bfloat16 min reduction narrowed by LLVM
    to a conversion that flushes subnormals was wrong only uninstrumented. So the backends named
    as users run them (``case.AS_SHIPPED``, and their triage variants) run their kernels as
    users get them, and nothing calls them blind; every other backend stays instrumented."""
    from harness.case import Case, instrumented_backend
    from harness.run.task import Task
    from harness.run.worker import execute
    from strategies.model import ProgramBuilder

    shipped = ("cpu-vector", "cpu-blas", "cpu", "cpu-vector+generic-cpu", "cpu-vector+mlir-runtime")
    assert not any(instrumented_backend(b) for b in shipped)
    named = ("cpu-vector@O0", "cpu-vector@O3", "cpu-loops", "cpu-vector[:vectorized]", "xla-cpu")
    assert all(instrumented_backend(b) for b in named)

    b = ProgramBuilder()
    backends = ("cpu-vector@O0", "cpu-vector", "cpu-blas@O0", "cpu-blas")
    results = execute(Task(Case(_keep_the_row_sums(b), [np.ones((3, 5), np.float32)], backends)))
    by_backend = {r.backend: r for r in results.results}
    assert all(r.ok for r in by_backend.values())
    for backend in ("cpu-vector@O0", "cpu-blas@O0"):  # counted, guarded, nothing wrong
        assert by_backend[backend].leaked == 0 and by_backend[backend].memory_faults == []
    for backend in ("cpu-vector", "cpu-blas"):  # not counted, and not an uninstrumented finding
        assert by_backend[backend].leaked is None and by_backend[backend].memory_faults is None


def test_an_output_that_shares_memory_with_an_argument_is_found_on_any_backend(
    monkeypatch,
) -> None:
    """Every target returns arrays of its own (a later write into an argument must not change
    an answer): the worker checks each call's output against its arguments on every backend,
    NumPy's graph-numpy too, and the memory oracle reports ``aliased-input``. A graph-numpy
    that returned NumPy's values uncopied (``x``, ``x.T``: views of the argument) was a
    held-out plant no oracle saw; the real targets pass."""
    from compiler import backends
    from harness.case import Case
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.memory import Memory
    from harness.run.task import Task
    from harness.run.worker import execute
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(b.node("permute_dims", x, axes=(1, 0)))
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    targets = ("cpu-loops@O0", "cpu-vector@O0", "graph-numpy")
    case = Case(program, inputs, targets)
    results = execute(Task(case, targets)).results
    assert all(r.ok for r in results), [(r.backend, r.message) for r in results]
    assert Memory().judge(Observation(case, results, {}, Judgement()), []) == []

    numpy_backend = backends.get("graph-numpy")

    def uncopied(self, artifacts, arrays):  # NumPy's views of the arguments, as they are
        return [np.asarray(arrays[0]).T]

    monkeypatch.setattr(type(numpy_backend), "run", uncopied)
    results = execute(Task(case, targets)).results
    found = Memory().judge(Observation(case, results, {}, Judgement()), [])
    assert [(f.kind, f.backends) for f in found] == [("aliased-input", ("graph-numpy",))]
    assert "shares memory with argument(s) [0]" in found[0].detail
