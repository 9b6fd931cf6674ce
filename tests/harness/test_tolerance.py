"""The error model catches what it must and accepts rounding it must."""

from __future__ import annotations

import numpy as np
import pytest

from harness.oracles import tolerance


@pytest.fixture
def case32():
    """A float32 matmul's float64 truth, NumPy's float32 answer and a float32 'backend'."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 11)).astype(np.float32)
    b = rng.standard_normal((11, 5)).astype(np.float32)
    truth = a.astype(np.float64) @ b.astype(np.float64)
    numpy_out = a @ b
    backend = np.einsum("ik,kj->ij", a, b)  # another summation order, also float32
    return truth, numpy_out, backend


def test_rounding_of_another_summation_order_passes(case32):
    truth, numpy_out, backend = case32
    verdict = tolerance.compare(backend, truth, [numpy_out], steps=5)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("index", [(0, 0), (3, 2), (6, 4)])
def test_one_element_off_by_1e4_relative_is_caught(case32, index):
    truth, numpy_out, backend = case32
    bad = backend.copy()
    bad[index] *= np.float32(1 + 1e-4)
    verdict = tolerance.compare(bad, truth, [numpy_out], steps=5)
    assert not verdict.ok
    assert verdict.worst_index == index


def test_nan_where_references_are_finite_is_caught(case32):
    truth, numpy_out, backend = case32
    bad = backend.copy()
    bad[1, 1] = np.nan
    verdict = tolerance.compare(bad, truth, [numpy_out])
    assert not verdict.ok and "non-finite" in verdict.reason


def test_inf_where_numpy_overflows_too_passes():
    got = np.array([np.inf, 1.0], np.float32)
    numpy_out = np.array([np.inf, 1.0], np.float32)
    truth = np.array([1e39, 1.0])
    assert tolerance.compare(got, truth, [numpy_out]).ok


def test_extra_errors_widen_the_bound_but_never_excuse_a_nan():
    truth = np.array([1.0, 2.0])
    got = np.array([np.nan, 2.0])
    verdict = tolerance.compare(got, truth, [truth], errors=[np.array([np.inf, 1.0])])
    assert not verdict.ok
    off = np.array([1.001, 2.0])
    assert not tolerance.compare(off, truth, [truth]).ok
    assert tolerance.compare(off, truth, [truth], errors=[np.array([0.001, 0.0])]).ok


def test_integers_must_match_exactly():
    expected = np.array([1, 2, 3], np.int32)
    assert tolerance.compare(expected.copy(), expected, [expected]).ok
    assert not tolerance.compare(np.array([1, 2, 4], np.int32), expected, [expected]).ok


def test_shape_difference_is_reported():
    verdict = tolerance.compare(np.zeros((3, 2)), np.zeros((2, 3)), [np.zeros((2, 3))])
    assert not verdict.ok and "shape" in verdict.reason


def test_working_precision_sets_the_floor():
    """A float64 output computed from float32 parts is judged at float32 precision."""
    truth = np.array([0.016696528722802046])
    got = truth + 1.4e-10  # ~1e-8 relative: noise at float32 precision, 40000 ulp at float64
    assert tolerance.compare(got, truth, [truth], steps=20, dtype=np.float32).ok
    assert not tolerance.compare(got, truth, [truth], steps=20, dtype=np.float64).ok


def _sin_exp_case(x: list[float]):
    from harness.case import Case
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    v = b.input((len(x),), "float64")
    program = b.build(b.node("sin", b.node("exp", v)))
    return Case(program, [np.array(x, np.float64)], ("cpu-loops",))


def _numpy_near_by_luck(refs: dict) -> None:
    """These tests need NumPy's sin(exp(42.62)) near the truth, which depends on the CPU's exp
    and sin (NumPy's AVX-512 loops were; on an AVX2 machine it is 0.91 against -0.96): skip
    where it is not, since NumPy's own error then says what the perturbed runs are there for."""
    numpy_out, truth = refs["numpy"].output, refs["truth"].output
    if abs(numpy_out[2] - truth[2]) >= 0.05:
        pytest.skip(f"NumPy's sin(exp(42.62)) here is {numpy_out[2]:.3f}, the truth {truth[2]:.3f}")


def test_perturbed_evaluations_round_each_operation_one_ulp_otherwise():
    """Well-conditioned elements: a perturbed run stays within a few ulps of NumPy; integers
    are untouched; sin of a 3.2e18 (whose ulp is 512) lands anywhere."""
    from harness.run.references import perturbed_reference, references

    case = _sin_exp_case([0.25, 1.0, 42.620306275813974])
    refs = references(case, use_jax=False)
    _numpy_near_by_luck(refs)
    numpy_out, truth = refs["numpy"].output, refs["truth"].output
    runs = [refs["perturbed:1"].output, refs["perturbed:2"].output]
    assert not np.array_equal(runs[0], runs[1]), "two runs round differently"
    for out in runs:  # an ulp of exp(1) (4.4e-16) moves sin by as much: a few ulps of 0.41
        assert np.all(np.abs(out[:2] - truth[:2]) <= 2e-15)
    assert max(abs(out[2] - truth[2]) for out in runs) > 0.1
    again = perturbed_reference(case, 1).output
    assert np.array_equal(again, runs[0]), "seeded by the inputs: a replay sees the same"
    assert np.abs(numpy_out[2] - truth[2]) < 0.05, "NumPy itself is close here, by luck"


def test_perturbed_errors_widen_only_their_own_element():
    """sin(exp(42.6)) may be anything in [-1, 1]: the perturbed runs say so for that element,
    and widen the bound of the others by their own few ulps only (no spread, unlike NumPy's own
    error)."""
    from harness.run.references import perturbed_outputs, references

    case = _sin_exp_case([0.25, 1.0, 42.620306275813974])
    refs = references(case, use_jax=False)
    _numpy_near_by_luck(refs)
    numpy_out, truth = refs["numpy"].output, refs["truth"].output
    local = perturbed_outputs(refs, numpy_out.shape)
    other = numpy_out.copy()
    other[2] = -numpy_out[2]  # another correctly rounded exp gives another sine
    assert not tolerance.compare(other, truth, [numpy_out], steps=2), "without: rejected"
    assert tolerance.compare(other, truth, [numpy_out], steps=2, local=local)
    dtype = np.dtype(np.float64)
    plain = tolerance.bound(truth, [numpy_out], 2, dtype)
    widened = tolerance.bound(truth, [numpy_out], 2, dtype, local=local)
    assert widened[2] > 1.0
    assert np.all(widened[:2] - plain[:2] <= tolerance.FACTOR * 2e-15), "their own ulps only"


def test_xla_sine_of_a_huge_exp_is_not_a_finding():
    """Found by a 30-minute campaign against xla-cpu: sin(exp(x)) at x = 42.62, where XLA's exp
    differs from NumPy's by an ulp (512 here) and the sine by 1.87; NumPy was close to the truth
    by luck, JAX does not judge XLA, so nothing measured how ill-conditioned the element is."""
    pytest.importorskip("jax")
    import compiler
    from harness.verdict import judge_output

    case = _sin_exp_case([0.25, 1.0, 42.620306275813974])
    actual = compiler.jit(case.traced_function())(*case.inputs, target="xla-cpu")
    verdict = judge_output(case, actual, backend="xla-cpu")
    assert verdict.ok, verdict.reason


def test_a_composites_internal_roundings_bound_its_elements():
    """Found by a one-hour default session: float32 ``attend`` (its scores float64 from there
    on, as NumPy 2 promotes by ``np.sqrt(depth)``), where cpu-loops erred 4.8e-5 at one element
    against an allowed 2e-5. NumPy's error there was 3.2e-7 by luck: moving the float32 values
    inside the block by an ulp moves that element by up to 8.8e-5. The perturbed evaluations
    moved only each op's result, and a composite is one op; now each rounding inside it moves
    (the median bound over the output moved from 5.3e-4 to 6.3e-4; at that element from 2e-5
    to 5.2e-4)."""
    import json
    from pathlib import Path

    import compiler
    from harness.case import Case
    from harness.verdict import judge_output

    fixture = Path(__file__).parent / "fixtures" / "attend_float32_rounding_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    actual = compiler.jit(case.traced_function())(*case.inputs, target="cpu-loops@O0")
    verdict = judge_output(case, actual, backend="cpu-loops@O0")
    assert verdict.ok, verdict.reason
    wrong = actual.copy()
    wrong[4, 9] += 2e-3  # 20 times what the roundings can do there
    assert not judge_output(case, wrong, backend="cpu-loops@O0").ok


@pytest.mark.parametrize("op", ["sum", "mean", "var", "softmax", "gelu"])
def test_a_perturbed_run_moves_a_well_conditioned_op_by_a_few_ulps(op: str) -> None:
    """Each rounding inside a composite or a reduction moves by one ulp (NumPy's own code on an
    array subclass, ``out=`` arguments included): on ordinary values the result moves by a few
    ulps, not more, so the local bound stays tight where the problem is easy."""
    from harness.case import Case
    from harness.run.references import numpy_reference, perturbed_reference
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((3, 8), "float32")
    axis = {"softmax": {"axis": -1}, "gelu": {}}.get(op, {"axis": -1, "keepdims": False})
    values = np.random.default_rng(5).uniform(0.5, 2.0, (3, 8)).astype(np.float32)
    case = Case(b.build(b.node(op, x, **axis)), [values])
    expected = numpy_reference(case).output
    for run in (1, 2):
        moved = perturbed_reference(case, run).output
        assert type(moved) is np.ndarray and moved.dtype == expected.dtype
        # In float32 ulps: gelu's float32 input meets a float64 constant, so its result is
        # float64 with float32 roundings inside.
        spacing = np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
        ulps = np.abs(moved.astype(np.float64) - expected) / spacing
        assert 0 < ulps.max() <= 8, ulps.max()


def test_a_nan_from_opposite_infinite_products_is_a_correct_order():
    """A 10-minute clean-compiler session (seed 302): a float64 feedforward on values near
    1e306, where one output is a sum of products that overflow to +inf and -inf. NumPy's BLAS
    (fused multiply-adds: the exact product stays finite inside one) and JAX give inf; a sum of
    rounded products, cpu-loops's and NumPy's own 1-D matmul, gives nan. The perturbed runs
    compute matmuls as products then sums, and their non-finite values are correct ones too."""
    import json
    from pathlib import Path

    import compiler
    from harness.case import Case
    from harness.verdict import judge_output

    fixture = Path(__file__).parent / "fixtures" / "feedforward_opposite_infinities_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    actual = compiler.jit(case.traced_function())(*case.inputs, target="cpu-loops@O0")
    assert np.isnan(actual).any()
    verdict = judge_output(case, actual, backend="cpu-loops@O0")
    assert verdict.ok, verdict.reason
    wrong = actual.copy()
    wrong[np.isfinite(wrong)] = np.nan  # a nan where every correct order is finite
    assert not judge_output(case, wrong, backend="cpu-loops@O0").ok


def test_an_int_float_matmul_with_opposite_infinite_products_is_judged_alike():
    """A 10-minute clean-compiler session (seed 1201): an int32 @ float64 matmul whose products
    overflow to +inf and -inf. NumPy casts the int32 operand and runs BLAS (-inf); cpu-loops
    sums rounded products (nan). The perturbed runs' products-then-sums matmul took float
    operands only, so that correct order was not among them for a mixed-dtype matmul."""
    import json
    from pathlib import Path

    import compiler
    from harness.case import Case
    from harness.verdict import judge_output

    fixture = Path(__file__).parent / "fixtures" / "int_float_matmul_opposite_infinities_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    assert {i.dtype for i in case.program.inputs} == {"int32", "float64"}
    actual = compiler.jit(case.traced_function())(*case.inputs, target="cpu-loops@O0")
    assert np.isnan(actual).any()
    assert judge_output(case, actual, backend="cpu-loops@O0").ok
    with np.errstate(all="ignore"):
        expected = case.function(np)(*case.inputs)
    both = np.argwhere((expected == -np.inf) & (actual == -np.inf))[0]
    wrong = actual.copy()
    wrong[tuple(both)] = np.inf  # the other sign where every order agrees
    assert not judge_output(case, wrong, backend="cpu-loops@O0").ok


def test_a_perturbed_run_keeps_exact_zeros():
    """``log(x - x)`` is -inf in every correct evaluation: a perturbed run must not move the
    zero to a subnormal (log of it is finite), or a backend's finite answer would pass."""
    from harness.case import Case
    from harness.run.references import perturbed_reference
    from harness.verdict import judge_output
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((4,), "float64")
    program = b.build(b.node("log", b.node("subtract", x, x)))
    case = Case(program, [np.array([1.0, -2.5, 3e300, 7.0])])
    for run in (1, 2):
        assert np.all(perturbed_reference(case, run).output == -np.inf)
    assert not judge_output(case, np.full(4, -744.44), backend="cpu-loops").ok


def test_an_exported_script_accepts_the_non_finite_values_the_oracle_accepts():
    """IREE's and XLA's standalone scripts judge like the differential oracle: a non-finite
    value is NumPy's or a perturbed evaluation's (``PATTERNS``), nothing else."""
    from harness.oracles import tolerance
    from harness.triage.export import _judged

    numpy_answer = np.array([np.inf, 1.0, 2.0])
    perturbed = np.array([np.nan, 1.0, 2.0])
    namespace = {
        "np": np,
        "NUMPY": numpy_answer,
        "EXACT": np.array([np.inf, 1.0, 2.0]),
        "ALLOWED": np.full(3, 1e-9),
        "PATTERNS": tolerance.nonfinite_patterns([numpy_answer, perturbed]),
        "SIGNS": tolerance.zero_signs(numpy_answer, [perturbed]),
    }
    script = "import sys\n" + "\n".join(_judged("out")) + "\n"

    def status(out: np.ndarray) -> object:
        with pytest.raises(SystemExit) as stopped:
            exec(script, {**namespace, "out": out})
        return stopped.value.code

    assert status(np.array([np.nan, 1.0, 2.0])) == 0
    assert status(np.array([np.inf, 1.0, 2.0])) == 0
    assert status(np.array([-np.inf, 1.0, 2.0])) != 0
    assert status(np.array([5.0, 1.0, 2.0])) != 0


def test_a_sum_in_another_order_is_judged_correct():
    """A 3-minute session (seed 1; found by a planted-bug run, on the clean compiler): a float64
    mean of 84 values holding +-2.8e306 pairs and eight 2**52, whose true mean 0.1/84 survives
    NumPy's pairwise order (and cpu-loops's forward one) by luck; cpu-vector's lanes add 0.1 to
    partial sums of 2**52, where it is lost: 0.0, as correct as NumPy's. The perturbed runs now
    sum in one sequential order each (forward, reversed), so that conditioning is measured."""
    import json
    from pathlib import Path

    import compiler
    from harness.case import Case
    from harness.run.references import perturbed_reference
    from harness.verdict import judge_output

    fixture = Path(__file__).parent / "fixtures" / "mean_of_cancelling_extremes_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    assert case.program.ops == ("mean",)
    actual = compiler.jit(case.traced_function())(*case.inputs, target="cpu-vector@O0")
    expected = case.function(np)(*case.inputs)
    reversed_run = perturbed_reference(case, 2).output
    assert abs(reversed_run.item() - expected.item()) > 1e10  # another order, another answer
    for answer in (actual, expected, reversed_run):
        verdict = judge_output(case, np.asarray(answer), backend="cpu-vector@O0")
        assert verdict.ok, verdict.reason
    assert not judge_output(case, np.full_like(actual, np.nan), backend="cpu-vector@O0").ok


def test_a_perturbed_run_leaves_exact_operations_exact():
    """Layout ops, maxima, negations and selections do not round in any correct evaluation, so
    a perturbed run keeps them exact: a moved row maximum made a softmax of scores near 1e147
    give inf / inf = nan, which no correct evaluation gives (and which would have excused a
    backend's nan at that element)."""
    from harness.case import Case
    from harness.run.references import numpy_reference, perturbed_reference
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((3, 4), "float64")
    turned = b.node("permute_dims", x, axes=(1, 0))
    exact = b.node("maximum", b.node("negative", turned), turned)
    program = b.build(b.node("max", exact, axis=0, keepdims=False))
    case = Case(program, [np.random.default_rng(0).standard_normal((3, 4))])
    for run in (1, 2):
        assert np.array_equal(perturbed_reference(case, run).output, numpy_reference(case).output)

    b = ProgramBuilder()
    y = b.input((2, 5), "float64")
    huge = Case(b.build(b.node("softmax", y, axis=-1)), [np.full((2, 5), 1e147)])
    for run in (1, 2):
        out = perturbed_reference(huge, run).output
        assert np.all(np.isfinite(out)) and np.allclose(out.sum(axis=-1), 1.0)


def test_the_spec_oracle_leaves_attention_scores_that_tie_exactly():
    """A clean-compiler session (seed 1301): float32 inputs of +-5.3e36 give attention scores
    near 1e117 and 1e147 that tie exactly (the same extreme value repeats), so rounding alone
    picks each softmax's winner; the independent float64 side picked another key than the
    shared definition's float64 and extended evaluations, and the float32 program itself is nan.
    The perturbed float64 evaluations break the ties other ways and measure that."""
    import json
    from pathlib import Path

    from harness.case import Case
    from harness.oracles.spec import definition_verdict, perturbed_in_float64
    from harness.run.references import references

    fixture = Path(__file__).parent / "fixtures" / "attend_exact_score_ties_case.json"
    case = Case.from_dict(json.loads(fixture.read_text()))
    assert case.program.ops == ("attend",)
    refs = references(case, use_jax=False)
    assert np.isnan(refs["numpy"].output).all() and np.isfinite(refs["truth"].output).all()
    assert any(np.isfinite(p).all() for p in perturbed_in_float64(case))
    assert definition_verdict(case, refs) is None


def test_an_infinity_the_truth_has_is_accepted() -> None:
    """Products of 2.8e306-sized terms round to -inf, -inf, +inf, so NumPy (and every perturbed
    run) sums nan; a BLAS whose fused multiply-adds keep each product exact gives -inf, which is
    the exact sum (-7.9e612) rounded: correct (a 5-minute clean session, seed 7). +inf is not."""
    from harness.case import Case
    from harness.oracles.differential import reference_outputs, yardstick
    from harness.run.references import perturbed_outputs, references
    from strategies.model import ProgramBuilder

    big = 2.80889552e306
    b = ProgramBuilder()
    inputs = [b.input((6,), "float64"), b.input((6, 4), "float64"), b.input((1,), "float64")]
    program = b.build(b.node("linear", *inputs))
    x = np.array([big, 0.0, 0.0, -big, big, -big])
    w = np.ones((6, 4))  # four columns: NumPy's own kernel adds rounded products (nan)
    w[:, 3] = [-big, -2.0, 3.0, big, 0.0, -big]
    case = Case(program, [x, w, np.array([-2.0])], ("cpu-blas",))
    refs = references(case, use_jax=False)
    assert np.isnan(refs["numpy"].output[3]) and yardstick(refs)[3] == -np.inf

    def judged(value: float) -> bool:
        got = refs["numpy"].output.copy()
        got[3] = value
        return tolerance.compare(
            got, yardstick(refs), reference_outputs(refs, (4,)), 3.0, np.dtype("float64"),
            local=perturbed_outputs(refs, (4,)),
        ).ok  # fmt: skip

    assert judged(-np.inf) and judged(np.nan)
    assert not judged(np.inf) and not judged(1.0)


def test_a_sum_whose_terms_cancel_may_come_out_of_any_order() -> None:
    """A one-hour session's two findings on the real compiler, both false: gelu of the float32
    row sum of [-102.8, 5.3e36, -5.3e36, 1.2e-7, -1.2e-7] was 6e-8 on cpu-vector (four lanes
    added up in turn: 1.2e-7) against 0 in NumPy, the truth (the long double sum loses -102.8
    too) and every order the perturbed runs took, so 4.6e-14 was allowed; the sum of 8388608,
    -87, -104, -103, 5.3e36 and -5.3e36 was 8388314 there, the exact sum, against a truth of 0.
    A sum's perturbed runs move it by a share of the a priori bound of any order, where its
    terms cancel; the same value 1e-4 off where nothing cancels is still rejected, and a sum
    exact in every order is not moved."""
    from harness.case import Case
    from harness.run.references import perturbed_reference, references
    from harness.verdict import judge_output
    from strategies.model import ProgramBuilder

    def row_sum(row: list[float], gelu: bool = True) -> Case:
        b = ProgramBuilder()
        total = b.node("sum", b.input((1, len(row)), "float32"), axis=1, keepdims=False)
        program = b.build(b.node("gelu", total) if gelu else total)
        return Case(program, [np.array([row], np.float32)], ("cpu-vector",))

    cancelling = row_sum([-102.77893, 5.3169117e36, -5.3169117e36, 1.1920929e-07, -1.1920929e-07])
    assert judge_output(cancelling, np.array([5.960464477539063e-08]), use_jax=False)
    exact_there = row_sum([8388608.0, -87.0, -104.0, -103.0, 5.3169113e36, -5.3169113e36], False)
    assert judge_output(exact_there, np.array([8388314.0], np.float32), use_jax=False)
    plain = row_sum([1.0, 2.0, 0.5, 0.25, 3.0])
    want = np.asarray(references(plain, use_jax=False)["numpy"].output)
    assert judge_output(plain, want, use_jax=False)
    assert not judge_output(plain, want * (1 + 1e-4), use_jax=False)
    exact = row_sum([1.0, -3.0, 3.0, -1.0, 0.0], gelu=False)  # 0 in every order
    assert all(perturbed_reference(exact, run).output[0] == 0.0 for run in range(1, 5))


def test_an_infinity_fused_multiply_adds_reach_is_accepted() -> None:
    """The products of a float64 [3] @ [3, 5] column are -inf, 0 and +inf once rounded: NumPy
    sums nan, the truth is +inf (-1.3e322 + 7.9e612), and BLAS's fused multiply-adds give -inf
    (-inf, then -inf + the exact 7.9e612): correct, and reported by a 5-minute clean session
    (seed 11, cpu-vector). The fused perturbed order (``SUM_ORDERS``) computes it."""
    from harness.case import Case
    from harness.oracles.differential import reference_outputs, yardstick
    from harness.run.references import SUM_ORDERS, perturbed_outputs, references
    from strategies.model import ProgramBuilder

    assert "fused" in SUM_ORDERS
    big = 2.808895523222368e306
    b = ProgramBuilder()
    program = b.build(b.node("matmul", b.input((3,), "float64"), b.input((3, 5), "float64")))
    x = np.array([-big, 0.0, big])
    w = np.array([[-0.0, 2.0**52, -big, 3.0, -0.0], [-4.0, 0.0, -3.0, -0.0, 2.0**52],
                  [-4.0, big, -0.0, 0.0, -4.0]])  # fmt: skip
    refs = references(Case(program, [x, w], ("cpu-blas",)), use_jax=False)
    assert yardstick(refs)[1] == np.inf
    assert any(np.asarray(r.output)[1] == -np.inf for r in refs.values() if r.ok)

    def judged(value: float) -> bool:
        got = np.asarray(refs["numpy"].output).copy()
        got[1] = value
        return tolerance.compare(
            got, yardstick(refs), reference_outputs(refs, (5,)), 2.0, np.dtype("float64"),
            local=perturbed_outputs(refs, (5,)),
        ).ok  # fmt: skip

    assert judged(-np.inf) and judged(np.inf) and judged(np.nan)
    assert not judged(1.0)


@pytest.mark.parametrize(("dtype", "ulps"), [("float16", 2), ("float32", 10), ("float64", 10)])
def test_an_op_some_ulps_off_is_a_finding(dtype: str, ulps: int) -> None:
    """Rounding alone moves NumPy's exp and a perturbed run's by an ulp or so: that says
    nothing about conditioning, and FACTOR times it let a float32 add 16 ulps off pass (and a
    float32 exp 12 ulps off, a vector polynomial of too low a degree). The floor allows a
    backend its own rounding: one ulp of float16 passes, two are a finding; of float32 (and
    float64) four times its epsilon times the magnitude pass, ten ulps of a 7.x do not. (An
    add has one right answer: ``test_a_correctly_rounded_program_has_one_right_answer``.)"""
    from harness.case import Case
    from harness.verdict import judge_output
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((256,), dtype)))
    assert not tolerance.exactly_rounded(program)
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 2, 256).astype(dtype)
    case = Case(program, [x], ("cpu-loops",))
    right = np.exp(x)
    i = int(np.argmax(np.abs(right)))

    def moved(by: int) -> np.ndarray:
        out = right.copy()
        for _ in range(by):
            out[i] = np.nextafter(out[i], np.inf, dtype=out.dtype)
        return out

    assert judge_output(case, right, use_jax=False).ok
    assert judge_output(case, moved(1), use_jax=False).ok
    verdict = judge_output(case, moved(ulps), use_jax=False)
    assert not verdict.ok and verdict.worst_index == (i,), verdict


