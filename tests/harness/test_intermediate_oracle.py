"""The intermediate oracle: a value a later step hides is judged as its own program's output,
and a finding it makes is kept (and replayed) with the program that fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.case import Case
from harness.oracles.intermediate import intermediate_case
from strategies.model import Const, ProgramBuilder


def _hidden_log() -> tuple[ProgramBuilder, object]:
    """``float64(bool(log(abs(x))))``: whatever the log gives (but 0), the output is 1."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float64")
    log = b.node("log", b.node("abs", x))
    return b, b.node("astype", b.node("astype", log, dtype="bool"), dtype="float64")


def test_the_nearest_numeric_value_before_the_output_is_judged() -> None:
    """The output's operand is a bool: the value judged is the log before it (a program's
    output is a numeric tensor), with the inputs it reads and the same values."""
    b, out = _hidden_log()
    values = np.array([[5e-324, 1.0, 2.0], [3.0, 1e-310, 0.5]])
    case = Case(b.build(out), [values], ("cpu-loops@O0",))
    smaller = intermediate_case(case)
    assert smaller is not None
    assert [n.op for n in smaller.program.nodes] == ["abs", "log"]
    assert smaller.backends == case.backends and np.array_equal(smaller.inputs[0], values)


def test_the_value_is_one_of_the_outputs_operands_and_reads_an_input() -> None:
    b = ProgramBuilder()
    x, y = b.input((3,), "float32"), b.input((4,), "float32")
    unused = b.node("exp", y)
    total = b.node("add", b.node("sin", x), b.node("multiply", x, Const(2.0)))
    del unused
    case = Case(b.build(b.node("negative", total)), [np.ones(3, "f4"), np.ones(4, "f4")], ())
    smaller = intermediate_case(case)
    assert [n.op for n in smaller.program.nodes] == ["sin", "multiply", "add"]
    assert len(smaller.inputs) == 1  # y is not read
    one = ProgramBuilder()
    alone = Case(one.build(one.node("exp", one.input((3,), "float32"))), [np.ones(3, "f4")], ())
    assert intermediate_case(alone) is None  # a single equation has no value inside


def test_the_inputs_it_keeps_keep_their_layouts() -> None:
    """An input handed over reversed stays reversed in the smaller program; the one it no
    longer reads takes its layout with it."""
    b = ProgramBuilder()
    x, y = b.input((3,), "float32"), b.input((3,), "float32")
    inner = b.node("exp", y)
    case = Case(
        b.build(b.node("add", inner, x)), [np.ones(3, "f4"), np.ones(3, "f4")], ("cpu-loops",)
    ).with_layouts(("strided", "reversed"))
    smaller = intermediate_case(case)
    assert [n.op for n in smaller.program.nodes] == ["exp"]
    assert smaller.layouts == ("reversed",)


def test_a_finding_is_kept_with_its_own_case(tmp_path: Path) -> None:
    """The driver records a finding with the case that fails (the intermediate's program), not
    the case it was derived from, whose own output is right."""
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.session.fuzz import Driver, FuzzOptions, _Found

    b, out = _hidden_log()
    case = Case(b.build(out), [np.ones((2, 3))], ("cpu-loops@O0",))
    smaller = intermediate_case(case)
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:
        finding = Finding("mismatch", ("cpu-loops@O0",), "differential", "planted", smaller)
        state = {"target": None, "best": None, "found_at": None, "others": []}
        with pytest.raises(_Found):
            driver._consider([finding], state)
        assert state["best"][0] is smaller
        [entry] = list(Corpus(tmp_path).entries())
        assert [n["op"] for n in entry.case["case"]["program"]["nodes"]] == ["abs", "log"]
    finally:
        driver.close()


