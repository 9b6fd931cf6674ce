"""Shared setup of the compiler tests: import paths and a seeded random generator."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
# `compiler` lives at the repository root; `compiler_checks` (the shared helpers) lives here.
# Both are put on sys.path so plain `pytest` and any --import-mode find them.
for _path in (_ROOT, _HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test id: reproducible, and different for each case."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % 2**32
    return np.random.default_rng(seed)