def _add_case(dtype: str, size: int = 256) -> tuple:
    """A case adding two arrays of ``dtype`` (values in [-4, 4]) and NumPy's answer."""
    from harness.case import Case
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("add", b.input((size,), dtype), b.input((size,), dtype)))
    rng = np.random.default_rng(3)
    x, y = (rng.uniform(-4, 4, size).astype(np.dtype(dtype)) for _ in range(2))  # ml_dtypes
    return Case(program, [x, y], ("cpu-loops",)), x + y


def _neighbour(value: np.ndarray) -> np.ndarray:
    """The next representable value of ``value``'s float dtype away from zero (one ulp)."""
    unsigned = np.dtype(f"uint{8 * value.dtype.itemsize}")
    return (value.view(unsigned) + 1).astype(unsigned).view(value.dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_a_correctly_rounded_program_has_one_right_answer(dtype: str) -> None:
    """+, -, *, /, sqrt and casts round their exact result once (IEEE 754), exact ops not at
    all: such a program has one right answer, NumPy's, and an ulp off anywhere is a finding
    (it was within the floor: a float16 add an ulp off, a float32 one three ulps off, a
    division by a reciprocal). nan is nan."""
    from harness.verdict import judge_output

    case, right = _add_case(dtype)
    assert tolerance.exactly_rounded(case.program)
    assert judge_output(case, right, use_jax=False).ok
    for i in (0, 17, 255):
        off = right.copy()
        off[i : i + 1] = _neighbour(right[i : i + 1])
        verdict = judge_output(case, off, use_jax=False)
        assert not verdict.ok and verdict.worst_index == (i,), verdict
        assert "only right answer" in verdict.reason
    nan = right.copy()
    nan[3] = np.nan
    assert not judge_output(case, nan, use_jax=False).ok


def test_a_cast_rounding_a_tie_up_is_a_finding() -> None:
    """float32 -> bfloat16 of 1 + 2**-8, halfway between 1 and 1 + 2**-7: NumPy (ml_dtypes)
    rounds to even, 1.0. Half up, 1.0078125, is as far from the truth, so only an exact
    comparison with NumPy's answer sees it."""
    import ml_dtypes

    from harness.case import Case
    from harness.verdict import judge_output
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("astype", b.input((3,), "float32"), dtype="bfloat16"))
    x = np.array([1.00390625, 1.01171875, 3.0], np.float32)
    case = Case(program, [x], ("cpu-loops",))
    right = x.astype(ml_dtypes.bfloat16)
    assert float(right[0]) == 1.0
    assert judge_output(case, right, use_jax=False).ok
    up = right.copy()
    up[0] = ml_dtypes.bfloat16(1.0078125)
    assert not judge_output(case, up, use_jax=False).ok


