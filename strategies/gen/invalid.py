"""Invalid programs: a random valid program plus exactly one labelled violation."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives

from ..model import (
    FLOAT_DTYPES,
    UNSUPPORTED_DTYPES,
    VIOLATIONS,
    Input,
    InvalidProgram,
    Program,
    ProgramBuilder,
    RawEquation,
    Ref,
    TensorType,
)
from ..model.program import numpy_result
from .programs import programs
from .shapes import shapes as shapes_strategy
from .shapes import uniform
from .state import generation_order


def _fresh_matrix(draw: st.DrawFn, b: ProgramBuilder, dtype: str) -> tuple[Ref, TensorType]:
    shape = draw(shapes_strategy(min_dims=2, max_dims=2))
    ref = b.input(shape, dtype)
    return ref, TensorType(shape, dtype)


def _reductions(dtype: str) -> list[str]:
    """The reductions a ``dtype`` operand takes (sum, mean, var and std of floats only)."""
    return ["max", "min"] + (["sum", "mean", "var", "std"] if dtype in FLOAT_DTYPES else [])


_REDUCTION_NAMES = ("max", "min", "sum", "mean", "var", "std")
#: The value an unknown keyword is given: NumPy refuses the keyword whatever its value.
_ANY_VALUE = 1


def _bad_side(draw: st.DrawFn, good: int, one: bool = False) -> int:
    """An extent other than ``good``; 1 too where ``one`` (not where 1 would broadcast)."""
    return uniform(draw, [s for s in range(1 if one else 2, 8) if s != good])


def _violate(
    draw: st.DrawFn, name: str, b: ProgramBuilder, ref: Ref, t: TensorType
) -> RawEquation | None:
    float_dtype = t.dtype if t.dtype in FLOAT_DTYPES else "float32"
    needs_a_dim = ("matmul_contraction", "not_a_permutation", "index_out_of_range", "empty_slice")
    if name in (*needs_a_dim, "repeated_axis", "zero_step", "broadcast_to_shape"):
        if t.ndim == 0:
            ref, t = _fresh_matrix(draw, b, t.dtype)
    if name in ("matmul_contraction", "matmul_0d") and t.dtype == "bool":
        ref, t = _fresh_matrix(draw, b, "float32")  # matmul of booleans: unsupported, not invalid
    if name == "matmul_contraction":
        p_right = draw(st.booleans())
        k = (t.shape[-2] if t.ndim >= 2 else t.shape[0]) if p_right else t.shape[-1]
        bad, other = _bad_side(draw, k, one=True), draw(st.integers(2, 6))
        shape = uniform(draw, [(bad,), (other, bad) if p_right else (bad, other)])
        q = b.input(shape, t.dtype)
        return RawEquation("matmul", (q, ref) if p_right else (ref, q), {})
    if name == "broadcast":
        dims = [i for i, d in enumerate(t.shape) if d >= 2]
        if not dims:
            ref, t = _fresh_matrix(draw, b, t.dtype)
            dims = [0, 1]
        i = uniform(draw, dims)
        shape = list(t.shape)
        shape[i] = _bad_side(draw, t.shape[i])
        q = b.input(shape, t.dtype)
        op = uniform(draw, ["add", "multiply", "subtract", "maximum", "minimum"])
        args = (q, ref) if draw(st.booleans()) else (ref, q)
        return RawEquation(op, args, {})
    if name == "reshape_size":
        size = t.size
        # as many shrinking as growing: a size check may be one-sided (``>`` for ``!=``)
        # and an unknown extent beside a zero, which no size fills (NumPy's ValueError: a rule
        # that divided by the known extents' product raised ZeroDivisionError)
        variant = uniform(draw, ["grow", "shrink", "factor", "minus_one", "zero_unknown"])
        if variant == "grow":
            new: tuple[int, ...] = (size + draw(st.integers(1, 3)),)
        elif variant == "shrink":  # one element short, half, or none at all
            smaller = uniform(draw, sorted({size - 1, size // 2, 0}))
            new = (smaller,) if draw(st.booleans()) else (1, smaller)
        elif variant == "factor":
            new = (2, size) if size > 1 else (2,)
        elif variant == "minus_one":
            new = (-1, size + 1)
        else:
            new = (0, -1) if draw(st.booleans()) else (-1, 0)
        return RawEquation("reshape", (ref,), {"shape": new})
    if name == "not_a_permutation":
        variant = uniform(draw, ["repeated", "short", "long", "out_of_range"])
        if variant == "repeated" and t.ndim < 2:
            # of a matrix at least: (0, 0) of a vector has the wrong length, so this variant
            # never reached a check for repeated axes
            ref, t = _fresh_matrix(draw, b, t.dtype)
        n = t.ndim
        if variant == "repeated":
            axes: tuple[int, ...] = (0, 0, *range(2, n))
        elif variant == "short":
            # Any number of axes fewer, all of them one time in three: x.transpose(()) of a
            # matrix taken for x.transpose() (every axis reversed) survived 60 s sessions
            # while only a vector's short permutation was empty.
            axes = () if draw(st.integers(0, 2)) == 2 else tuple(range(draw(st.integers(0, n - 1))))
        elif variant == "long":
            axes = tuple(range(n + 1))
        else:
            axes = (*range(n - 1), n)
        return RawEquation("permute_dims", (ref,), {"axes": axes})
    if name == "axis_out_of_range":
        ops = _reductions(t.dtype)
        op = uniform(draw, ops)
        # NumPy's ufunc reductions accept axis 0 and -1 on 0-d operands: skip those there.
        bads = [1, 2, -2] if t.ndim == 0 else [t.ndim, t.ndim + 1, -t.ndim - 1]
        bad = uniform(draw, bads)
        axis: int | tuple[int, ...] = (0, bad) if t.ndim >= 1 and draw(st.booleans()) else bad
        return RawEquation(op, (ref,), {"axis": axis, "keepdims": draw(st.booleans())})
    if name in ("index_out_of_range", "empty_slice"):
        i = draw(st.integers(0, t.ndim - 1))
        extent = t.shape[i]
        item: Any
        if name == "index_out_of_range":
            # just past either end four times in five (where a bound check is off by one)
            item = uniform(draw, [extent, -extent - 1, extent, -extent - 1, extent + 1])
        else:
            j = draw(st.integers(0, extent - 1))
            item = draw(
                st.sampled_from([slice(extent, None), slice(j, j), slice(j + 1, j), slice(-1, 0)])
            )
        key = (
            (Ellipsis, item)
            if i == t.ndim - 1 and draw(st.booleans())
            else (*[slice(None)] * i, item)
        )
        return RawEquation("index", (ref,), {"key": key})
    if name == "bool_operand":
        shape = t.shape or (2,)
        op = uniform(draw, _refused_on_bools())
        operands = [b.input(shape, "bool") for _ in range(primitives.get(op).arity)]
        return RawEquation(op, tuple(operands), {})
    if name == "reshape_unknowns":
        first, second = uniform(draw, [(-1, -1), (-1, -2), (-3, -1), (-2, -2)])
        middle = (t.size,) if draw(st.booleans()) else ()
        return RawEquation("reshape", (ref,), {"shape": (first, *middle, second)})
    if name == "repeated_axis":
        ops = _reductions(t.dtype)
        i = draw(st.integers(0, t.ndim - 1))
        again = uniform(draw, [i, i - t.ndim])  # the same axis, or its negative name
        axis = (i, again) if draw(st.booleans()) else (again, i)
        op = uniform(draw, ops)
        return RawEquation(op, (ref,), {"axis": axis, "keepdims": draw(st.booleans())})
    if name in ("unsupported_keyword", "unknown_keyword"):
        # From the table: a keyword the entry refuses, with a value NumPy takes; or one of
        # another reduction's keywords that NumPy's function lacks (a TypeError in NumPy).
        def refused(op: str) -> dict[str, tuple[Any, ...]]:
            return {k: v for k, v in primitives.get(op).refused.items() if v}

        def own(op: str) -> set[str]:
            prim = primitives.get(op)
            return {*prim.attrs, *prim.refused}

        every = {k for op in _REDUCTION_NAMES for k in own(op)}
        if name == "unsupported_keyword":
            choices = {op: refused(op) for op in _reductions(t.dtype)}
        else:
            choices = {
                op: {k: (_ANY_VALUE,) for k in sorted(every - own(op))}
                for op in _reductions(t.dtype)
            }
        op = uniform(draw, [op for op, keywords in choices.items() if keywords])
        keyword = uniform(draw, sorted(choices[op]))
        value = uniform(draw, choices[op][keyword])
        axis = None if t.ndim == 0 or draw(st.booleans()) else draw(st.integers(0, t.ndim - 1))
        attrs = {"axis": axis, "keepdims": draw(st.booleans()), keyword: value}
        event(f"violation:{name}:{op}({keyword}=)")
        return RawEquation(op, (ref,), attrs)
    if name == "attr_type":
        # NumPy takes an axis and keepdims through operator.index: a float, a string or a bool
        # (an axis) is a TypeError, even where it equals a valid value (1.0, True).
        op = uniform(draw, _reductions(t.dtype))
        if t.ndim and draw(st.booleans()):
            i = draw(st.integers(0, t.ndim - 1))
            axis = uniform(draw, [float(i), str(i), bool(i % 2), (float(i),)])
            return RawEquation(op, (ref,), {"axis": axis, "keepdims": draw(st.booleans())})
        # (not 0.0: equal to False, the default, it is never printed)
        keepdims = uniform(draw, [1.5, 1.0, -2.0, "yes", ""])
        return RawEquation(op, (ref,), {"axis": None, "keepdims": keepdims})
    if name == "broadcast_to_shape":
        # An extent of 1 under one of 2 or more, a third of the time (``(2, 1)`` to ``(1, 3)``):
        # refused only by comparing the broadcast shape with the target, which a rule checking
        # the rank alone skipped (drawn as any bad extent, 1 in 6 of the half that changed an
        # extent, it went unseen by 60 s sessions)
        variant = uniform(draw, ["extent", "one", "rank"])
        dims = [i for i, d in enumerate(t.shape) if d >= 2]
        if variant == "rank" or not dims:  # fewer dimensions than the operand (even of size 1)
            shape = tuple(t.shape[1:])
        else:
            i = uniform(draw, dims)
            bad = 1 if variant == "one" else _bad_side(draw, t.shape[i])
            shape = tuple(bad if j == i else d for j, d in enumerate(t.shape))
            shape = (*([draw(st.integers(1, 3))] if draw(st.booleans()) else []), *shape)
        return RawEquation("broadcast_to", (ref,), {"shape": shape})
    if name == "matmul_0d":
        q = b.input((), t.dtype)
        args = (q, ref) if draw(st.booleans()) else (ref, q)
        return RawEquation("matmul", args, {})
    if name == "zero_step":
        i = draw(st.integers(0, t.ndim - 1))
        item = slice(uniform(draw, [None, 0, 1]), None, 0)
        return RawEquation("index", (ref,), {"key": (*[slice(None)] * i, item)})
    if name == "too_many_indices":
        extra = draw(st.integers(1, 2))
        items = [uniform(draw, [0, -1, slice(None)]) for _ in range(t.ndim + extra)]
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), Ellipsis)  # counts as no index
        return RawEquation("index", (ref,), {"key": tuple(items)})
    if name == "two_ellipses":
        items: list[Any] = [Ellipsis, Ellipsis]
        if t.ndim >= 1 and draw(st.booleans()):
            items.insert(draw(st.integers(0, 2)), 0)
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), None)
        return RawEquation("index", (ref,), {"key": tuple(items)})
    if name == "heads_mismatch":
        width = draw(st.integers(3, 8))
        heads = uniform(draw, [h for h in range(2, width + 2) if width % h])
        length = uniform(draw, [s for s in range(2, 7) if s != width])
        shapes = [(length, width), (width, 3 * width), (3 * width,), (width, width), (width,)]
        refs = [b.input(s, float_dtype) for s in shapes]
        if draw(st.booleans()):
            gain, bias = b.input((width,), float_dtype), b.input((width,), float_dtype)
            return RawEquation("attend", (refs[0], gain, bias, *refs[1:]), {"heads": heads})
        return RawEquation("attention", tuple(refs), {"heads": heads})
    raise AssertionError(name)


@functools.cache
def _refused_on_bools() -> tuple[str, ...]:
    """The generated unary and binary ops NumPy refuses on booleans (``np.negative``,
    ``np.subtract``: its TypeError), from the primitive table."""
    found = []
    for op in generation_order():
        prim = primitives.get(op)
        if prim.kind not in ("unary", "binary"):
            continue
        stand = [TensorType((2, 2), "bool")] * prim.arity
        try:
            numpy_result(prim, stand, {k: a.default for k, a in prim.attrs.items()})
        except TypeError:
            found.append(op)
        except Exception:  # noqa: BLE001 - another rejection: not this violation's
            continue
    return tuple(found)


def _violation(draw: st.DrawFn, violations: Iterable[str] | None) -> str:
    """One of ``violations`` (any if None; a ValueError naming unknown ones), near uniformly."""
    names = tuple(VIOLATIONS if violations is None else violations)
    unknown = set(names) - set(VIOLATIONS)
    if unknown or not names:
        what = f"unknown violations {sorted(unknown)}" if unknown else "no violations"
        raise ValueError(f"{what}; choose from {tuple(VIOLATIONS)}")
    name = uniform(draw, names)
    event(f"violation:{name}")
    return name


@st.composite
def invalid_programs(
    draw: st.DrawFn, violations: Iterable[str] | None = None, *, max_nodes: int = 3
) -> InvalidProgram:
    """A valid program of up to ``max_nodes`` nodes plus exactly one violation, labelled."""
    name = _violation(draw, violations)
    return _violated(draw, draw(programs(max_nodes=max_nodes)), name)


@st.composite
def violations_of(
    draw: st.DrawFn, base: Program, violations: Iterable[str] | None = None
) -> InvalidProgram:
    """``base`` (a valid program) plus exactly one violation of ``violations``, labelled: an
    invalid program's siblings are its valid part with other violations (each is rejected
    before any MLIR is built, so a case judges three for little more than the cost of one)."""
    return _violated(draw, base, _violation(draw, violations))


def _violated(draw: st.DrawFn, base: Program, name: str) -> InvalidProgram:
    builder = ProgramBuilder.from_program(base)
    if name == "unsupported_dtype":
        i = draw(st.integers(0, len(base.inputs) - 1))
        dtype = uniform(draw, UNSUPPORTED_DTYPES)
        inputs = list(base.inputs)
        inputs[i] = Input(inputs[i].shape, dtype, inputs[i].bound)
        return InvalidProgram(base, name, None, tuple(inputs))
    node = _violate(draw, name, builder, base.output, base.output_type)
    program = builder.build(base.output)
    return InvalidProgram(program, name, node, program.inputs)


__all__ = ["invalid_programs", "violations_of"]
