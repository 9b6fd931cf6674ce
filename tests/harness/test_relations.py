"""Metamorphic relations hold on the real compiler for the cases they fit."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case
from harness.oracles import relations
from harness.run.runner import Runner
from strategies.model import ProgramBuilder


@pytest.fixture(scope="module")
def runner():
    with Runner(None, use_jax=False) as r:
        yield r


def _case(build, shapes, dtype="float32", seed=0) -> Case:
    b = ProgramBuilder()
    refs = [b.input(s, dtype) for s in shapes]
    program = b.build(build(b, *refs))
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return Case(program, inputs, ("cpu-loops", "cpu-blas-unfused"))


CASES = {
    "softmax": lambda: _case(lambda b, x: b.node("softmax", b.node("exp", x)), [(3, 5)]),
    "layer_norm": lambda: _case(
        lambda b, x, g, h: b.node("layer_norm", x, g, h), [(4, 6), (6,), (6,)], "float64"
    ),
    "batched": lambda: _case(lambda b, x, y: b.node("matmul", x, y), [(3, 2, 5), (3, 5, 4)]),
    "attention": lambda: _case(
        lambda b, x, w, c, o, p: b.node("attention", x, w, c, o, p, heads=3),
        [(5, 6), (6, 18), (18,), (6, 6), (6,)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_relations_hold(name: str, runner: Runner) -> None:
    case = CASES[name]()
    fitting = tuple(r.name for r in relations() if r.fits(case))
    assert fitting, "at least one relation fits"
    judgement = runner.evaluate(case, fitting + ("determinism",))
    assert judgement.findings == [], [f.detail for f in judgement.findings]


def test_structural_relations_fit_where_expected() -> None:
    names = {name: {r.relation for r in relations() if r.fits(CASES[name]())} for name in CASES}
    assert "softmax-shift" in names["softmax"]
    assert "layer-norm-shift" in names["layer_norm"]
    assert "batch-split" in names["batched"]
    assert "head-permutation" in names["attention"]
    assert "transpose-roundtrip" in names["batched"]


def test_head_permutation_only_where_the_weights_feed_attention_alone() -> None:
    """Permuted weights that the program also reads elsewhere change its output: no relation
    there (the iree-cpu campaign found ``attention(x, w, c, o, p)`` next to ``o < p``)."""
    shapes = [(5, 6), (6, 18), (18,), (6, 6), (6,)]

    def fitting(case: Case) -> set[str]:
        return {r.relation for r in relations() if r.fits(case)}

    def elsewhere(b, x, w, c, o, p):
        return b.node("matmul", b.node("attention", x, w, c, o, p, heads=3), o)

    assert "head-permutation" not in fitting(_case(elsewhere, shapes))
    assert "head-permutation" not in fitting(
        _case(lambda b, x, w, c, o, p: b.node("attention", o, w, c, o, p, heads=3), shapes)
    )
    # Only the bias the relation leaves alone is read again: it still fits.
    assert "head-permutation" in fitting(
        _case(
            lambda b, x, w, c, o, p: b.node("add", b.node("attention", x, w, c, o, p, heads=3), p),
            shapes,
        )
    )


def test_layer_norm_shift_bound_covers_the_shift_rounding(runner: Runner) -> None:
    """A clean-compiler finding of a session (seed 9002): float64 layer norm of rows with a
    small spread, shifted by 64; x + 64 rounds, and which element NumPy happens to get right
    is luck, so the relation's bound takes each reference's largest error on the derived case."""
    import json
    from pathlib import Path

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "layer_norm_shift_case.json").read_text()
    )
    case = Case.from_dict(data)
    judgement = runner.evaluate(case, ("metamorphic:layer-norm-shift",))
    assert "metamorphic:layer-norm-shift" in judgement.oracles
    assert judgement.findings == [], [f.detail for f in judgement.findings]


def test_softmax_shift_bound_takes_the_perturbed_runs_of_the_derived_case(runner) -> None:
    """A clean-compiler session (seed 1302): a float64 softmax (of sqrt of int32 values)
    shifted by 800 feeds a linear with weights near +-100, which amplifies the shift's rounding;
    cpu-loops and cpu-vector were 300 ulps off, NumPy's largest error on the derived case was
    luckily a tenth of that. The derived case's perturbed evaluations now bound it too."""
    import json
    from pathlib import Path

    data = json.loads(
        (Path(__file__).parent / "fixtures" / "softmax_shift_linear_case.json").read_text()
    )
    case = Case.from_dict(data)
    assert case.program.ops == ("abs", "sqrt", "softmax", "linear")
    judgement = runner.evaluate(case, ("metamorphic:softmax-shift",))
    assert "metamorphic:softmax-shift" in judgement.oracles
    assert judgement.findings == [], [f.detail for f in judgement.findings]


def test_a_shift_that_rounds_a_spread_away_may_turn_inf_into_nan(runner) -> None:
    """The README's 60 s session on the clean compiler: a float64 layer norm with gain -inf of
    a row [-8.1e-45, 3.9e-130]. Shifted by 64 the row is [64, 64], so (x - mean) is exactly 0
    and 0 * -inf is nan, where the original row gives inf: every correct evaluation of the
    derived program says nan there, so the relation accepts it."""
    import json
    from pathlib import Path

    data = json.loads(
        (
            Path(__file__).parent / "fixtures" / "layer_norm_shift_infinite_gain_case.json"
        ).read_text()
    )
    case = Case.from_dict(data)
    assert case.program.ops == ("layer_norm",) and np.isinf(case.inputs[1]).all()
    judgement = runner.evaluate(case, ("metamorphic:layer-norm-shift",))
    assert "metamorphic:layer-norm-shift" in judgement.oracles
    assert judgement.findings == [], [f.detail for f in judgement.findings]


def test_a_roundtrip_keeps_values_not_the_sign_of_a_nan() -> None:
    """A clean-compiler finding (a held-out run's other finding, seed 1): a bfloat16 layer norm
    of rows of inf with an infinite gain is NaN everywhere on ``cpu`` (LLVM -O2), 0x7FC00000 in
    one column and 0xFFC00000 once transposed twice. A NaN's sign and payload are no NumPy
    semantics, so the roundtrip relation accepts it; a zero of another sign it does not."""
    import json
    from pathlib import Path

    from harness.oracles.base import Judgement, Observation
    from harness.oracles.metamorphic import Relation, transpose_roundtrip
    from harness.run.task import BackendResult

    path = Path(__file__).parent / "fixtures" / "transpose_roundtrip_nan_signs_case.json"
    case = Case.from_dict(json.loads(path.read_text()))
    (related,) = transpose_roundtrip(case)
    assert related.mode == "equal"
    nan = np.full((4, 4), np.nan, np.float32)
    flipped = nan.copy()
    flipped[:, 1] = -np.nan
    obs = Observation(case, [], {}, Judgement(), lambda other: {})
    result = BackendResult("cpu", "ok", output=flipped)
    assert Relation._check(related, obs, result, nan, {}) == ""
    zeros = np.zeros((4, 4), np.float32)
    signed = np.where(np.eye(4, dtype=bool), np.float32(-0.0), zeros)
    result = BackendResult("cpu", "ok", output=signed)
    assert Relation._check(related, obs, result, zeros, {}) == "output changed bits"