def test_a_program_with_a_rounding_function_keeps_the_error_model() -> None:
    """exp, power, sums, matmuls and composites round their own way (libm, summation order):
    a program with one of them is judged by the bound, whatever else it holds."""
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((4, 3), "float32")
    assert tolerance.exactly_rounded(b.build(b.node("sqrt", b.node("abs", x))))
    assert tolerance.exactly_rounded(b.build(b.node("max", b.node("divide", x, x), axis=0)))
    for op in ("exp", "sum", "tanh"):
        b2 = ProgramBuilder()
        y = b2.input((4, 3), "float32")
        assert not tolerance.exactly_rounded(b2.build(b2.node("add", b2.node(op, y), y)))


def test_an_exported_script_judges_a_correctly_rounded_program_exactly() -> None:
    """The reproducer script embeds NumPy's answer with nothing allowed around it, so it fails
    on an add one ulp off exactly where the oracle does."""
    from planted_reproducer import exported_status

    case, right = _add_case("float32", 16)
    status = exported_status(case)
    assert status(right) == 0
    off = right.copy()
    off[5] = np.nextafter(off[5], np.inf, dtype=np.float32)
    assert status(off) != 0


def test_a_backend_that_does_not_round_as_numpy_keeps_the_bound() -> None:
    """XLA rewrites ``x / sqrt(y)`` with rsqrt and keeps float16 chains in float32 (its
    ``rounds_as_numpy`` is False): an exactly rounded program is judged there within the
    error model's bound, on ours and IREE's to the bit."""
    from harness.oracles.differential import rounds_as_numpy
    from harness.verdict import judge_output

    assert not rounds_as_numpy("xla-cpu")
    assert rounds_as_numpy("cpu-loops@O0") and rounds_as_numpy("iree-cpu@O2")
    case, right = _add_case("float32")
    off = right.copy()
    off[7:8] = _neighbour(right[7:8])
    assert judge_output(case, off, use_jax=False, backend="xla-cpu").ok
    assert not judge_output(case, off, use_jax=False, backend="cpu-vector").ok


