"""Oracles classify backend results against the references."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import pytest

from harness import oracles
from harness.case import Case
from harness.oracles.base import Finding
from harness.run.references import Reference, references
from harness.run.task import BackendResult
from harness.triage.signature import Signature


def judge(case: Case, outputs: dict[str, BackendResult]) -> oracles.Judgement:
    return oracles.judge_results(case, list(outputs.values()), references(case))


def ok(backend: str, output: np.ndarray) -> BackendResult:
    return BackendResult(backend, "ok", output=output)


def test_correct_outputs_give_no_findings(matmul_case):
    expected = matmul_case.inputs[0] @ matmul_case.inputs[1]
    j = judge(matmul_case, {"a": ok("cpu-loops", expected), "b": ok("cpu-blas", expected)})
    assert j.findings == [] and j.ambiguities == []


def test_wrong_dtype_shape_and_values_are_findings(matmul_case):
    expected = matmul_case.inputs[0] @ matmul_case.inputs[1]
    off = expected.copy()
    off[1, 2] *= np.float32(1.001)
    j = judge(
        matmul_case, {"a": ok("cpu-loops", expected.astype(np.float64)), "b": ok("cpu-blas", off)}
    )
    kinds = {f.kind: f for f in j.findings}
    assert set(kinds) == {"wrong-dtype", "mismatch"}
    assert kinds["mismatch"].backends == ("cpu-blas",)
    j = judge(matmul_case, {"a": ok("cpu-loops", expected.T.copy())})
    assert [f.kind for f in j.findings] == ["wrong-shape"]


def test_all_failing_backends_make_one_finding(matmul_case):
    wrong = np.zeros((3, 4), np.float32)
    j = judge(matmul_case, {"a": ok("cpu-loops", wrong), "b": ok("cpu-blas", wrong)})
    assert len(j.findings) == 1 and set(j.findings[0].backends) == {"cpu-loops", "cpu-blas"}
    assert j.findings[0].signature.to_dict()["backend"] == "cpu-blas+cpu-loops"


def test_error_paths(matmul_case):
    verifier = BackendResult(
        "cpu-loops",
        "compiler-error",
        error_type="CompilerError",
        message="'linalg.matmul' op bad",
        stage="parse/verify",
    )
    rejected = BackendResult("cpu-blas", "rejected", error_type="ValueError", message="no")
    j = judge(matmul_case, {"a": verifier, "b": rejected})
    assert {f.kind for f in j.findings} == {"verifier-error", "wrong-error"}
    unsupported = BackendResult("cpu-loops", "unsupported", error_type="UnsupportedFeature")
    j = judge(matmul_case, {"a": unsupported})
    assert j.findings == [] and j.unsupported


def test_tracing_that_refuses_a_generated_program_is_a_finding(matmul_case):
    """The generator builds only what the compiler's result rules accept, so a valid program
    that tracing calls unsupported contradicts the primitive table (a frontend regression that
    was counted as a known limitation, never seen); one backend's own limitation is not."""
    refused = BackendResult(
        "cpu-loops", "unsupported", error_type="UnsupportedFeature",
        message="not supported by the compiler yet: NumPy ufunc np.greater_equal", stage="trace",
    )  # fmt: skip
    j = judge(matmul_case, {"a": refused})
    assert [f.kind for f in j.findings] == ["wrong-error"] and not j.unsupported
    assert "primitive table declares supported" in j.findings[0].detail
    backend_only = BackendResult("cpu-loops", "unsupported", error_type="UnsupportedFeature")
    assert judge(matmul_case, {"a": backend_only}).findings == []


def test_an_invalid_program_is_judged_by_its_violation_even_when_unsupported(matmul_case):
    """A limitation raised for an invalid program is judged against the violation's allowed
    errors (it used to be counted as a limitation before the violation was looked at)."""
    from dataclasses import replace

    from strategies.model.invalid import InvalidProgram

    def case(violation: str) -> Case:
        subject = InvalidProgram(matmul_case.program, violation, None, matmul_case.program.inputs)
        return replace(matmul_case, subject=subject)

    refs = {
        "numpy": Reference("numpy", np.zeros((3, 4), np.float32), None, ""),
        "truth": Reference("truth", np.zeros((3, 4), np.float32), None, ""),
    }
    unsupported = BackendResult(
        "cpu-loops", "unsupported", error_type="UnsupportedFeature", stage="trace"
    )
    j = oracles.judge_results(case("empty_slice"), [unsupported], refs)
    assert j.findings == [] and j.agreed_rejection and j.unsupported
    j = oracles.judge_results(case("unsupported_dtype"), [unsupported], refs)
    assert [f.kind for f in j.findings] == ["wrong-error"]


def test_an_invalid_program_numpy_accepts_is_an_ambiguity_the_compiler_may_accept(matmul_case):
    """A program labelled with a violation NumPy rejects, which NumPy accepts (a broadcast
    violation minimized to extents of 1 broadcasts), is not invalid: a backend accepting it is
    no finding, only an ambiguity. The minimizer had kept such a "finding" of a plant's."""
    from dataclasses import replace

    from strategies.model.invalid import InvalidProgram

    subject = InvalidProgram(matmul_case.program, "broadcast", None, matmul_case.program.inputs)
    case = replace(matmul_case, subject=subject)
    assert case.invalid.numpy_rejects
    answer = np.zeros((3, 4), np.float32)
    refs = {
        "numpy": Reference("numpy", answer, None, ""),
        "truth": Reference("truth", answer, None, ""),
    }
    j = oracles.judge_results(case, [ok("cpu-loops", answer)], refs)
    assert j.findings == [] and j.ambiguities, j
    rejecting = {**refs, "numpy": Reference("numpy", None, "ValueError", "cannot broadcast")}
    j = oracles.judge_results(case, [ok("cpu-loops", answer)], rejecting)
    assert [f.kind for f in j.findings] == ["wrong-error"]


