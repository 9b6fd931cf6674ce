"""A fixed program used by hash, JSON and reproducer tests (changing it changes the hash)."""

from __future__ import annotations

import numpy as np

from strategies import Program, ProgramBuilder


def fixed_program() -> Program:
    """Touches constants (weak and strong), slicing, matmul, a composite, where and gather."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    w = b.input((3, 4), "float32")
    ids = b.input((5,), "int32", bound=2)
    t = b.node("permute_dims", x, axes=(1, 0))
    m = b.node("matmul", b.node("transpose", t), w)
    g = b.node("gelu", m)
    c = b.node("greater", g, 0.5)
    s = b.node("where", c, g, m)
    k = b.node("index", s, key=(slice(None), slice(1, None, 2), None))
    h = b.node("gather", k, ids)
    b.node("add", h, np.float64(2.0))
    r = b.node("sum", h, axis=(-1,), keepdims=True)
    return b.build(b.node("multiply", 3, r))
