"""Delta debugging shrinks programs, dimensions and values while the same failure persists."""

from __future__ import annotations

import numpy as np

from harness.case import Case
from harness.oracles.base import Finding
from harness.triage.minimize import minimize
from strategies.model import Const, ProgramBuilder


def planted(case: Case) -> Finding | None:
    """Fails whenever a permute_dims feeds a matmul (a stand-in for a compiler bug)."""
    program = case.program
    for node in program.nodes:
        if node.op != "matmul":
            continue
        for arg in node.args:
            if arg.kind == "node" and program.nodes[arg.index].op == "permute_dims":
                return Finding("mismatch", ("cpu-loops",), "differential", "planted", case)
    return None


def test_minimizes_to_the_pattern_with_small_dims() -> None:
    b = ProgramBuilder()
    x = b.input((6, 7), "float32")
    y = b.input((6, 5), "float32")
    e = b.node("exp", x)
    s = b.node("add", e, Const(1.0))
    t = b.node("permute_dims", s, axes=(1, 0))
    m = b.node("matmul", t, y)
    r = b.node("sum", m, axis=0)
    out = b.node("tanh", r)
    program = b.build(out)
    rng = np.random.default_rng(1)
    case = Case(
        program,
        [
            rng.standard_normal((6, 7)).astype(np.float32),
            rng.standard_normal((6, 5)).astype(np.float32),
        ],
        ("cpu-loops",),
    )
    finding = planted(case)
    result = minimize(case, finding, planted, budget_seconds=30)
    small = result.case.program
    assert len(small) <= 3, str(small)
    assert [n.op for n in small.nodes][-2:] == ["permute_dims", "matmul"]
    assert all(d <= 4 for inp in small.inputs for d in inp.shape), str(small)
    assert planted(result.case) is not None
    assert all(np.array_equal(a, np.round(a)) for a in result.case.inputs)


def test_extents_shrink_by_the_largest_reduction_that_still_fails() -> None:
    """A failure at every extent goes straight to extent 1; one that needs 8 lanes or more
    still gets there by halving. One less first made a 31-wide case take 30 evaluations (41 s
    of a minimization) to reach 1."""
    b = ProgramBuilder()
    x = b.input((31, 17), "float32")
    case = Case(b.build(b.node("exp", x)), [np.ones((31, 17), np.float32)], ("cpu-loops",))
    finding = Finding("mismatch", ("cpu-loops",), "differential", "planted", case)

    def always(candidate: Case) -> Finding | None:
        return Finding("mismatch", ("cpu-loops",), "differential", "planted", candidate)

    result = minimize(case, finding, always, budget_seconds=30)
    assert result.case.program.inputs[0].shape == (1, 1), result.steps
    assert result.evaluations <= 8, result.steps

    def wide(candidate: Case) -> Finding | None:
        return always(candidate) if candidate.program.inputs[0].shape[0] >= 8 else None

    result = minimize(case, finding, wide, budget_seconds=30)
    assert result.case.program.inputs[0].shape[0] == 8, result.steps
    assert result.evaluations <= 40, (result.evaluations, result.steps)


def test_a_contracted_extent_that_must_stay_wide_shrinks_to_its_minimum() -> None:
    """A matmul's contracted extent shrinks only in every input at once; a failure that needs
    it at 8 or more must still get there (the joint variant once offered only its first
    candidate, extent 1, and the case stayed 31 wide)."""
    b = ProgramBuilder()
    x, w = b.input((5, 31), "float32"), b.input((31, 6), "float32")
    inputs = [np.ones((5, 31), np.float32), np.ones((31, 6), np.float32)]
    case = Case(b.build(b.node("matmul", x, w)), inputs, ("cpu-loops",))
    finding = Finding("mismatch", ("cpu-loops",), "differential", "planted", case)

    def wide(candidate: Case) -> Finding | None:
        program = candidate.program
        if not program.nodes or program.nodes[0].op != "matmul":
            return None
        if program.inputs[0].shape[-1] < 8:
            return None
        return Finding("mismatch", ("cpu-loops",), "differential", "planted", candidate)

    result = minimize(case, finding, wide, budget_seconds=30)
    assert [i.shape for i in result.case.program.inputs] == [(1, 8), (8, 1)], result.steps


def test_the_numpy_spelling_stays_only_when_the_failure_needs_it() -> None:
    """A failure of any spelling is handed back in the default one (operators and the array
    namespace); one that needs NumPy's dispatch keeps it, so the reproducer shows the cause."""
    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    t = b.node("permute_dims", b.node("exp", x), axes=(1, 0))
    program = b.build(b.node("matmul", t, b.input((3, 2), "float32")))
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((3, 4)), rng.standard_normal((3, 2))]
    case = Case(program, [a.astype(np.float32) for a in inputs], ("cpu-loops",))
    spelled = case.respelled("numpy")

    result = minimize(spelled, planted(spelled), planted, budget_seconds=30)
    assert result.case.spelling == "array-api" and "spelled array-api" in result.steps

    def needs_dispatch(candidate: Case) -> Finding | None:
        return planted(candidate) if candidate.spelling == "numpy" else None

    kept = minimize(spelled, planted(spelled), needs_dispatch, budget_seconds=30)
    assert kept.case.spelling == "numpy" and planted(kept.case) is not None


def test_a_failure_of_one_late_element_shrinks_to_that_element() -> None:
    """Each smaller extent keeps either end of its dimension: an IREE sine of a (3, 1, 1) array
    failed only on its last element, -5.3e36 (inf for a sine), and cropping to the leading
    element lost it, so the reproducer kept all three and the known issue of the first (a
    small negative argument) was named for it."""
    b = ProgramBuilder()
    x = b.input((3, 5), "float32")
    values = np.ones((3, 5), np.float32)
    values[2, 3] = -5.3e36
    case = Case(b.build(b.node("sin", x)), [values], ("cpu-loops",))

    def huge(candidate: Case) -> Finding | None:
        if not np.any(np.abs(candidate.inputs[0]) > 1e30):
            return None
        return Finding("mismatch", ("cpu-loops",), "differential", "planted", candidate)

    finding = huge(case)
    result = minimize(case, finding, huge, budget_seconds=30)
    assert result.case.inputs[0].tolist() == [[np.float32(-5.3e36)]], result.steps
    assert result.evaluations <= 12, (result.evaluations, result.steps)


def test_rounded_inputs_stay_arrays_as_stored() -> None:
    """``np.round`` of a 0-d array is a NumPy scalar: a minimized case held one, failed with it
    (a captured scalar takes another path in the frontend) and replayed fixed-now, since the
    corpus stores a 0-d array. Cases hold arrays, and the rounding keeps them."""
    from harness.triage.minimize import _variants_values

    b = ProgramBuilder()
    program = b.build(b.node("abs", b.input((), "float64")))
    case = Case(program, [np.array(0.3)])
    rounded = [c for name, c in _variants_values(case) if name == "input 0 rounded"]
    assert rounded and all(type(c.inputs[0]) is np.ndarray for c in rounded)
    assert type(Case(program, [np.float64(0.3)]).inputs[0]) is np.ndarray