def test_invalid_program_must_be_rejected_alike(matmul_case):
    refs = {
        "numpy": Reference("numpy", None, "ValueError", "matmul: mismatch"),
        "truth": Reference("truth", None, "ValueError", ""),
    }
    accepted = ok("cpu-loops", np.zeros((3, 4), np.float32))
    agreed = BackendResult("cpu-blas", "rejected", error_type="ValueError")
    j = oracles.judge_results(matmul_case, [accepted, agreed], refs)
    assert [f.kind for f in j.findings] == ["wrong-error"] and j.agreed_rejection
    other = BackendResult("cpu-blas", "rejected", error_type="TypeError")
    j = oracles.judge_results(matmul_case, [other], refs)
    assert [f.kind for f in j.findings] == ["wrong-error"]


def test_causality_needs_bit_identical_early_rows(matmul_case):
    from harness.oracles.base import Derived, Judgement, Observation
    from harness.run.isolation import Outcome
    from harness.run.task import Task, TaskResult

    causal = oracles.get("causal")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)

    def judge(changed):
        obs = Observation(matmul_case, [ok("cpu-loops", a)], {}, Judgement())
        derived = Derived("perturbed-future", Task(matmul_case), {"keep": 2})
        outcome = Outcome("ok", TaskResult([ok("cpu-loops", changed)]))
        return causal.judge(obs, [(derived, outcome)])

    b = a.copy()
    b[2] += 1  # only the last row changed: fine
    assert judge(b) == []
    b[0, 1] = np.nextafter(b[0, 1], np.float32(100))
    assert [f.kind for f in judge(b)] == ["causality"]
    assert "(first difference at (0, 1))" in judge(b)[0].detail
    # A NaN's sign and a zero's sign are the kernel's (a masked future row's 0 * v is -0.0
    # where v < 0, kept by a sum started from -0.0): no leak. They were reported, a NaN's "at ()".
    a[0, 0], a[1, 2] = 0.0, np.nan
    b = a.copy()
    b[0, 0], b[1, 2], b[2] = -0.0, -np.nan, 7
    assert judge(b) == []
    b[1, 3] = np.nan
    assert [f.detail for f in judge(b)] == [
        "output row (1,) changed when only rows >= 2 of the input changed (first difference "
        "at (1, 3))"
    ]


def test_large_inputs_are_stored_as_their_recipe_and_regenerate_bit_exactly(matmul_case):
    from harness.case import INLINE_LIMIT, generated_array

    shape = (INLINE_LIMIT // 5 + 1, 5)
    recipe = {"seed": 7, "scale": 0.5}
    big = generated_array(shape, "float32", 7, 0.5)
    small = matmul_case.inputs[1]
    case = Case(matmul_case.program, [big, small], matmul_case.backends, recipes=[recipe, None])
    data = case.to_dict()
    assert data["inputs"][0]["generator"] == recipe and "zlib" not in data["inputs"][0]
    assert "zlib" in data["inputs"][1]
    back = Case.from_dict(data)
    assert back.inputs[0].tobytes() == big.tobytes() and back.inputs[0].dtype == big.dtype
    assert back.to_dict() == data


def test_determinism_recompiles_one_backend_of_the_case_drawn_from_its_data(monkeypatch):
    """Every backend is called again, but only one recompiles from scratch (a recompile costs a
    whole case); which one is the case's own draw, so a replay recompiles the same one."""
    import contextlib

    from compiler import driver
    from harness.run import worker
    from harness.run.task import Task
    from harness.run.worker import _execute
    from strategies.model import ProgramBuilder

    determinism = oracles.ORACLES["determinism"]
    backends = ("cpu-loops", "cpu-blas", "cpu-vector")
    picked = set()
    for n in range(2, 40):
        b = ProgramBuilder()
        program = b.build(b.node("exp", b.input((n, 3), "float32")))
        case = Case(program, [np.ones((n, 3), np.float32)], backends)
        task, again = Task(case), Task(case)
        determinism.configure(case, task)
        determinism.configure(case, again)
        assert task.repeat and task.recompile in backends and task.recompile == again.recompile
        assert Task.from_dict(task.to_dict()).recompile == task.recompile
        picked.add(task.recompile)
    assert picked == set(backends)

    fresh = []
    real = driver.fresh

    @contextlib.contextmanager
    def counted():
        fresh.append(True)
        with real():
            yield

    monkeypatch.setattr(driver, "fresh", counted)
    # (the configurations' check compiles afresh too, on the recompiled backend: its own test)
    monkeypatch.setattr(worker, "other_configuration", lambda *args, **kwargs: "")
    task = Task(case, ("cpu-loops", "cpu-blas"), repeat=True, recompile="cpu-blas")
    results = _execute(task).results
    assert [r.backend for r in results] == ["cpu-loops", "cpu-blas"]
    assert all(r.deterministic and r.reused and r.independent for r in results)
    assert len(fresh) == 1


def test_every_draw_of_an_oracle_is_the_same_on_any_backends_that_hold_its_pick() -> None:
    """The minimizer judges a case on its failing backends and stores it on all of them; each
    draw an oracle makes (does it run, the backend it recompiles or calls tupled, the order of
    several results, the input the arguments check changes, the value the intermediate check
    reads) comes out the same on both, so the stored case replays as it was judged. Draws from
    the digest, backends included, moved on a subset (a tupled finding replayed on another
    backend than it was found on)."""
    from itertools import combinations

    from harness.oracles.arguments import which_input
    from harness.oracles.intermediate import intermediate_case
    from harness.oracles.tupled import several
    from harness.run.task import Task
    from strategies.model import ProgramBuilder

    every = ("cpu-loops@O0", "cpu-blas@O0", "cpu-vector@O0", "cpu-blas", "cpu-vector")
    b = ProgramBuilder()
    x, y = b.input((3, 4), "float32"), b.input((3, 4), "float32")
    e = b.node("exp", b.node("multiply", x, y))
    program = b.build(b.node("divide", e, b.node("sum", e, axis=1, keepdims=True)))
    picks: dict[str, set[str]] = {"tupled": set(), "recompile": set()}
    for k in range(24):
        x0 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) + np.float32(k)
        case = Case(program, [x0, x0 * 2], every)
        for oracle in oracles.ORACLES.values():
            task = Task(case)
            oracle.configure(case, task)
            picked = {task.tupled, task.recompile} - {""}
            picks["tupled"].add(task.tupled)
            picks["recompile"].add(task.recompile)
            for n in (1, 2, 3):
                for subset in combinations(every, n):
                    if not picked <= set(subset):
                        continue
                    on = case.on(subset)
                    again = Task(on)
                    oracle.configure(on, again)
                    assert (again.tupled, again.recompile) == (task.tupled, task.recompile)
                    if oracle.fits(on) and oracle.fits(case):
                        assert oracle.wants(on) == oracle.wants(case), oracle.name
        for subset in (every[:1], every[3:]):
            on = case.on(subset)
            assert several(on) == several(case) and which_input(on) == which_input(case)
            assert intermediate_case(on).program == intermediate_case(case).program
    # the picks still vary with the case
    assert len(picks["tupled"] - {""}) > 2 and len(picks["recompile"] - {""}) > 2