def test_a_perturbed_run_that_overflows_where_the_truth_is_finite_allows_anything_there() -> None:
    """A correct evaluation that overflows at an element whose truth is finite says that element
    is that ill-conditioned; its error was ignored, so the other runs alone set the bound there."""
    truth = np.array([5.04e-7, 2.0])
    perturbed = [np.array([0.0, 2.0]), np.array([np.inf, 2.0])]
    allowed = tolerance.bound(truth, [truth], 1.0, np.dtype(np.float32), local=perturbed)
    assert allowed[0] == np.inf and allowed[1] < 1e-5
    unbounded = tolerance.bound(np.array([np.inf]), [], 1.0, np.dtype(np.float32), local=[[1.0]])
    assert np.isfinite(unbounded).all()  # a non-finite truth: judged by its pattern, as before


def test_exp_of_a_mean_whose_terms_cancel_is_judged_undetermined() -> None:
    """float32 exp(mean(x)) where 5.3e36 - 5.3e36 cancels: NumPy's order gives the truth's
    5e-7, four lanes added in turn 1.0 (cpu-vector's); both are correct, and a 60 s session
    reported the second against an allowed 4e-6."""
    from harness.case import Case
    from harness.verdict import judge_output
    from strategies import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((6,), "float32")
    program = b.build(b.node("exp", b.node("mean", x, axis=(0,))))
    big = np.float32(5.3169113e36)
    inputs = [np.array([-104, -103, big, -big, 0, -87], np.float32)]
    case = Case(program, inputs, ("cpu-vector",))
    with np.errstate(over="ignore"):
        assert judge_output(case, np.float32(1.0), use_jax=False).ok
        assert judge_output(case, np.exp(np.mean(inputs[0])), use_jax=False).ok


