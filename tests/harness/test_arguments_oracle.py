"""The arguments oracle: a compiled specialization refuses arrays it was not made for. With the
argument check planted to accept an array whose shape *or* dtype matches (a mutant that every
equivalence sample passed), the oracle, its attribution and its reproducer must say so; with the
real check, none may."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import compiler.dtypes  # noqa: F401 - np.dtype('bfloat16')
from harness.case import Case
from harness.oracles import arguments, get
from harness.oracles.base import Judgement, Observation
from harness.report.reproducer import reproducer
from harness.run.worker import run_backend
from harness.selftest import MUTATIONS, ROOT, apply, scratch_environment
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

PLANT = next(m for m in MUTATIONS if m.name == "compiled-accepts-misfits")


def _planted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The selftest's plant, in this process: the check passes an array if either matches."""
    from compiler import api

    def accepts_misfits(node, value, name):
        array = np.require(np.asarray(value), requirements="C")
        if array.shape != node.shape and array.dtype != node.dtype:
            raise TypeError(f"{name}: planted")
        return array

    monkeypatch.setattr(api, "_check_argument", accepts_misfits)


def _case(dtype: str = "float32", shape: tuple[int, ...] = (3, 4)) -> Case:
    b = ProgramBuilder()
    x, y = b.input(shape, dtype), b.input(shape, dtype)
    program = b.build(b.node("add", b.node("multiply", x, 2), y))
    inputs = [np.ones(shape, np.float32).astype(np.dtype(dtype)) for _ in range(2)]
    return Case(program, inputs, ("cpu-loops@O0",))


def test_misfits_are_larger_so_a_kernel_that_runs_anyway_stays_in_its_buffers() -> None:
    x, y = np.ones((3, 4), np.float32), np.ones((), np.float64)
    calls = arguments.misfits([x, y], 2)  # input 0 (2 modulo 2)
    assert [what for what, _ in calls] == [
        "input 0 with shape (4, 4)", "input 0 as float64", "3 arrays for 2",
    ]  # fmt: skip
    shaped, widened, extra = (arrays for _, arrays in calls)
    assert shaped[0].nbytes > x.nbytes and shaped[1] is y
    assert widened[0].dtype.itemsize >= x.dtype.itemsize and widened[0].shape == x.shape
    assert len(extra) == 3
    (_, zero_d), (_, as_int), _ = arguments.misfits([y], 0)
    assert zero_d[0].shape == (2,) and as_int[0].dtype == np.int64  # float64 widens to int64
    assert [w for w, _ in arguments.misfits([], 5)] == ["1 arrays for 0"]


@pytest.mark.parametrize("dtype, shape", [("float32", (3, 4)), ("bfloat16", (5,)), ("int32", ())])
def test_the_real_check_refuses_every_misfit(dtype: str, shape: tuple[int, ...]) -> None:
    case = _case(dtype, shape)
    for which in (0, 1):
        (result,) = run_backend(case, [case.inputs], "cpu-loops@O0", False, misfit=which)
        assert result.ok and result.misfit == "", result
        assert arguments.check(_compiled(case), case.inputs, which) == ""


def _compiled(case: Case):
    import compiler

    return compiler.jit(case.traced_function()).compile(*case.inputs, target="cpu-loops@O0")


def test_the_oracle_sees_a_specialization_that_runs_on_misfits(monkeypatch) -> None:
    _planted(monkeypatch)
    case = _case()
    (result,) = run_backend(case, [case.inputs], "cpu-loops@O0", False, misfit=0)
    assert result.ok and "it ran and returned an array of shape (3, 4)" in result.misfit, result
    (unchecked,) = run_backend(case, [case.inputs], "cpu-loops@O0", False)
    assert unchecked.misfit is None  # not asked: not checked
    oracle = get("arguments")
    (finding,) = oracle.judge(Observation(case, [result], {}, Judgement()), [])
    assert (finding.kind, finding.oracle, finding.backends) == (
        "unchecked-arguments", "arguments", ("cpu-loops@O0",),
    )  # fmt: skip
    found = Attributor(None).attribute(case, finding)
    assert found.layer == "jit" and "compiler/api.py" in found.detail, found


def test_a_quarter_of_the_programs_are_checked_on_every_backend() -> None:
    from harness.run.task import Task

    oracle = get("arguments")
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    drawn = [
        Case(b.build(b.node("add", x, float(k))), [np.zeros((2, 3), np.float32)])
        for k in range(400)
    ]
    share = sum(oracle.wants(c) for c in drawn) / len(drawn)
    assert 0.18 < share < 0.32, share
    task = Task(drawn[0], ("cpu-loops@O0", "xla-cpu"))
    assert not task.misfit
    oracle.configure(drawn[0], task)
    assert task.misfit and Task.from_dict(task.to_dict()).misfit  # in the write-ahead record


@pytest.mark.slow
def test_its_reproducer_fails_with_the_plant_and_passes_without(monkeypatch, tmp_path) -> None:
    _planted(monkeypatch)
    case = _case()
    (result,) = run_backend(case, [case.inputs], "cpu-loops@O0", False, misfit=0)
    (finding,) = get("arguments").judge(Observation(case, [result], {}, Judgement()), [])
    script = tmp_path / "reproducer.py"
    script.write_text(reproducer(case, finding))
    scratch = apply(PLANT, tmp_path / "src")
    runs = {}
    for name, env in (
        ("planted", scratch_environment(scratch)),
        ("real", dict(os.environ, PYTHONPATH=str(ROOT))),
    ):
        runs[name] = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
    assert runs["planted"].returncode == 1, runs["planted"].stderr[-2000:]
    assert "FAILS the arguments oracle" in runs["planted"].stderr
    assert runs["real"].returncode == 0, runs["real"].stderr[-2000:]