@pytest.mark.parametrize("cache", ["jit", "driver", "persist"])
def test_every_cache_of_compiled_code_keys_the_workarounds(cache, monkeypatch) -> None:
    """A repeat-checked case's cpu-vector program is also compiled with the survivable
    workarounds off (``worker.other_configuration``): the @jit specialization cache, the
    driver's memos and the
    persistent cache must each serve every configuration its own stages. Each cache planted to
    forget them (the jit cache did so in the compiler as it was; a held-out plant in the
    persistent cache's key survived its session) is a "nondeterministic" finding attributed
    to that cache's layer, and its reproducer fails with the plant and passes without."""
    import types

    from compiler import api, driver, persist
    from harness.report.reproducer import reproducer
    from harness.run.references import references
    from harness.run.task import Task
    from harness.run.worker import CONFIGURATION, _execute
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("max", b.input((3, 300), "float32"), axis=-1))
    x = -np.abs(np.linspace(1, 2, 900, dtype=np.float32)).reshape(3, 300)
    backends = ("cpu-loops@O0", "cpu-vector@O0")
    case = Case(program, [x], backends)
    # On the cpu-vector backend, whichever one recompiles (its planner reads the workarounds).
    task = Task(case, backends, repeat=True, recompile="cpu-loops@O0")
    loops, result = _execute(task).results
    assert result.ok and result.configured == ""

    def script() -> int:
        text = reproducer(case, finding)
        try:
            exec(compile(text, "reproducer.py", "exec"), {"__name__": "__main__"})
        except SystemExit as stop:
            return int(stop.code or 0)
        return 0

    with monkeypatch.context() as planted:
        if cache == "jit":
            planted.setattr(api, "workarounds", types.SimpleNamespace(state=lambda: ()))
        elif cache == "driver":
            planted.setattr(driver, "workarounds", types.SimpleNamespace(state=lambda: ()))
        else:
            real = persist.key
            planted.setattr(persist, "key", lambda built, t, s, w: real(built, t, s, ()))
        loops, result = _execute(task).results
        assert result.configured.startswith(f"{CONFIGURATION} [{cache}]"), result.configured
        assert loops.configured == ""  # not run there
        refs = references(case)
        (finding,) = oracles.judge_results(case, [loops, result], refs, ("determinism",)).findings
        assert finding.backends == ("cpu-vector@O0",)
        assert finding.kind == "nondeterministic" and CONFIGURATION in finding.detail
        assert Attributor(None).attribute(case, finding).layer == cache
        assert "harness.verdict import configured" in reproducer(case, finding)
        assert script() == 1
    assert script() == 0