def test_a_subnormal_result_is_judged_in_its_own_ulps() -> None:
    """float32 exp clamped at -88 (6.05e-39 for exp(-100) = 3.8e-44): the floor was float32's
    smallest normal number, 1.2e-38, and let every error of a subnormal result pass. An ulp
    below it is the smallest subnormal: a result one subnormal ulp off passes, this one not."""
    x = np.array([-88.3, -100.0, -103.8, -90.0], np.float32)
    truth = np.exp(x.astype(np.float64))
    numpy_out = np.exp(x)
    clamped = np.exp(np.maximum(x, np.float32(-88.0)))
    verdict = tolerance.compare(clamped, truth, [numpy_out], coupled=False)
    assert not verdict.ok and verdict.worst_index == (3,), verdict  # exp(-90): 8e-40
    one_ulp = np.nextafter(numpy_out, np.float32(np.inf))
    assert tolerance.compare(one_ulp, truth, [numpy_out], coupled=False).ok


def test_an_elementwise_programs_small_elements_are_not_judged_by_its_large_ones() -> None:
    """Beside exp(88.2) = 2e38, the bound's share of the array's largest value (and of the
    references' largest error) allowed every small element an error of 1e29: in an elementwise
    program each element's error is its own. A reduction or a contraction keeps the share."""
    x = np.array([88.2, -100.0, 1.0, -0.5], np.float32)
    truth = np.exp(x.astype(np.float64))
    numpy_out = np.exp(x)
    bad = numpy_out.copy()
    bad[2] *= np.float32(1 + 1e-5)  # 84 ulps
    assert not tolerance.compare(bad, truth, [numpy_out], coupled=False).ok
    assert tolerance.compare(bad, truth, [numpy_out], coupled=True).ok


