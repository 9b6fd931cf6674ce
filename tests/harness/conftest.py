"""Shared builders for the harness tests."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case
from strategies.model import ProgramBuilder


@pytest.fixture
def matmul_case() -> Case:
    """x (3, 5) @ w (5, 4), float32: rectangular so a transposed answer changes the shape."""
    b = ProgramBuilder()
    x = b.input((3, 5), "float32")
    w = b.input((5, 4), "float32")
    program = b.build(b.node("matmul", x, w))
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal((3, 5)).astype(np.float32),
        rng.standard_normal((5, 4)).astype(np.float32),
    ]
    return Case(program, inputs, ("cpu-loops", "cpu-blas"))
