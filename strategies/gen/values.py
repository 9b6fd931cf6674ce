"""Array values from named numeric regimes, for program inputs.

Each regime targets a known way kernels go wrong: ``large`` drives softmax near +-1e4 (a missing
max-subtraction overflows), ``tiny`` probes cancellation, ``constant_rows`` gives layer norm a
zero variance, ``mixed_sign`` exercises max/min/abs and comparisons. Values are finite unless
asked, float32-representable for float32 arrays, free of subnormals (flush-to-zero differences
are not bugs), and shrink toward simple numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..model import Input, Program

REGIMES = ("ordinary", "large", "tiny", "constant_rows", "mixed_sign")


def regimes() -> st.SearchStrategy[str]:
    """A regime name; shrinks toward ``ordinary``."""
    return st.sampled_from(REGIMES)


def _f(value: float, width: int) -> float:
    """``value`` rounded to the float width (bounds must be representable)."""
    return float(np.dtype(f"float{width}").type(value))


def _floats(lo: float, hi: float, width: int) -> st.SearchStrategy[float]:
    return st.floats(_f(lo, width), _f(hi, width), width=width, allow_subnormal=False)


def _either_sign(magnitude: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.tuples(st.booleans(), magnitude).map(lambda t: -t[1] if t[0] else t[1])


def elements(
    dtype: Any, regime: str = "ordinary", *, finite: bool = True
) -> st.SearchStrategy[Any]:
    """Scalar strategy for one element of ``dtype`` in ``regime``."""
    dt = np.dtype(dtype)
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; choose from {REGIMES}")
    if dt.kind == "f":
        width = 8 * dt.itemsize
        strategy = {
            "ordinary": _floats(-4.0, 4.0, width),
            "constant_rows": _floats(-4.0, 4.0, width),
            "large": _either_sign(_floats(1e3, 1e4, width)),
            "tiny": _either_sign(_floats(1e-8 if width >= 32 else 1e-4, 1e-4, width)),
            "mixed_sign": _either_sign(_floats(1e-2, 1e2, width)),
        }[regime]
        if not finite:
            strategy = strategy | st.sampled_from([np.nan, np.inf, -np.inf])
        return strategy
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = {
            "ordinary": (-8, 8),
            "constant_rows": (-8, 8),
            "large": (1000, 30000),
            "tiny": (-1, 1),
            "mixed_sign": (1, 8),
        }[regime]
        if regime in ("large", "mixed_sign"):
            strategy = _either_sign(st.integers(lo, hi))
        else:
            strategy = st.integers(lo, hi)
        if info.min == 0:
            strategy = strategy.map(abs)
        return strategy.map(lambda v: int(np.clip(v, info.min, info.max)))
    if dt.kind == "b":
        return st.booleans()
    raise TypeError(f"no element strategy for dtype {dt}")


@st.composite
def values(
    draw: st.DrawFn,
    shape: tuple[int, ...],
    dtype: Any,
    regime: str = "ordinary",
    *,
    finite: bool = True,
    bound: int | None = None,
) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` from ``regime``; ``bound`` gives ids in [0, bound)."""
    dt = np.dtype(dtype)
    if bound is not None:
        return draw(hnp.arrays(dt, shape, elements=st.integers(0, bound - 1), fill=st.nothing()))
    if regime == "constant_rows" and len(shape) >= 1:
        rows = draw(
            hnp.arrays(
                dt,
                (*shape[:-1], 1),
                elements=elements(dt, regime, finite=finite),
                fill=st.nothing(),
            )
        )
        return np.ascontiguousarray(np.broadcast_to(rows, shape))
    array = draw(
        hnp.arrays(dt, shape, elements=elements(dt, regime, finite=finite), fill=st.nothing())
    )
    if regime == "mixed_sign" and array.size >= 2 and dt.kind in "if":
        flat = array.reshape(-1)
        flat[0] = abs(flat[0])
        flat[-1] = -abs(flat[-1]) if flat[-1] != 0 else -1
    return array


@st.composite
def input_values(
    draw: st.DrawFn,
    inputs: Program | Sequence[Input],
    regime: str | None = None,
    *,
    finite: bool = True,
) -> tuple[np.ndarray, ...]:
    """Values for every input of a program (one regime for all; ids respect their bound)."""
    if isinstance(inputs, Program):
        inputs = inputs.inputs
    if regime is None:
        regime = draw(regimes())
    event(f"regime:{regime}")
    return tuple(
        draw(values(inp.shape, inp.dtype, regime, finite=finite, bound=inp.bound)) for inp in inputs
    )


__all__ = ["REGIMES", "elements", "input_values", "regimes", "values"]