def test_couples_names_the_programs_whose_elements_combine() -> None:
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    assert not tolerance.couples(b.build(b.node("exp", b.node("transpose", x))))
    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    assert tolerance.couples(b.build(b.node("exp", b.node("sum", x, axis=-1))))
    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    assert tolerance.couples(b.build(b.node("softmax", x)))


def test_a_zero_of_the_other_sign_is_caught_where_numpy_settles_it() -> None:
    """Every error model judges -0.0 and 0.0 equal, so a float16 maximum that kept its second
    operand of -0.0 and 0.0 (NumPy's float16 loop keeps the first) survived 60 s sessions. A
    zero of the other sign than NumPy's is a finding where every perturbed evaluation has
    NumPy's sign (not where another order of a sum gives the other), and an exported script
    fails on it as the oracle does."""
    from harness.triage.export import _judged

    numpy_answer = np.array([-0.0, 0.0, -0.0, 1.0])
    perturbed = np.array([-0.0, 0.0, 0.0, 1.0])  # element 2: not settled
    flipped = np.array([0.0, 0.0, 0.0, 1.0])
    assert tolerance.compare(flipped, numpy_answer, [numpy_answer], local=[perturbed]).ok
    verdict = tolerance.compare(
        flipped, numpy_answer, [numpy_answer], local=[perturbed], signed_zeros=True
    )
    assert not verdict.ok and verdict.worst_index == (0,) and "sign" in verdict.reason
    unsettled = np.array([-0.0, 0.0, 0.0, 1.0])
    assert tolerance.compare(
        unsettled, numpy_answer, [numpy_answer], local=[perturbed], signed_zeros=True
    ).ok
    # No perturbed evaluation: only an exactly rounded program's zeros are settled.
    assert tolerance.compare(flipped, numpy_answer, [numpy_answer], signed_zeros=True).ok
    negative, positive = tolerance.NEGATIVE_ZERO, tolerance.POSITIVE_ZERO
    expected = [negative, positive, negative, tolerance.ANY_SIGN]
    assert tolerance.zero_signs(numpy_answer, exact=True).tolist() == expected
    namespace = {
        "np": np,
        "NUMPY": numpy_answer,
        "EXACT": numpy_answer,
        "ALLOWED": np.zeros(4),
        "PATTERNS": tolerance.nonfinite_patterns([numpy_answer]),
        "SIGNS": tolerance.zero_signs(numpy_answer, [perturbed]),
    }
    script = "import sys\n" + "\n".join(_judged("out")) + "\n"
    for out, code in ((flipped, "other sign"), (unsettled, 0)):
        with pytest.raises(SystemExit) as stopped:
            exec(script, {**namespace, "out": out})
        assert stopped.value.code == code or code in str(stopped.value.code), stopped.value.code


