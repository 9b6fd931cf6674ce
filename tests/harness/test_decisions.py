"""A float that decides a discrete result within its own error goes either way (``run.decisions``);
a decision on exact values, and any answer that is neither side, is still judged."""

from __future__ import annotations

import numpy as np

from harness.case import Case
from harness.oracles import tolerance
from harness.oracles.differential import reference_outputs, yardstick
from harness.run.decisions import FLIPPED, deciding_nodes
from harness.run.references import perturbed_outputs, references
from strategies.model import ProgramBuilder

# A float64 row whose mean is 2.7e-19 (the truth), -1.2e-275 in NumPy's order and exactly 0 in
# a four-lane order ((a + c) + (b + d)): cpu-vector's answer, once reported as a mismatch.
ROW = [float.fromhex(h) for h in ("0x1.4ab6479cdfe8dp-60", "-0x1.8p+1", "0x1.8p+1",
                                  "-0x1.b21ef56a4d8a4p-912")]  # fmt: skip


def _judge(case: Case, got: np.ndarray) -> tolerance.Verdict:
    """The differential oracle's comparison of one backend's output."""
    refs = references(case, use_jax=False)
    shape = refs["numpy"].output.shape
    return tolerance.compare(
        np.asarray(got, refs["numpy"].output.dtype),
        yardstick(refs),
        reference_outputs(refs, shape),
        tolerance.error_steps(case.program),
        tolerance.working_dtype(case.program),
        local=perturbed_outputs(refs, shape),
    )


def _where_of_a_mean(row: list[float]) -> Case:
    b = ProgramBuilder()
    x, y = b.input((2, 4), "float64"), b.input((1, 1), "float64")
    m = b.node("mean", x, axis=-1, keepdims=True)
    program = b.build(b.node("where", m, m, y))
    inputs = [np.array([row, [1.0, 2.0, 3.0, 4.0]]), np.array([[7.0]])]
    return Case(program, inputs, ("cpu-loops",), origin="programs/ordinary")


def _mean_compared(rows: list, against: list) -> Case:
    """``int32(mean(x, axis=-1) > z)``: a comparison that decides an integer output."""
    b = ProgramBuilder()
    x = b.input((len(rows), len(rows[0])), "float64")
    z = b.input((len(against), 1), "float64")
    m = b.node("mean", x, axis=-1, keepdims=True)
    program = b.build(b.node("astype", b.node("greater", m, z), dtype="int32"))
    return Case(program, [np.array(rows), np.array(against)], ("cpu-loops",))


def test_a_where_on_a_mean_that_cancels_takes_either_branch() -> None:
    case = _where_of_a_mean(ROW)
    assert deciding_nodes(case.program) == {1: "where"}
    refs = references(case, use_jax=False)
    assert FLIPPED in refs and refs[FLIPPED].ok
    truth = float(yardstick(refs)[0, 0])
    assert 2e-19 < truth < 3e-19
    assert _judge(case, [[truth], [2.5]])  # the truth's branch
    assert _judge(case, [[7.0], [2.5]])  # y, where a reassociated sum is exactly 0
    # The flip widens that element's bound as a perturbed run would (FACTOR times its distance
    # from the truth), not the other row's: a wrong answer there, or far off, is a finding.
    assert not _judge(case, [[7.0], [7.0]])
    assert not _judge(case, [[100.0], [2.5]])


def test_a_condition_computed_exactly_is_not_ambiguous() -> None:
    """Zeros of an input, and of a mean that every order computes exactly, stay decided."""
    b = ProgramBuilder()
    x, y = b.input((2, 3), "float64"), b.input((2, 3), "float64")
    case = Case(
        b.build(b.node("where", x, x, y)),
        [np.array([[0.0, 1e-300, -2.0], [3.0, 0.0, 5.0]]), np.full((2, 3), 9.0)],
        ("cpu-loops",),
    )
    assert FLIPPED not in references(case, use_jax=False)
    assert not _judge(case, [[0.0, 1e-300, -2.0], [3.0, 0.0, 5.0]])  # took x where x is 0
    exact = _where_of_a_mean([1.0, -3.0, 3.0, -1.0])  # mean exactly 0 in every order
    assert FLIPPED not in references(exact, use_jax=False)
    assert not _judge(exact, [[0.0], [2.5]])
    # The perturbed runs move every result an ulp, exact ones too (10 / 4 = 2.5): a tie that the
    # truth and NumPy both compute exactly is no decision to flip.
    tie = _mean_compared([[1.0, 2.0, 3.0, 4.0]], [[2.5]])
    assert FLIPPED not in references(tie, use_jax=False)


def test_a_comparison_decided_by_a_cancelling_sum_goes_either_way() -> None:
    case = _mean_compared([ROW, [1.0, 2.0, 3.0, 4.0]], [[0.0], [2.0]])
    assert deciding_nodes(case.program) == {1: "compare"}
    assert _judge(case, [[1], [1]])  # the truth: 2.7e-19 > 0
    assert _judge(case, [[0], [1]])  # an exact 0 is not > 0
    assert not _judge(case, [[1], [0]])  # 2.5 > 2.0 decides nothing


