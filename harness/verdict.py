"""The oracle's verdict, for standalone reproducers: judge an output exactly as a session did.

A reproducer embeds its program as JSON and its inputs exactly; ``differential`` recomputes the
references (NumPy, the extended-precision truth, the perturbed evaluations, JAX) and applies the
differential oracle's error model, prints the error, the allowed error and the verdict, and
returns the exit status (1 when the oracle rejects), so a reproducer fails exactly when the
oracle fails.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .case import Case
from .oracles import tolerance
from .oracles.differential import against_references, misshapen
from .run.references import references


def judge_output(
    case: Case, actual: Any, use_jax: bool = True, backend: str = ""
) -> tolerance.Verdict:
    """The differential oracle's verdict on ``actual`` as the output of ``case`` computed by
    ``backend`` (judged, as the oracle does, without references it shares its implementation
    with: JAX never judges ``xla-cpu``; any value is right where the oracle says so:
    ``run.undetermined``'s unbounded elements)."""
    refs = references(case, use_jax)
    numpy_ref = refs["numpy"]
    actual = np.asarray(actual)
    if not numpy_ref.ok:
        return tolerance.Verdict(False, f"NumPy rejects the program: {numpy_ref.error_type}")
    wrong = misshapen(actual, numpy_ref.output)
    if wrong is not None:
        return tolerance.Verdict(False, wrong[1])
    return against_references(case, refs, actual, backend)


def differential(
    program_json: str, inputs: list[np.ndarray], actual: Any, backend: str = ""
) -> int:
    """Print the verdict on ``actual`` (computed by ``backend``) and return 1 if the oracle
    rejects it, else 0."""
    from strategies.model import Program

    case = Case(Program.from_json(program_json), [np.asarray(a) for a in inputs])
    verdict = judge_output(case, actual, backend=backend)
    if verdict.ok:
        print(f"ok: largest error {verdict.max_error:.3g} ({verdict.excess:.2f} of the allowed)")
        return 0
    print(f"FAILS the differential oracle: {verdict.reason}", file=sys.stderr)
    return 1


def gpt2_model(model: dict[str, Any], seed: int, leading: list[np.ndarray], backend: str) -> int:
    """Run the GPT-2 model (``model``: a ``ModelSpec`` as a dict; the weights past ``leading``,
    the ids, positions, wte and wpe, made from ``seed``) as the gpt2-model oracle does, print
    every problem it finds (a sublayer call that is wrong as its own program first, as the
    oracle narrows it), and return 1 if there is one, else 0."""
    from strategies.model.gpt2 import ModelSpec, program

    from .oracles.gpt2 import compiled_calls, judge_logits, references_of, wrong_sublayer
    from .run.gpt2 import full_inputs, problems, run_model, usable

    spec_ = ModelSpec.from_dict(dict(model))
    inputs = full_inputs(spec_, int(seed), [np.asarray(a) for a in leading])
    if not usable(spec_, inputs):
        print("the inputs do not fit the model (shapes, positions, ids, stored dtype)")
        return 0
    forward = Case(program(spec_), inputs, (backend,))
    run = run_model(spec_, inputs, backend)
    found = problems(spec_, run, judge_logits(forward, references_of(forward)))
    for kind, facet, detail in found:
        for finding in wrong_sublayer(compiled_calls(spec_, run, facet), backend, references_of):
            print(f"FAILS as its own program ({finding.case.origin}, {finding.oracle}): "
                  f"{finding.kind}: {finding.detail}", file=sys.stderr)  # fmt: skip
        print(f"FAILS the gpt2-model oracle [{facet}]: {kind}: {detail}", file=sys.stderr)
    if not found:
        print(f"ok: loaded, forward passes and {spec_.steps} generation steps as owed")
    return 1 if found else 0


def spec(program_json: str, inputs: list[np.ndarray]) -> int:
    """Print the spec oracle's verdict for this program and inputs (the primitive table's
    elementwise rules against NumPy's ufuncs; the composites' shared definition, compiler/ops.py,
    against the independent implementation, in extended precision and in the program's dtypes);
    return 1 if they disagree, else 0."""
    from strategies.model import Program

    from .oracles.spec import spec_verdict

    case = Case(Program.from_json(program_json), [np.asarray(a) for a in inputs])
    refs = references(case, False)
    if not refs["numpy"].ok or not refs["truth"].ok:
        print("NumPy or the extended-precision truth rejects the program", file=sys.stderr)
        return 1
    detail = spec_verdict(case, refs)
    if detail is None:
        print("ok: the shared definitions agree with the independent implementations")
        return 0
    print(f"FAILS the spec oracle: {detail}", file=sys.stderr)
    return 1


def error_path(
    program_json: str, inputs: list[np.ndarray], raised: BaseException | None, backend: str = ""
) -> int:
    """Print the error-path oracle's verdict on a valid program's call that raised ``raised``
    (None: it returned) on ``backend``: return 1 if NumPy's reference takes another path (it
    raises and the call did not, or the other way, or with another class of error), else 0."""
    from strategies.model import Program

    from .oracles.error_path import wrong_error
    from .run.task import BackendResult
    from .run.worker import failure

    case = Case(Program.from_json(program_json), [np.asarray(a) for a in inputs])
    numpy_ref = references(case, False)["numpy"]
    result = BackendResult(backend, "ok") if raised is None else failure(backend, raised)
    if result.status not in ("ok", "rejected"):
        print(f"FAILS: the compiler failed ({result.status}): {raised!r}", file=sys.stderr)
        return 1
    detail = wrong_error(numpy_ref, result)
    if detail is None:
        said = "returned" if numpy_ref.ok else f"raised {numpy_ref.error_type}"
        print(f"ok: NumPy and the compiler both {said}")
        return 0
    print(f"FAILS the error-path oracle: {detail}", file=sys.stderr)
    return 1


def vectorized(compiled: Any) -> int:
    """Print the schedule oracle's verdict on a ``cpu-vector`` compilation (``compiled``, from
    ``compiler.jit(f).compile(...)``): return 1 if a structured op the target promises to
    vectorize is left as scalar loops after its ``vectorized`` stage, else 0."""
    from .oracles.schedule import STAGE, left_as_loops

    text = compiled.stages.get(STAGE, "")
    if not text:
        print(f"no {STAGE!r} stage: not a cpu-vector target", file=sys.stderr)
        return 1
    left = left_as_loops(text)
    if not left:
        print("ok: every structured op vectorized (or exempt)")
        return 0
    print(f"FAILS the schedule oracle: left as loops: {'; '.join(left)}", file=sys.stderr)
    return 1


def blas(compiled: Any, *inputs: Any) -> int:
    """Print the blas oracle's verdict on a compilation with a BLAS stage (``compiled``, made
    with ``COMPILER_INSTRUMENT=1`` set): call it once on ``inputs``; return 1 if it made fewer
    gemm calls than its bufferized module's matmuls promise, else 0."""
    from compiler.runtime import blas_calls

    from .oracles.blas import STAGE, promised_calls, unjudged

    why = unjudged(compiled)
    if why:
        print(why, file=sys.stderr)
        return 1
    promised = promised_calls(compiled.stages[STAGE])
    before = blas_calls()
    compiled(*inputs)
    made = blas_calls() - before
    if promised is None or made >= promised:
        print(f"ok: {made} gemm call(s), {promised} promised")
        return 0
    print(f"FAILS the blas oracle: {made} gemm call(s), {promised} promised", file=sys.stderr)
    return 1


def persisted(function: Any, inputs: list[Any], backend: str) -> int:
    """Print the determinism oracle's verdict on the persistent compilation cache: ``function``
    on ``backend`` compiled in this process, then compiled, stored to and loaded back from a
    fresh cache directory (as a second process with ``COMPILER_CACHE_DIR`` would), then the
    same for its twin with two same-typed arguments exchanged; return 1 if either loaded
    kernel's output differs in any bit (a crash kills the script), else 0."""
    import tempfile

    import compiler
    from compiler.runtime import instrumented

    from .run.worker import same_bits, through_the_persistent_cache

    fn = compiler.jit(function)
    with instrumented(False):
        want = np.array(fn(*inputs, target=backend), copy=True)
    with tempfile.TemporaryDirectory() as directory:
        got = through_the_persistent_cache(fn, list(inputs), backend, directory)
    if got is None:
        print(f"not judged: {backend} stored no kernel (not one of our CPU targets, or no ld)")
        return 0
    if not same_bits(got.output, want):
        print(
            "FAILS the determinism oracle: the kernel loaded from the persistent cache gives "
            f"{got.output!r} where the one compiled in this process gives {want!r}",
            file=sys.stderr,
        )
        return 1
    if got.twin is not None and not same_bits(got.twin, want):
        i, j = got.swapped
        print(
            f"FAILS the determinism oracle: the program with arguments {i} and {j} exchanged, "
            "called on the exchanged inputs through the same persistent cache, gives "
            f"{got.twin!r} where this program gives {want!r}",
            file=sys.stderr,
        )
        return 1
    print("ok: the kernels loaded from the persistent cache give the same bits (NaN as NaN)")
    return 0


def configured(function: Any, inputs: list[Any], backend: str) -> int:
    """Print the determinism oracle's verdict on the caches of compiled code under other
    workarounds (``run.worker.other_configuration``, a fresh persistent cache directory, the
    canned probe where the program tells nothing): 1 if one served a compile another
    configuration's stages (a crash kills the script), else 0."""
    import tempfile

    import compiler

    from .run.worker import other_configuration

    with tempfile.TemporaryDirectory() as directory:
        story = other_configuration(
            compiler.jit(function), list(inputs), backend, directory, probe=True
        )
    if story:
        print(f"FAILS the determinism oracle: {story}", file=sys.stderr)
        return 1
    print("ok: every cache served each configuration its own stages (or none could tell)")
    return 0


def successor(function: Any, inputs: list[Any], backend: str) -> int:
    """Print the determinism oracle's verdict on the specialization cache's key for functions:
    ``function`` jitted and compiled on ``backend``, then a second function of the same code
    and name, and a third made where the first lived once it was collected, each returning its
    first argument, called with arguments of the same types
    (``run.worker.after_another_function``); return 1 if either did not return its first
    argument (a crash kills the script), else 0."""
    import compiler
    from compiler.runtime import instrumented

    from .oracles.structural import SUCCESSORS
    from .run.worker import after_another_function

    with instrumented():  # as the fuzzer's worker compiles
        story = after_another_function(compiler.jit(function), list(inputs), backend)
    if story:
        print(f"FAILS the determinism oracle: {SUCCESSORS[story]}", file=sys.stderr)
        return 1
    print("ok: each function returned its own answer")
    return 0


def concurrent(function: Any, inputs: list[Any], backend: str, rounds: int = 50) -> int:
    """Print the determinism oracle's verdict on calls from several threads at once: up to
    ``rounds`` times, a new jitted ``function`` called from ``run.worker.THREADS`` threads at
    once, each on its own arguments (``run.worker.concurrent_calls``); return 1 at the first
    round in which a call did not give what its arguments give alone (a crash kills the
    script), else 0. A race shows in some rounds only: the oracle saw it in one."""
    import compiler
    from compiler.runtime import instrumented

    from .oracles.structural import CONCURRENT
    from .run.worker import concurrent_calls

    for round_ in range(rounds):
        with instrumented():  # as the fuzzer's worker compiles
            story = concurrent_calls(compiler.jit(function), list(inputs), backend)
        if story:
            print(f"FAILS the determinism oracle (round {round_ + 1}): {CONCURRENT}: {story}",
                  file=sys.stderr)  # fmt: skip
            return 1
    print(f"ok: every call of {rounds} rounds gave its own answer")
    return 0


def levels(function: Any, inputs: list[Any], backend: str, any_zero: bool = False) -> int:
    """Print the levels oracle's verdict: ``function`` compiled on ``backend`` (as shipped, not
    instrumented) and on the same pipeline at LLVM -O0 (instrumented, as the fuzzer's worker
    compiles the default targets), each called on ``inputs``; return 1 if the outputs differ
    in any bit (a NaN matching any NaN; with ``any_zero``, a zero any zero), else 0."""
    import compiler
    from compiler.runtime import instrumented

    from .oracles.levels import low_partner
    from .run.worker import same_bits

    low = low_partner(backend)
    if low is None:
        print(f"not judged: {backend} is not one of our pipelines above -O0")
        return 0
    fn = compiler.jit(function)
    with instrumented(False):
        got = np.array(fn.compile(*inputs, target=backend)(*inputs), copy=True)
    with instrumented(True):
        want = np.array(fn.compile(*inputs, target=low)(*inputs), copy=True)
    if not same_bits(got, want, any_zero):
        print(
            f"FAILS the levels oracle: {backend} gives {got!r} where {low}, the same pipeline at "
            f"LLVM -O0, gives {want!r}",
            file=sys.stderr,
        )
        return 1
    print(f"ok: {backend} and {low} give the same bits (NaN as NaN)")
    return 0


def causal_definition(program_json: str, inputs: list[Any], scale: float) -> int:
    """Print the causal oracle's verdict on the shared definitions: the program evaluated by
    NumPy with ``compiler/ops.py``'s composites, and with the spec oracle's independent ones,
    on ``inputs`` and on them with the first input's last two rows near ``scale``
    (``oracles.structural.definition_leak``); return 1 if the shared side's earlier rows
    change where the independent side's keep their bits, else 0."""
    from strategies import Program

    from .oracles.structural import definition_leak

    leak = definition_leak(
        Program.from_json(program_json), [np.asarray(a) for a in inputs], only=scale
    )
    if not leak:
        print("ok: the shared definitions' earlier rows keep their bits")
        return 0
    print(f"FAILS the causal oracle: {leak}", file=sys.stderr)
    return 1


def memory(compiled: Any, *inputs: Any) -> int:
    """Print the memory oracle's verdict on an instrumented compilation (``compiled``, made
    with ``COMPILER_INSTRUMENT=1`` set): call it once on ``inputs``; return 1 if the call left
    heap blocks it allocated unfreed (or freed more than it allocated), wrote outside a buffer
    it was handed or a heap block it allocated, or wrote into an input; else 0."""
    from compiler.runtime import fault_mark, live_blocks, memory_faults

    from .oracles.base import instrumented_kernel

    if not instrumented_kernel(compiled):
        said = "the kernel is not instrumented (compile it inside compiler.runtime.instrumented())"
        print(f"FAILS the memory oracle: {said}", file=sys.stderr)
        return 1
    before, mark = live_blocks(), fault_mark()
    compiled(*inputs)
    leaked, faults = live_blocks() - before, memory_faults(mark)
    if leaked == 0 and not faults:
        print("ok: every heap block the call allocated was freed; no store outside its buffers")
        return 0
    if leaked:
        said = f"FAILS the memory oracle: {leaked:+d} heap block(s) live after the call"
        print(said, file=sys.stderr)
    for fault in faults:
        print(f"FAILS the memory oracle: {fault}", file=sys.stderr)
    return 1


def arguments(compiled: Any, *inputs: Any, which: int = 0) -> int:
    """Print the arguments oracle's verdict on a specialization (``compiled``): called with
    each misfit of ``inputs`` (input ``which`` with one more row, in a wider dtype, and one
    array too many), it must raise ``TypeError``; return 1 if it did anything else, else 0."""
    from .oracles.arguments import check

    said = check(compiled, list(inputs), which)
    if not said:
        print("ok: every misfit call was refused with TypeError")
        return 0
    print(f"FAILS the arguments oracle: {said}", file=sys.stderr)
    return 1


__all__ = [
    "arguments",
    "blas",
    "causal_definition",
    "differential",
    "error_path",
    "gpt2_model",
    "judge_output",
    "memory",
    "spec",
    "vectorized",
]