def test_a_max_reductions_zero_sign_is_not_numpys_to_settle() -> None:
    """NumPy's max and min reductions pick between -0.0 and 0.0 by their loop's order (a float32
    max of a row holding 0.0 and -0.0 was -0.0), and no perturbed run reorders them: after one,
    zero signs are not judged. An elementwise maximum's are (NumPy's loops define them)."""
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    assert not tolerance.signs_settled(b.build(b.node("negative", b.node("max", x, axis=-1))))
    b = ProgramBuilder()
    x, y = b.input((3,), "float16"), b.input((3,), "float16")
    assert tolerance.signs_settled(b.build(b.node("maximum", x, y)))
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    assert tolerance.signs_settled(b.build(b.node("sum", x, axis=-1)))


def test_a_matmuls_zero_sign_is_its_kernels() -> None:
    """Where every product is -0.0, NumPy's matmul sign is its kernel's (gemm sums from the first
    product, a dot from 0.0): after a matmul, or a composite with one, zero signs are not judged."""
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((3, 2), "float32"), b.input((2, 2), "float32")
    assert not tolerance.signs_settled(b.build(b.node("matmul", x, y)))
    b = ProgramBuilder()
    x, w, c = b.input((3, 2), "float32"), b.input((2, 4), "float32"), b.input((4,), "float32")
    assert not tolerance.signs_settled(b.build(b.node("linear", x, w, c)))


def test_a_float16_matmuls_zeros_are_numpys_loops() -> None:
    """NumPy multiplies float16 matrices in its own loop, summing exact products in float from
    0.0: a zero there is 0.0 unless a negative sum rounds to it. Those signs are judged, and the
    perturbed evaluations start from 0.0 too. A kernel whose sums start from -0.0 (planted:
    -0.0 is addition's identity) gave -0.0 where every product was -0.0, unjudged."""
    from harness.case import Case
    from harness.run.references import perturbed_outputs, references
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 1), "float16"), b.input((1, 3), "float16")
    program = b.build(b.node("matmul", x, y))
    assert tolerance.signs_settled(program)
    # products -0.0, 0.0, -3; 0.0, -0.0, 6; and a tiny negative sum that rounds to -0.0
    inputs = [np.array([[-1.0], [2.0]], np.float16), np.array([[0.0, -0.0, 3.0]], np.float16)]
    refs = references(Case(program, inputs), use_jax=False)
    numpy_answer = refs["numpy"].output
    local = perturbed_outputs(refs, numpy_answer.shape)
    assert local and not any(np.signbit(p[p == 0]).any() for p in local)
    signs = tolerance.zero_signs(numpy_answer, local)
    assert (signs == tolerance.POSITIVE_ZERO).sum() == 4
    planted = numpy_answer.copy()
    planted[numpy_answer == 0] = -0.0
    verdict = tolerance.compare(
        planted, numpy_answer, [numpy_answer], local=local, signed_zeros=True
    )
    assert not verdict.ok and "other sign" in verdict.reason
    assert tolerance.compare(
        numpy_answer, numpy_answer, [numpy_answer], local=local, signed_zeros=True
    ).ok
    tiny = [np.array([[-1e-4]], np.float16), np.array([[1e-4]], np.float16)]
    b = ProgramBuilder()
    x, y = b.input((1, 1), "float16"), b.input((1, 1), "float16")
    refs = references(Case(b.build(b.node("matmul", x, y)), tiny), use_jax=False)
    assert np.signbit(refs["numpy"].output).all()  # -1e-8 rounds to -0.0: not 0.0's to settle
    local = perturbed_outputs(refs, (1, 1))
    assert tolerance.zero_signs(refs["numpy"].output, local).tolist() == [[tolerance.ANY_SIGN]]


def test_numpys_own_answer_is_never_an_error() -> None:
    """The compiler's semantics are NumPy's: an element equal to NumPy's, bit for bit, passes
    whatever the extended-precision truth says. A float16 ``2.0 ** x`` overflows to inf before
    ``<= 1e10`` in NumPy and in every dtype-faithful run, so the comparison is True there and
    False in the truth, and NumPy's 102 was reported as one off; any other value still fails."""
    from harness.case import Case
    from harness.verdict import judge_output
    from strategies.model import Const, ProgramBuilder

    b = ProgramBuilder()
    x = b.input((1, 1), "float16")
    wide = b.node("astype", x, dtype="float64")
    small = b.node("less_equal", b.node("power", Const(2.0), x), Const(1e10))
    program = b.build(b.node("add", b.node("astype", small, dtype="float16"), wide))
    case = Case(program, [np.array([[101.0]], np.float16)])
    with np.errstate(all="ignore"):
        numpy_answer = np.asarray(program.as_function()(*case.inputs))
    assert numpy_answer[0, 0] == 102.0
    assert judge_output(case, numpy_answer, use_jax=False).ok
    assert not judge_output(case, numpy_answer + 1.0, use_jax=False).ok


