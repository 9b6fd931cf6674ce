"""The keywords oracle: a case's reductions are traced once more with their keywords written
another way NumPy defines alike, so a frontend path one form takes is met by every case with a
reduction, not only by the rare case drawn in that form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import json_with

from harness.case import Case
from harness.oracles.keywords import Keywords, rewritten
from harness.selftest import Mutation
from strategies.model import ProgramBuilder


def _mean_case() -> Case:
    """A mean over the rows, kept as a column, plus a whole float16 sum's and mean's."""
    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    kept = b.node("mean", x, axis=1, keepdims=True)
    half = b.node("astype", x, dtype="float16")
    total = b.node("add", b.node("sum", half), b.node("mean", half, axis=-1))
    program = b.build(b.node("add", kept, b.node("astype", total, dtype="float32")))
    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    return Case(program, [values], ("cpu-loops@O0",))


def test_the_keywords_are_rewritten_as_numpy_defines_them_alike() -> None:
    program = _mean_case().program
    again = rewritten(program)
    rewrites = [(n.op, n.attrs) for n in again.nodes if n.op in ("sum", "mean", "index")]
    # axis=1 as (1,), None as every axis (negatives, reversed), -1 as (-1,); dtype= the default
    # result's, but for a float16 mean (NumPy's default sums it in float32); dropped axes kept,
    # then indexed away
    whole = slice(None)
    assert rewrites == [
        ("mean", {"axis": (1,), "keepdims": True, "dtype": "float32"}),
        ("sum", {"axis": (-1, -2), "keepdims": True, "dtype": "float16"}),
        ("index", {"key": (0, 0)}),
        ("mean", {"axis": (-1,), "keepdims": True, "dtype": None}),
        ("index", {"key": (whole, 0)}),
    ]
    assert again.output_type == program.output_type
    b = ProgramBuilder()
    assert rewritten(b.build(b.node("exp", b.input((2,), "float32")))) is None
    assert not Keywords().wants(Case(b.build(b.node("exp", b.input((2,), "float32"))),
                                     [np.ones(2, np.float32)], ("cpu-loops@O0",)))  # fmt: skip


def test_a_max_or_min_is_given_the_initial_that_changes_nothing() -> None:
    """Its dtype's end: an int32's, or -inf (inf) as NumPy converts 1e308 for a float narrower
    than float64; a float64's has no finite one, and a max given one keeps it."""
    b = ProgramBuilder()
    x, y, z = b.input((3, 4), "float32"), b.input((3,), "int32"), b.input((2,), "float64")
    given = b.node("max", b.input((2,), "float16"), initial=2)
    total = b.node("add", b.node("max", x, axis=1), b.node("min", y))
    total = b.node("add", b.node("add", total, b.node("max", z)), given)
    starts = [(n.op, n.attrs.get("initial")) for n in rewritten(b.build(total)).nodes]
    starts = [s for s in starts if s[0] in ("max", "min")]
    assert starts == [("max", 2), ("max", -1e308), ("min", 2**31 - 1), ("max", None)]
    values = np.array([-np.inf, -np.inf], np.float32)
    with np.errstate(over="ignore"):
        assert (
            np.max(values, initial=-1e308) == -np.inf
            and np.max(values, initial=-1e308).dtype == np.float32
        )


def test_a_clean_compiler_passes_with_the_keywords_rewritten() -> None:
    from harness.run.runner import Runner

    with Runner(None, use_jax=False) as runner:
        judgement = runner.evaluate(_mean_case())
    assert "keywords" in judgement.oracles
    assert not judgement.findings, [f.detail for f in judgement.findings]


_EVALUATE = """
import json
from harness.run.runner import Runner
from tests.harness.test_keywords_oracle import _mean_case

with Runner(None, use_jax=False) as runner:
    findings = runner.evaluate(_mean_case()).findings
print(json.dumps([[f.kind, f.backends, f.detail] for f in findings]))
"""


@pytest.mark.slow
def test_a_mean_that_drops_keepdims_given_dtype_is_found(tmp_path: Path) -> None:
    """A case drawn without dtype= passes every backend; its rewritten form gives the mean a
    dtype=, where a planted frontend dropped keepdims: found on the traced graph (from a mean
    drawn with keepdims, and from one without: rewritten, it keeps its axis too)."""
    mutation = Mutation(
        "mean-dtype-keepdims-dropped",
        "frontend/lang.py",
        '            total = reduce("sum", x, axes, keepdims, dtype=out.dtype)',
        '            total = reduce("sum", x, axes, dtype=out.dtype)',
        "mean with dtype= and keepdims=True loses the kept axes",
    )
    findings = json_with(mutation, tmp_path, _EVALUATE)
    assert [f[:2] for f in findings] == [["wrong-shape", ["graph-numpy"]]], findings
    assert "oracle keywords" in findings[0][2]