def test_a_program_that_cannot_tell_the_configurations_apart_falls_back_on_the_probe(
    monkeypatch, tmp_path
) -> None:
    """A float32 add has the same stages with the workarounds off: the configurations' check
    tells nothing on it, and (for ``PROBE_SHARE`` of the cases, and always in the reproducer)
    runs on the canned probe instead, a max over long rows. A persistent cache's key planted
    to forget the workarounds is then found on any program: one program-free finding per cache
    (facet ``configuration:persist``), whose reproducer fails with the plant and passes
    without."""
    import compiler
    from compiler import persist
    from harness.report.reproducer import reproducer
    from harness.run.worker import CONFIGURATION, other_configuration
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("add", b.input((3,), "float32"), b.input((3,), "float32")))
    inputs = [np.ones(3, np.float32), np.arange(3, dtype=np.float32)]
    case = Case(program, inputs, ("cpu-vector@O0",))
    fn = compiler.jit(case.traced_function())
    assert other_configuration(fn, inputs, "cpu-vector@O0", str(tmp_path / "a"), probe=True) == ""
    real = persist.key
    monkeypatch.setattr(persist, "key", lambda built, t, s, w: real(built, t, s, ()))
    alone = other_configuration(fn, inputs, "cpu-vector@O0", str(tmp_path / "b"))
    assert alone == ""  # the add alone cannot tell
    story = other_configuration(fn, inputs, "cpu-vector@O0", str(tmp_path / "c"), probe=True)
    assert story.startswith(f"{CONFIGURATION} (on the canned probe") and "[persist]" in story
    result = BackendResult("cpu-vector@O0", "ok", output=inputs[0] + inputs[1], configured=story)
    result.deterministic = result.reused = result.independent = True
    refs = references(case)
    (finding,) = oracles.judge_results(case, [result], refs, ("determinism",)).findings
    assert finding.signature.program_free and finding.facet == "configuration:persist"
    from harness.triage.attribution import Attributor

    assert Attributor(None).attribute(case, finding).layer == "persist"
    text = reproducer(case, finding)
    with pytest.raises(SystemExit) as stop:
        exec(compile(text, "reproducer.py", "exec"), {"__name__": "__main__"})
    assert stop.value.code == 1
    monkeypatch.undo()
    with pytest.raises(SystemExit) as stop:
        exec(compile(text, "reproducer.py", "exec"), {"__name__": "__main__"})
    assert stop.value.code in (0, None)


def test_the_recompiled_backend_also_goes_through_the_persistent_cache(monkeypatch, tmp_path):
    """The recompiled backend's kernel is also stored to and loaded back from a persistent
    compilation cache, as a second process with COMPILER_CACHE_DIR would load it: the same bits,
    or a "nondeterministic" finding that says so; the reproducer replays that round trip."""
    from compiler import driver
    from harness.report.reproducer import reproducer
    from harness.run.task import Task
    from harness.run.worker import _execute
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((4, 3), "float32")))
    case = Case(program, [np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)], ("cpu-loops",))
    task = Task(case, ("cpu-loops",), repeat=True, recompile="cpu-loops")
    (result,) = _execute(task).results
    assert result.deterministic and result.persisted is True

    real = driver._from_disk

    def off_by_one(*args, **kwargs):  # a planted bug: loaded kernels add 1 to their outputs
        artifacts = real(*args, **kwargs)
        native = artifacts.native
        artifacts.native = lambda arrays: ([o + 1 for o in native(arrays)[0]], native(arrays)[1])
        return artifacts

    monkeypatch.setattr(driver, "_from_disk", off_by_one)
    (result,) = _execute(task).results
    assert result.deterministic and result.persisted is False
    (finding,) = oracles.judge_results(case, [result], references(case), ("determinism",)).findings
    assert finding.kind == "nondeterministic" and "persistent compilation cache" in finding.detail
    assert "persisted(program, [x0], 'cpu-loops')" in reproducer(case, finding)
    assert Attributor(None).attribute(case, finding).layer == "persist"
    crash = replace(finding, kind="crash", detail="killed by SIGSEGV [stage cpu-blas@O0 persist]")
    assert Attributor(None).attribute(case, crash).backend == "cpu-blas@O0"
    # Not one of our CPU targets: nothing is stored, nothing judged.
    other = Task(case, ("graph-numpy",), repeat=True, recompile="graph-numpy")
    assert _execute(other).results[0].persisted is None


def test_a_persistent_cache_key_blind_to_the_wiring_serves_the_swapped_twin(monkeypatch):
    """The persistent cache's round trip also stores and loads the program with two same-typed
    arguments exchanged (called on the exchanged inputs: the same bits owed). A key that missed
    which argument feeds which operand (here: SSA names erased) serves that twin ``x - y``'s
    kernel for ``y - x``: a "nondeterministic" finding that names the pair, reproduced by the
    reproducer's round trip; a key that sees the wiring passes."""
    import re
    import tempfile

    import compiler
    from compiler import persist
    from harness.run.task import Task
    from harness.run.worker import _execute, through_the_persistent_cache
    from harness.triage.attribution import Attributor
    from harness.verdict import persisted
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 3), "float32"), b.input((2, 3), "float32")
    program = b.build(b.node("subtract", x, y))
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 10, np.float32)]
    case = Case(program, inputs, ("cpu-loops",))
    task = Task(case, ("cpu-loops",), repeat=True, recompile="cpu-loops")
    (result,) = _execute(task).results
    assert result.persisted is True and result.persisted_twin == ()

    real = persist.key

    def blind(built, *args):  # a planted bug: the key erases SSA names (and so the wiring)
        return real(re.sub(r"%[A-Za-z_]*\d+\b", "%_", built), *args)

    monkeypatch.setattr(persist, "key", blind)
    (result,) = _execute(task).results
    assert result.deterministic and result.persisted is False and result.persisted_twin == (0, 1)
    (finding,) = oracles.judge_results(case, [result], references(case), ("determinism",)).findings
    assert finding.kind == "nondeterministic" and "arguments 0 and 1" in finding.detail
    assert Attributor(None).attribute(case, finding).layer == "persist"
    assert persisted(program.as_function(), inputs, "cpu-loops") == 1
    # One argument, or none of one type: no twin.
    with tempfile.TemporaryDirectory() as directory:
        fn = compiler.jit(lambda a, b: a - b.T)
        other = [inputs[0], inputs[0].T.copy()]
        alone = through_the_persistent_cache(fn, other, "cpu-loops", directory)
    assert alone is not None and alone.twin is None