def test_the_error_model_takes_no_dtype_fact_from_the_compiler(monkeypatch) -> None:
    """The oracles' dtype facts are the model's own: a compiler that dropped float16 from its
    low-precision table (and so accumulated float16 sums in float16) also made the tolerance
    allow float16 four ulps a step instead of one, hiding its own 120-unit error on a sum of 40
    float16 values near 1000 (a held-out plant, missed by 60 and 150 s sessions)."""
    import ml_dtypes

    from compiler import dtypes

    before = [tolerance.ulps_per_step(np.dtype(d)) for d in ("float16", "bfloat16", "float32")]
    assert before == [tolerance.LOW_PRECISION_ULPS_PER_STEP] * 2 + [tolerance.ULPS_PER_STEP]
    monkeypatch.setattr(dtypes, "LOW_PRECISION", ())
    monkeypatch.setattr(dtypes, "FLOATS", ())
    monkeypatch.setattr(dtypes, "finfo", lambda d: np.finfo(np.float64))
    monkeypatch.setattr(dtypes, "is_float", lambda d: False)
    monkeypatch.setattr(dtypes, "is_low_precision", lambda d: False)
    after = [tolerance.ulps_per_step(np.dtype(d)) for d in ("float16", "bfloat16", "float32")]
    assert after == before
    assert tolerance.eps(np.dtype(ml_dtypes.bfloat16)) == 2.0**-7
    assert tolerance.eps(np.dtype(np.float16)) == 2.0**-10


def test_a_refused_answer_is_judged_again_with_more_perturbed_runs(monkeypatch) -> None:
    """A float64 attention (a clean fuzzing session, on cpu-vector): rows of one huge value
    layer-normed to 32s and a -128, whose last bits, times weights up to 1e26, make attention
    scores of -2.2e17 seven ulps apart. A layer norm an ulp off in two places (cpu-vector's
    vectorized sums) ties them: weights of 1/2 where NumPy's are 1 and 0, 1.7e42 off at an
    output of -2.6e52. Right, and all five perturbed runs kept NumPy's order (each random run
    breaks it four times in ten): the answer is judged again against ``DEEPER_RUNS`` more, and
    passes. An answer off where the runs agree is refused after them too."""
    from compiler import ops
    from harness.case import Case
    from harness.oracles.differential import against_references
    from harness.run import references as refs_module
    from harness.run.references import references
    from strategies.model import ProgramBuilder

    x = np.array([
        [-3.959711965660156e-31, -68719476736.0, 3.308722647427337e-24, -3.032775425121502e-36,
         6.103515988797882e-05],
        [2.39349901676178e-07, 2.6469779601696886e-23, 0.015632629394531247, 414.37500000000006,
         -5.832161517444794e17],
    ])  # fmt: skip
    qkv = np.zeros((5, 15))
    qkv[0, [1, 6]] = -16.0, 274877923328.0
    qkv[1, [2, 3, 11]] = -568.0, 5.316911983139664e36, 4.835703566688892e24
    qkv[2, [1, 3, 6, 7, 8, 11, 13]] = (
        -256.0, -7.0, 1.0, 1.446781380292772e17, 1026.0, -4.095460911140045e16, -7.0
    )  # fmt: skip
    qkv[3, [1, 4, 10, 11, 12, 14]] = (
        -513.0, 257.0, -65792.0, 65488.0, 4.722366764344622e21, 1.9037039884068257e22
    )  # fmt: skip
    qkv[4, [2, 7, 12]] = 7.205760692282982e16, 16400.0, 8.635184271409648e23
    out = np.zeros((5, 5))
    out[0, :2] = 8796093022208.0, 32784.0
    out[1, 1:4] = 4503600164241408.0, 1988100096.0, 820.0
    out[2, :3] = 6.0, 2.3579809788973467e26, -3.0948502826808914e26
    out[3, [1, 3]] = 7.737125706702229e25, -147439256338432.0
    gain, zero, out_bias = np.array([64.0]), np.array([0.0]), np.array([-4.440892098500626e-16])
    b = ProgramBuilder()
    inputs = [x, gain, zero, qkv, zero, out, out_bias]
    args = [b.input(a.shape, "float64") for a in inputs]
    case = Case(b.build(b.node("attend", *args, heads=5)), inputs)
    # The other correct layer norm: NumPy's, with row 1's last bits as cpu-vector's.
    normalized = ops.layer_norm(x, gain, zero)
    assert normalized[1, 0] == 31.999999999999975 and normalized[1, 4] == -128.0
    normalized[1, [0, 1, 2, 4]] = 31.999999999999968, 31.999999999999968, 31.999999999999968, (
        -127.99999999999999
    )  # fmt: skip
    tied = x + ops.attention(normalized, qkv, zero, out, out_bias, heads=5)

    refs = references(case, use_jax=False)
    numpy_out = refs["numpy"].output
    assert abs(tied[1, 1] - numpy_out[1, 1]) > 1e42  # the tie: another softmax weight
    monkeypatch.setattr(refs_module, "DEEPER_RUNS", 0)
    shallow = references(case, use_jax=False)
    assert not against_references(case, shallow, tied).ok  # five runs miss the tie
    monkeypatch.undo()
    verdict = against_references(case, refs, tied)
    assert verdict.ok, verdict.reason
    assert f"perturbed:{refs_module.PERTURBED_RUNS + refs_module.DEEPER_RUNS}" in refs
    wrong = numpy_out.copy()
    wrong[1, 2] *= 1 + 1e-12  # 3.4e52, the largest: a few thousand ulps
    assert not against_references(case, references(case, use_jax=False), wrong).ok