def test_an_integer_cast_of_a_value_near_an_integer_goes_either_way() -> None:
    """0.1 + 0.2 + 0.7 is 1 in one order and 0.9999999999999999 in another."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float64")
    s = b.node("sum", x, axis=-1)
    case = Case(
        b.build(b.node("astype", s, dtype="int32")),
        [np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 1.0]])],
        ("cpu-loops",),
    )
    assert deciding_nodes(case.program) == {1: "to-int"}
    assert _judge(case, [1, 1]) and _judge(case, [0, 1])
    assert not _judge(case, [2, 1]) and not _judge(case, [1, 2])


def test_the_reproducer_accepts_what_the_oracle_accepts(tmp_path) -> None:
    """The exported script's ALLOWED holds the other side of a boolean it embeds."""
    from harness.triage.export import _embedded_verdict

    case = _mean_compared([ROW, [1.0, 2.0, 3.0, 4.0]], [[0.0], [2.0]])
    lines = _embedded_verdict(case)
    scope: dict = {"np": np}
    exec("\n".join(lines), {"np": np, "array": np.array}, scope)  # noqa: S102 - our own text
    assert scope["ALLOWED"].tolist() == [[1.0], [0.0]]
    assert scope["NUMPY"].tolist() == [[0], [1]]  # NumPy's -1.2e-275 is not > 0


def test_a_vectorized_sum_order_is_among_the_perturbed_ones() -> None:
    """A constant float64 row of five -2.00001 has a mean of exactly -2.00001 summed first to last
    or last to first, and not in four interleaved lanes (cpu-vector's order): its layer norm was
    4.2e-13 there, a correct answer the bound (1.05e-13, measured on the two running orders)
    refused, found by a 5-minute clean session. The third perturbed run sums in lanes."""
    from harness.run.references import SUM_ORDERS, _sequential_sum

    assert "lanes" in SUM_ORDERS
    row = np.full((1, 5), -2.00001)
    assert _sequential_sum(row, "forward", axis=-1)[0] / 5 == -2.00001
    assert _sequential_sum(row, "reverse", axis=-1)[0] / 5 == -2.00001
    assert _sequential_sum(row, "lanes", axis=-1)[0] / 5 != -2.00001
    assert _sequential_sum(np.arange(7.0).reshape(1, 7), "lanes", axis=-1)[0] == 21.0
    b = ProgramBuilder()
    x, w, s = b.input((1, 5), "float64"), b.input((5,), "float64"), b.input((1,), "float64")
    program = b.build(b.node("layer_norm", x, w, s))
    inputs = [np.full((1, 5), -2.00001), np.full(5, 3.0), np.array([-5.855098108419709e-118])]
    case = Case(program, inputs, ("cpu-vector@O0",))
    got = np.full((1, 5), 4.213000162292041e-13)  # every element: x - mean is one rounding
    assert _judge(case, got)
    assert not _judge(case, got * 100)


def test_a_directed_perturbed_run_moves_a_constant_rows_mean_off_it() -> None:
    """Random moves can undo each other (a mean moved up by its sum, down by its division): a
    float64 layer norm of a constant row of five -2.354517007149901 was exact in all four random
    runs, and cpu-vector's answer, one ulp of x - mean times gain / sqrt(eps), was refused
    (4.7e-13 against 1.5e-13; a 60 s README session). The first two runs move every result up,
    then down: a mean of a constant row lands off it in both."""
    from harness.run.references import DIRECTED, perturbed_reference

    value, gain, bias = -2.354517007149901, -3.353394330755062, -2.847036122879148
    b = ProgramBuilder()
    x, w, s = b.input((1, 5), "float64"), b.input((5,), "float64"), b.input((5,), "float64")
    program = b.build(b.node("layer_norm", x, w, s))
    inputs = [np.full((1, 5), value), np.full(5, gain), np.full(5, bias)]
    case = Case(program, inputs, ("cpu-vector@O0",))
    for run in DIRECTED:
        assert np.all(perturbed_reference(case, run).output != bias)
    got = np.full((1, 5), -2.847036122878677)  # cpu-vector@O0's
    assert _judge(case, got)
    assert not _judge(case, bias + (got - bias) * 100)


def test_directed_runs_move_every_rounding_one_way() -> None:
    """Run 1 rounds every step up and run 2 down (a monotone program: the output follows)."""
    from harness.run.references import DIRECTED, perturbed_reference

    assert DIRECTED == {1: True, 2: False}
    b = ProgramBuilder()
    x = b.input((3, 7), "float64")
    program = b.build(b.node("sum", b.node("exp", x), axis=-1))
    inputs = [np.linspace(-3.0, 2.0, 21).reshape(3, 7)]
    case = Case(program, inputs, ("cpu-loops@O0",))
    exact = np.exp(inputs[0]).sum(axis=-1)
    up, down = perturbed_reference(case, 1).output, perturbed_reference(case, 2).output
    assert np.all(up > exact) and np.all(down < exact)