def test_the_search_for_a_collected_functions_address_outlasts_a_fragmented_heap():
    """The "collected" check needs a new function at the address of one just freed. CPython
    hands that block out first only when its pool is the one it allocates from; after frees in
    other pools (as a long test session or compilation makes) those pools' free blocks come
    first, more than the 64 tries the search once had (CI's run missed the address so)."""
    from harness.run.worker import _first, _staged, made_at

    before = [_staged(len) for _ in range(2000)]
    first = _staged(len)
    address = id(first)
    after = [_staged(len) for _ in range(4000)]
    del first
    del after[::2]  # half of each later pool freed: those pools come before the first's
    assert id(made_at(address, lambda: _staged(_first))) == address
    assert before and after


@pytest.mark.parametrize(
    "key, story",
    [
        (lambda fn: id(fn), "collected"),  # a collected function's address, handed on
        (lambda fn: fn.__qualname__, "live"),  # one name for two closures
        (lambda fn: id(fn.__code__), "live"),  # one code object for two closures
    ],
)
def test_a_specialization_cache_keyed_by_anything_but_the_function_serves_another(
    monkeypatch, key, story
):
    """The recompiled backend's determinism check also jits two other functions of the same
    code and name after the program (one while the program's function lives, one made where it
    lived once collected), each returning its first argument: a specialization cache that keys
    functions by their address, name or code serves one the program's kernel. That is a
    "stale-specialization" finding of the @jit layer, and the reproducer replays the check;
    the real key passes."""
    from compiler import api
    from harness.replay import oracles_of
    from harness.report.reproducer import reproducer
    from harness.run.task import Task
    from harness.run.worker import _execute
    from harness.triage.attribution import Attributor
    from harness.verdict import successor
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 3), "float32"), b.input((3,), "float32")
    program = b.build(b.node("subtract", x, y))
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.full(3, 10, np.float32)]
    case = Case(program, inputs, ("cpu-loops",))
    task = Task(case, ("cpu-loops",), repeat=True, recompile="cpu-loops")
    (result,) = _execute(task).results
    assert result.successor == "" and result.deterministic
    assert successor(program.as_function(), inputs, "cpu-loops") == 0

    real = api.JitFunction.__init__

    def planted(self, fn, target=None):  # a planted bug: the cache's key for the function
        real(self, fn, target)
        self._id = key(fn)

    monkeypatch.setattr(api.JitFunction, "__init__", planted)
    (result,) = _execute(task).results
    assert result.successor == story
    (finding,) = oracles.judge_results(case, [result], references(case), ("determinism",)).findings
    assert finding.kind == "stale-specialization" and finding.oracle == "determinism"
    # The jit cache's key, whatever the program: one entry covers it in every program.
    assert finding.signature.ops == () and finding.signature.dtype == ""
    b = ProgramBuilder()
    other = b.build(b.node("exp", b.input((4,), "float64")))
    assert finding.signature.covers(replace(finding, case=Case(other, [], ())).signature)
    # ... and whatever the backend: the cache is above them (one entry, not one per family).
    elsewhere = replace(finding, case=Case(other, [], ()), backends=("cpu-vector@O3",))
    assert finding.signature.covers(elsewhere.signature)
    stored = Signature.from_dict(json.loads(json.dumps(finding.signature.to_dict())))
    assert stored == finding.signature and stored.covers(elsewhere.signature)
    # A program's own failure is never covered by it, nor covers it.
    plain = replace(finding, kind="stale-specialization", program_free=False)
    assert not stored.covers(plain.signature) and not plain.signature.covers(stored)
    assert Attributor(None).attribute(case, finding).layer == "jit"
    assert oracles_of(finding.signature) == ("determinism",)
    assert "successor(program, [x0, x1], 'cpu-loops')" in reproducer(case, finding)
    assert successor(program.as_function(), inputs, "cpu-loops") == 1


