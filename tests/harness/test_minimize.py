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