_PLANTED = r"""
import numpy as np, pathlib, tempfile
from harness.case import Case
from harness.corpus import Corpus
from harness.run.runner import Runner
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x = b.input((2, 3), "float64")
log = b.node("log", b.node("abs", x))
program = b.build(b.node("astype", b.node("astype", log, dtype="bool"), dtype="float64"))
values = np.array([[5e-324, 1.0, 2.0], [3.0, 1e-310, 0.5]])
case = Case(program, [values], ("cpu-loops@O0", "cpu-vector@O0"))
runner = Runner(Corpus(pathlib.Path(tempfile.mkdtemp())), use_jax=False)
for only in [(), ("intermediate",)]:
    found = runner.evaluate(case, only=only).findings
    print(only, [(f.oracle, f.backends, [n.op for n in f.case.program.nodes]) for f in found])
"""


@pytest.mark.slow
def test_a_wrong_value_a_cast_hides_is_found(tmp_path: Path) -> None:
    """A planted bug in cpu-vector's float64 log (subnormal inputs taken for normal numbers:
    log(5e-324) is -709.1, not -744.4) under a cast to bool: the case's own output is right
    on every backend, and its intermediate value is wrong on cpu-vector alone."""
    from harness.selftest import Mutation, apply, scratch_environment

    mutation = Mutation(
        "log-subnormal", "vector/vecmath.py", "min_normal=2.0**-1022", "min_normal=2.0*-1022", ""
    )
    scratch = apply(mutation, tmp_path / "src")
    proc = subprocess.run(
        [sys.executable, "-c", _PLANTED], cwd=tmp_path, env=scratch_environment(scratch),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain, forced = proc.stdout.strip().splitlines()[-2:]
    assert plain == "() []", plain
    assert "('differential', ('cpu-vector@O0',), ['abs', 'log'])" in forced, forced


def _cast_then_exp(values: np.ndarray) -> Case:
    """``exp(x.astype(bfloat16))``: the cast has one right answer, the exp a bound."""
    b = ProgramBuilder()
    x = b.input(values.shape, "float32")
    narrow = b.node("astype", x, dtype="bfloat16")
    return Case(b.build(b.node("exp", narrow)), [values], ("cpu-loops@O0",))


def test_the_exactly_rounded_value_nearest_the_output_is_found() -> None:
    from harness.oracles.intermediate import exact_value

    assert exact_value(_cast_then_exp(np.ones(3, "f4")).program) == 0

    def scaled(then_sin: bool) -> object:
        b = ProgramBuilder()
        x = b.input((2, 3), "float32")
        scaled = b.node("multiply", b.node("transpose", x), Const(3.0))
        total = b.node("add", scaled, Const(1.0))
        return b.build(b.node("sin", total) if then_sin else total)

    assert exact_value(scaled(True)) == 2  # the add, nearest the output
    assert exact_value(scaled(False)) is None  # exactly rounded whole: its output judged so
    c = ProgramBuilder()
    y = c.input((3,), "float32")
    assert exact_value(c.build(c.node("exp", c.node("negative", y)))) is None  # nothing rounds
    assert exact_value(c.build(c.node("sqrt", c.node("exp", y)))) is None  # exp on the way


def test_a_value_within_the_bound_but_not_exact_is_seen_on_its_own() -> None:
    """A float32 -> bfloat16 cast that truncates is up to an ulp off, within the bound of
    any program that goes on to an exp; its own program, exactly rounded, shows it. A quarter
    of the cases with such a value (``EXACT_SHARE``) judge it."""
    import ml_dtypes

    from harness.oracles.intermediate import EXACT_SHARE, Intermediate, _judges_exactly
    from harness.verdict import judge_output

    rng = np.random.default_rng(5)
    cases = [_cast_then_exp(rng.uniform(-2, 2, 16).astype("f4")) for _ in range(200)]
    chosen = [c for c in cases if _judges_exactly(c)]
    assert 0.15 < len(chosen) / len(cases) < 0.35 and EXACT_SHARE == 0.25
    assert all(Intermediate().wants(c) for c in chosen)
    case = chosen[0]
    smaller = intermediate_case(case)
    assert [n.op for n in smaller.program.nodes] == ["astype"]
    x = case.inputs[0]
    truncated = (x.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(ml_dtypes.bfloat16)
    assert np.any(truncated != x.astype(ml_dtypes.bfloat16))
    assert judge_output(case, np.exp(truncated), use_jax=False).ok  # the output hides it
    assert not judge_output(smaller, truncated, use_jax=False).ok