def test_threads_calling_one_jitted_function_at_once_each_get_their_own_answer(monkeypatch):
    """The recompiled backend's determinism check also calls a new jitted function of the
    program from several threads at once, each on its own arguments: a kernel whose calls are
    not serialized (its descriptors shared) hands one thread another's answer. That is a
    ``race`` of the runtime layer, replayed with the determinism oracle, and its reproducer
    runs the check round after round; the real runtime passes."""
    import time

    from compiler import runtime
    from harness.replay import RACE_RUNS, oracles_of
    from harness.report.reproducer import reproducer
    from harness.run.task import Task
    from harness.run.worker import THREADS, _execute, _rolled
    from harness.triage.attribution import Attributor
    from harness.verdict import concurrent
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 3), "float32"), b.input((3,), "int32")
    program = b.build(b.node("multiply", x, b.node("astype", y, dtype="float32")))
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([4, -1, 7], np.int32)]
    assert all(not np.array_equal(a, r) for a, r in zip(inputs, _rolled(inputs, 1), strict=True))
    case = Case(program, inputs, ("cpu-loops",))
    task = Task(case, ("cpu-loops",), repeat=True, recompile="cpu-loops")
    (result,) = _execute(task).results
    assert result.concurrent == "" and result.deterministic
    assert concurrent(program.as_function(), inputs, "cpu-loops", rounds=3) == 0

    real = runtime.Kernel.__call__
    shared: dict[int, list] = {}

    def unserialized(self, arrays):  # a planted bug: one kernel's arguments, shared
        shared[id(self)] = arrays
        time.sleep(0.002)  # another thread sets its arguments meanwhile
        return real(self, shared[id(self)])

    monkeypatch.setattr(runtime.Kernel, "__call__", unserialized)
    (result,) = _execute(task).results
    assert "returned thread" in result.concurrent, result.concurrent
    (finding,) = oracles.judge_results(case, [result], references(case), ("determinism",)).findings
    assert finding.kind == "race" and finding.oracle == "determinism"
    # The runtime's, whatever the program: one entry covers it in every program and backend.
    b = ProgramBuilder()
    other = b.build(b.node("exp", b.input((4,), "float64")))
    elsewhere = replace(finding, case=Case(other, [], ()), backends=("cpu-vector@O0",))
    assert finding.signature.program_free and finding.signature.covers(elsewhere.signature)
    assert Attributor(None).attribute(case, finding).layer == "runtime"
    assert oracles_of(finding.signature) == ("determinism",) and RACE_RUNS > 1 and THREADS > 1
    assert "concurrent(program, [x0, x1], 'cpu-loops')" in reproducer(case, finding)
    assert concurrent(program.as_function(), inputs, "cpu-loops", rounds=3) == 1
    monkeypatch.undo()

    # Half the threads trace a new function at each call, one that captures a NumPy array,
    # at once: a tracing stack shared by every thread (a held-out plant) captures into another
    # thread's trace. (The overlap is the scheduler's: seen in some of the checks.)
    from compiler.frontend import trace

    stack: list = []
    monkeypatch.setattr(trace, "_stack", lambda: stack)
    for _ in range(8):
        (result,) = _execute(task).results
        if result.concurrent:
            break
    # (the symptom is the scheduler's too: a KeyError mostly, a zip() of another thread's
    # captures now and then, as in one CI run)
    assert "(tracing a new function that captures an array, at each call) raised" in (
        result.concurrent
    ) and ("KeyError" in result.concurrent or "zip()" in result.concurrent), result.concurrent
    (finding,) = oracles.judge_results(case, [result], references(case), ("determinism",)).findings
    assert finding.kind == "race"
    assert Attributor(None).attribute(case, finding).layer == "jit"  # the trace's, this time


def test_a_race_is_run_again_until_it_recurs_and_other_failures_once() -> None:
    """A race shows in some runs of its check only: replay and minimization run its case up to
    their number of runs (``replay.recurring``), any other failure's once."""
    from harness.oracles.base import Judgement
    from harness.replay import recurring
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((2,), "float32"))), [np.zeros(2, np.float32)])

    class Third:  # a runner whose third run shows the failure
        def __init__(self, kind: str) -> None:
            self.kind, self.runs = kind, 0

        def evaluate(self, case: Case, only: tuple[str, ...], probe: bool = False) -> Judgement:
            self.runs += 1
            found = self.runs == 3
            finding = Finding(self.kind, ("cpu-loops",), "determinism", "x", case)
            return Judgement(findings=[finding] if found else [])

    race = Finding("race", ("cpu-loops",), "determinism", "", case).signature
    runner = Third("race")
    assert recurring(runner, case, race, ("determinism",), 4)[0] is not None and runner.runs == 3
    runner = Third("race")
    assert recurring(runner, case, race, ("determinism",), 2)[0] is None and runner.runs == 2
    other = Finding("retrace", ("cpu-loops",), "determinism", "", case).signature
    runner = Third("retrace")
    assert recurring(runner, case, other, ("determinism",), 4)[0] is None and runner.runs == 1


def test_the_persistent_caches_round_trip_takes_any_nan_for_a_nan():
    """A kernel loaded from the persistent cache gave +nan for log of a negative where the one
    compiled in process gave NumPy's -nan: bits are compared, but NaN as NaN."""
    from harness.run.worker import same_bits

    a, b = np.array([1.0, np.nan, -0.0]), np.array([1.0, -np.nan, -0.0])
    assert same_bits(a, b) and same_bits(a.astype(np.float16), b.astype(np.float16))
    assert not same_bits(a, np.array([1.0, np.nan, 0.0]))  # a zero's sign still counts
    assert not same_bits(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    assert not same_bits(a, a.astype(np.float32))


def test_a_crash_in_an_oracles_own_step_is_replayed_with_that_oracle():
    """A worker killed in a step only an oracle's task takes (the persistent cache's round trip,
    the tupled or misfit calls) recurs only with that oracle on: minimization and replay force
    it (``replay.oracles_of``), so such a crash is reproduced, not reported as flaky."""
    from harness.replay import oracles_of

    crash = Signature("crash", "isolation", ("cpu-loops@O0",), ("exp",), "float32")
    assert oracles_of(crash) == ()
    assert oracles_of(crash, "killed by SIGSEGV [stage cpu-blas@O0 persist]") == ("determinism",)
    assert oracles_of(crash, "killed by SIGSEGV [stage cpu-blas@O0 tupled]") == ("tupled",)
    assert oracles_of(crash, "killed by SIGSEGV [stage cpu-blas@O0 llvm]") == ()


def test_a_tasks_backends_take_their_kernels_from_one_linked_jit():
    """The worker JITs a task's distinct lowered modules together (``JitFunction.prepare``); the
    results say so (``llvm-linked``), and the determinism check's fresh recompile of one backend
    (its own JIT) gives the same bits as its kernel out of the linked one."""
    from compiler import driver
    from harness.run.task import Task
    from harness.run.worker import _execute
    from strategies.model import ProgramBuilder

    driver.clear_caches()  # no kernel of an earlier test
    b = ProgramBuilder()
    x = b.input((5, 3), "float32")
    case = Case(b.build(b.node("exp", x)), [np.linspace(-2, 2, 15, dtype=np.float32).reshape(5, 3)])
    backends = ("cpu-loops@O0", "cpu-blas@O0", "cpu-vector@O0")
    # cpu-blas reaches cpu-loops's lowered module (no matmul): two kernels, linked
    results = _execute(Task(case, backends)).results
    shared = {r.backend: r.shared_stages.split(",") for r in results}
    assert "llvm-linked" in shared["cpu-loops@O0"] and "llvm-linked" in shared["cpu-vector@O0"]
    assert "llvm" in shared["cpu-blas@O0"], shared  # cpu-loops's kernel, claimed already
    for result in results:
        np.testing.assert_allclose(result.output, np.exp(case.inputs[0]), rtol=1e-6)
    for recompile in backends:
        case = replace(case, inputs=[case.inputs[0] * 1.5])
        results = _execute(Task(case, backends, repeat=True, recompile=recompile)).results
        assert [r.status for r in results] == ["ok"] * 3
        assert all(r.deterministic for r in results), recompile


def test_jax_caches_are_cleared_every_few_cases(monkeypatch):
    """JAX keeps the executables it compiles (the spec oracle's eager ops once compiled one per
    op): a driver grew by about 4 MB a case."""
    import jax

    from harness.run import references as refs_module
    from strategies.model import ProgramBuilder

    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(True))
    monkeypatch.setattr(refs_module, "_JAX_CALLS", [0])
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    case = Case(b.build(b.node("softmax", x)), [np.ones((2, 3), np.float32)], ("cpu-loops",))
    for _ in range(refs_module.CLEAR_JAX_EVERY - 1):
        refs_module.jax_reference(case)
    assert cleared == []
    refs_module.jax_reference(case)
    assert cleared == [True]


def test_a_program_seen_before_runs_its_executable_again(monkeypatch):
    """XLA compiles a program once per argument types: new values of it reuse the executable
    and get its answer for them; other shapes or another table entry for one of its ops
    compile anew, and what tracing noted (JAX computing in NumPy's dtypes) is noted again on a
    reuse. The spec oracle's independent side compiles nothing (NumPy)."""
    import dataclasses

    import jax

    from compiler import primitives
    from harness.oracles.spec import independent_reference
    from harness.run import references as refs_module
    from strategies.model import ProgramBuilder

    compiled = []
    real_jit = jax.jit
    monkeypatch.setattr(jax, "jit", lambda fn: compiled.append(fn) or real_jit(fn))
    monkeypatch.setattr(refs_module, "_EXECUTABLES", type(refs_module._EXECUTABLES)())
    b = ProgramBuilder()
    x, n = b.input((2, 3), "float32"), b.input((2, 3), "int32")
    program = b.build(b.node("add", b.node("softmax", x), n))
    rng = np.random.default_rng(0)

    def case(shape: tuple = (2, 3)) -> Case:
        values = rng.standard_normal(shape).astype(np.float32)
        ints = rng.integers(-3, 3, shape).astype(np.int32)
        built = program
        if shape != (2, 3):
            c = ProgramBuilder()
            y, m = c.input(shape, "float32"), c.input(shape, "int32")
            built = c.build(c.node("add", c.node("softmax", y), m))
        return Case(built, [values, ints], ("cpu-loops",))

    first, second = case(), case()
    answers = []
    for each in (first, second):
        jax_ref = refs_module.jax_reference(each)
        answers.append(jax_ref.output)
        expected = refs_module.numpy_reference(each).output
        assert jax_ref.adapted  # float32 + int32 is float64 in NumPy, float32 in JAX
        np.testing.assert_allclose(jax_ref.output, expected, rtol=1e-6)
        np.testing.assert_allclose(independent_reference(each), expected, rtol=1e-6)
    assert len(compiled) == 1
    refs_module.jax_reference(case((3, 2)))
    assert len(compiled) == 2
    wrong = dataclasses.replace(primitives.get("add"), evaluate=lambda xp, a, attrs: a[0] - a[1])
    monkeypatch.setitem(primitives.PRIMITIVES, "add", wrong)
    swapped = refs_module.jax_reference(second)
    assert len(compiled) == 3
    assert not np.allclose(swapped.output, answers[1])


def test_the_worker_tells_a_limitation_of_tracing_from_one_of_a_backend(monkeypatch):
    """``stage == "trace"`` exactly when tracing alone raises ``UnsupportedFeature``."""
    from types import SimpleNamespace

    import compiler
    from compiler import UnsupportedFeature, backends
    from harness.run.worker import run_backend

    def refuses(x):
        raise UnsupportedFeature("a planted refusal")

    inputs = [np.ones((2, 3), np.float32)]
    [traced] = run_backend(
        SimpleNamespace(traced_function=lambda: refuses), [inputs], "cpu-loops", False
    )
    assert (traced.status, traced.stage) == ("unsupported", "trace")

    backend = backends.get("cpu-loops")

    def no_compile(*args, **kwargs):
        raise UnsupportedFeature("a planted backend limitation")

    monkeypatch.setattr(type(backend), "compile", no_compile)
    case = SimpleNamespace(traced_function=lambda: (lambda x: x + 1))
    [compiled] = run_backend(case, [inputs], "cpu-loops", False)
    assert compiled.status == "unsupported" and compiled.stage != "trace", compiled
    assert compiler.jit(lambda x: x + 1).trace(*inputs)  # tracing itself is fine


def test_a_dead_workers_persistent_cache_is_removed_by_the_next(monkeypatch, tmp_path):
    """A worker killed by a crash or a signal never runs its exit handlers: the next worker to
    make its cache directory removes those whose process is gone, and no other."""
    import subprocess
    import sys
    import tempfile
    import time

    from harness.pending import identity
    from harness.run import worker

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    host = identity().rsplit(".", 2)[0]
    dead = tmp_path / f"{worker._CACHE_PREFIX}{host}.{done.stdout.strip()}.1--abc"
    unreaped = subprocess.Popen(["sleep", "60"])  # killed below, never waited for: a zombie
    zombie = tmp_path / f"{worker._CACHE_PREFIX}{identity(unreaped.pid)}--ghi"
    live = tmp_path / f"{worker._CACHE_PREFIX}{identity(os.getppid())}--def"
    dead.mkdir(), zombie.mkdir(), live.mkdir()
    unreaped.kill()
    time.sleep(0.2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(worker, "_PERSISTENT", [])
    try:
        made = worker._persistent_directory()
    finally:
        unreaped.wait()
    assert not dead.exists() and not zombie.exists() and live.exists()
    assert os.path.basename(made).startswith(f"{worker._CACHE_PREFIX}{identity()}--")


def test_an_answer_written_over_by_a_later_call_is_aliasing_of_the_oracle_that_made_it() -> None:
    """The worker judges each call's answer on a copy taken right after the call; a later call
    that wrote into the array (``BackendResult.overwritten``) is an ``aliasing`` finding of the
    oracle whose call it was: the repeat check's is determinism's, a derived task's next input
    set's is the deriving oracle's (``runner._overwritten_sets``)."""
    from harness.oracles.base import overwrites
    from harness.run.isolation import Outcome
    from harness.run.runner import _overwritten_sets
    from harness.run.task import TaskResult
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((2,), "float32"))), [np.zeros(2, np.float32)])
    clean = BackendResult("cpu-loops", "ok", output=np.ones(2, np.float32))
    written = replace(clean, backend="cpu-blas", overwritten="set")
    assert overwrites([clean, written], "set") == [
        ("aliasing", written, "the call on the task's next input set changed the array the call "
         "before it returned")
    ]  # fmt: skip
    assert overwrites([clean, written], "misfit") == []
    outcome = Outcome("ok", TaskResult([clean, written]))
    [finding] = _overwritten_sets(case, "metamorphic:transpose", [(None, outcome)])
    assert (finding.kind, finding.backends, finding.oracle) == (
        "aliasing", ("cpu-blas",), "metamorphic:transpose"
    )  # fmt: skip
    assert _overwritten_sets(case, "x", [(None, Outcome("crash", detail="SIGSEGV"))]) == []


def test_a_shared_definition_that_adds_its_causal_mask_leaks_huge_later_rows(monkeypatch) -> None:
    """For a causal program, the shared definitions (compiler/ops.py) must keep the earlier
    output rows when the first input's last two rows go near the dtype's largest value, where
    the spec oracle's independent composites keep them: an attention that added its mask
    (inf + -inf is NaN, through the row's maximum) was unseen in 227 attention cases, whose
    values never overflowed a masked score. Its reproducer fails exactly with the leak."""
    import subprocess
    import sys

    from compiler import ops
    from harness.oracles.structural import definition_leak
    from harness.report.reproducer import reproducer
    from strategies.model import ProgramBuilder

    rng = np.random.default_rng(0)
    b = ProgramBuilder()
    x = b.input((5, 4), "float32")
    weights = [b.input(s, "float32") for s in ((4, 12), (12,), (4, 4), (4,))]
    program = b.build(b.node("attention", x, *weights, heads=2))
    inputs = [rng.standard_normal(i.shape).astype(np.float32) for i in program.inputs]
    inputs[1][:, :4] *= 1000  # large queries: a later key's score overflows, its value not
    assert definition_leak(program, inputs) == ""

    def added(x, qkv_weight, qkv_bias, out_weight, out_bias, heads):
        packed = x @ qkv_weight + qkv_bias
        length, width = x.shape
        depth = width // heads
        q, k, v = (
            np.permute_dims(packed[:, i * width : (i + 1) * width].reshape(length, heads, depth),
                            (1, 0, 2))
            for i in range(3)
        )  # fmt: skip
        scores = (q @ np.permute_dims(k, (0, 2, 1))) / np.sqrt(depth)
        mask = ops.causal_mask(length, packed.dtype, np)
        context = np.permute_dims(ops.softmax(scores + mask) @ v, (1, 0, 2))
        return context.reshape(length, width) @ out_weight + out_bias

    monkeypatch.setattr(ops, "attention", added)
    leak = definition_leak(program, inputs)
    assert "shared definition" in leak and "[scale " in leak, leak
    case = Case(program, inputs, ("cpu-loops@O0",), checks=("causal",))
    text = reproducer(case, Finding("spec", ("definition",), "causal", leak, case))
    scale = float(leak.split("[scale ")[1].split("]")[0])
    assert f"SCALE = {scale!r}" in text and "causal_definition(PROGRAM" in text, text
    from harness.verdict import causal_definition

    assert causal_definition(program.to_json(), inputs, scale) == 1  # the leak, in-process
    clean = subprocess.run(
        [sys.executable, "-c", text], capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]  # the real definitions
