"""The entries of the primitive table, in generation (and shrink) order.

An elementwise entry is complete on its own: its NumPy function gives the dtype rule, its scalar
lowering the MLIR body, and the frontend, program model, generator, references, error model and
report pick it up from here. Structural entries (reductions, layout, matmul, composites) also name
their result rule here; the frontend's trace rules build their graphs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import ops as composites
from ..dtypes import BFLOAT16, BOOL
from ..dtypes import source as dtype_source
from . import Attr, Primitive, contraction_depth, printed, register, results, scalar
from .results import compare_dtype
from .rules import ArrayType, normalize_axes

# --------------------------------------------------------------------------------------------
# Evaluation and printing


def _call(name: str):
    """``xp.name(args)``."""
    return printed(lambda args, attrs: f"xp.{name}({', '.join(args)})")


def _infix(symbol: str):
    """``a <symbol> b`` (Python's operator, so reflected operators and scalars work)."""
    return printed(lambda args, attrs: f"{args[0]} {symbol} {args[1]}")


def _elementwise(
    name: str,
    kind: str,
    ufunc: Any,
    lowering: Any,
    *,
    infix: str = "",
    **meta: Any,
) -> Primitive:
    infer = {
        "unary": results.unary_infer,
        "binary": results.binary_infer,
        "compare": results.compare_infer,
    }[kind]
    evaluate, render = _infix(infix) if infix else _call(name)
    arity = 1 if kind == "unary" else 2
    return register(
        Primitive(
            name,
            kind,
            arity,
            infer(name, ufunc),
            evaluate,
            render,
            ufunc=ufunc,
            scalar=lowering,
            consts=meta.pop("consts", bool(infix)),
            call=name if infix else "",
            operand_dtypes=(
                (lambda ops, out: [compare_dtype(ops)] * 2) if kind == "compare" else None
            ),
            **meta,
        )
    )


def _depth_contraction(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
    """matmul: one step plus the rounding of a K-term sum."""
    a = types[0] if types else None
    return 1.0 + (contraction_depth(a.shape[-1]) if a is not None and a.shape else 0.0)


def _depth_reduction(factor: float):
    def depth(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
        shape = types[0].shape if types else ()
        axes = normalize_axes(attrs.get("axis"), len(shape), "reduction")
        count = math.prod(shape[a] for a in axes) if shape else 1
        return 1.0 + factor * contraction_depth(count)

    return depth


def _depth_composite(base: float, per_log: float, width_factor: int = 1):
    """A composite's error depth: ``base`` steps plus ``per_log`` per doubling of its width."""

    def depth(types: Sequence[ArrayType], attrs: Mapping[str, Any]) -> float:
        width = types[0].shape[-1] if types and types[0].shape else 1
        return 1.0 + base + per_log * contraction_depth(width_factor * width)

    return depth


# --------------------------------------------------------------------------------------------
# Printing helpers


def format_key(key: tuple[Any, ...]) -> str:
    """``key`` as Python subscript source: ``1:3, ..., None, ::2``."""

    def one(item: Any) -> str:
        if item is Ellipsis:
            return "..."
        if isinstance(item, slice):
            parts = ["" if p is None else str(p) for p in (item.start, item.stop, item.step)]
            return ":".join(parts[:2]) if item.step is None else ":".join(parts)
        return repr(item)

    return ", ".join(one(item) for item in key) if key else "()"


def _key_method(name: str, key: tuple[Any, ...]) -> str:
    """``key`` as the methods spelling writes it: where a slice of positive step runs to the end
    of the axis it is known to apply to (every item before it a slice or an int), its end is
    written ``len(x)`` (axis 0) or ``x.shape[j]``, which the traced value answers: the same
    subscript, through its shape's metadata."""
    items, plain = [], True
    for axis, item in enumerate(key):
        text = format_key((item,))
        if item is Ellipsis or item is None:
            plain = False
        elif plain and isinstance(item, slice) and item.stop is None:
            if item.step is None or (isinstance(item.step, int) and item.step > 0):
                end = f"len({name})" if axis == 0 else f"{name}.shape[{axis}]"
                start = "" if item.start is None else str(item.start)
                text = f"{start}:{end}" + ("" if item.step is None else f":{item.step}")
        items.append(text)
    return ", ".join(items) if key else "()"


def _axis_method(name: str, axis: Any) -> str:
    """An axis attribute as the methods spelling writes it: the last axis, -1, as
    ``x.ndim - 1`` (the same axis, through the traced value's rank, and out of range alike on
    a 0-d array: not -2, which ``x.ndim - 2`` brings into range on a vector); anything else as
    is."""
    if isinstance(axis, int) and not isinstance(axis, bool) and axis == -1:
        return f"{name}.ndim - 1"
    if isinstance(axis, tuple) and axis:
        parts = [_axis_method(name, a) for a in axis]
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    return repr(axis)


def _reshape_method(name: str, shape: Sequence[Any]) -> str:
    """A reshape's target as the methods spelling writes it (``_sequence``'s forms): its one
    inferred extent (-1) as ``x.size // n``, the product of the others, or ``x.size`` alone
    (NumPy infers that extent; a reshape that does not divide raises either way)."""
    known = [v for v in shape if v != -1]
    if list(shape).count(-1) != 1 or any(not isinstance(v, int) or v <= 0 for v in known):
        return _sequence(shape)
    product = int(np.prod(known)) if known else 1
    inferred = f"{name}.size" if product == 1 else f"{name}.size // {product}"
    return _sequence(shape, [inferred if v == -1 else str(v) for v in shape])


def _namespace_dtype(dtype: Any) -> str:
    """``dtype`` as the array namespace names it (``xp.float64``: the compiler's namespace,
    NumPy and ``jax.numpy`` all have these), so a cast in the array-API spelling reaches the
    namespace's own dtype objects (a namespace whose ``float64`` was int32 passed every case
    while casts named NumPy's); bfloat16, which NumPy lacks, as ``ml_dtypes.bfloat16``."""
    dtype = np.dtype(dtype)
    return dtype_source(dtype) if dtype == BFLOAT16 else f"xp.{dtype.name}"


def _kwargs(
    attrs: Mapping[str, Any],
    specs: Mapping[str, Attr],
    axis: Callable[[Any], str] = repr,
    dtype: Callable[[Any], str] = _namespace_dtype,
    names: Mapping[str, str] | None = None,
) -> str:
    """The keywords of ``attrs`` that differ from their default (an absent one does not), the
    axis written by ``axis``, a dtype by ``dtype``, each named as ``names`` says (else by its
    attribute's name)."""
    given = {k: attrs.get(k, spec.default) for k, spec in specs.items()}
    names = names or {}

    def value(k: str, v: Any) -> str:
        if k == "axis":
            return axis(v)
        return dtype(v) if specs[k].kind == "result_dtype" else repr(v)

    # Keywords outside the table (an invalid program's) are written as given, after the rest.
    extra = {k: v for k, v in attrs.items() if k not in specs}
    return "".join(
        f", {names.get(k, k)}={value(k, v)}" for k, v in given.items() if v != specs[k].default
    ) + "".join(f", {k}={v!r}" for k, v in extra.items())


def _method_kwargs(name: str, attrs: Mapping[str, Any], specs: Mapping[str, Attr]) -> str:
    """``_kwargs`` without its leading comma, the last axis as ``_axis_method`` writes it, a
    dtype as NumPy's (no ``xp`` in this spelling)."""
    return _kwargs(attrs, specs, lambda axis: _axis_method(name, axis), dtype_source)[2:]


_REDUCTION_ATTRS = {"axis": Attr("axis", None), "keepdims": Attr("bool", False)}
# initial: max's and min's starting value, in the result's dtype as NumPy converts it (2.5 is
# 2 for int32; NaN is a ValueError there): np.maximum(initial, max(x)), an element winning ties
_STARTED = {"initial": Attr("initial", None, keyword=True)}


def _reduction(
    name: str,
    fn: Any,
    depth_factor: float,
    more: Mapping[str, Attr] | None = None,
    standard: Mapping[str, str] | None = None,
    **meta: Any,
) -> None:
    """A reduction's entry. ``standard``: the keywords the array API standard names otherwise
    (``ddof`` is its ``correction``), so written in the array-api spelling; the numpy spelling
    and the methods write NumPy's own names."""
    specs = {**_REDUCTION_ATTRS, **(more or {})}
    if standard:
        names = dict(standard)
        meta["numpy"] = lambda a, attrs: f"xp.{name}({a[0]}{_kwargs(attrs, specs)})"
    else:
        names = {}
    register(
        Primitive(
            name,
            "reduction",
            1,
            results.reduction_infer(name, fn),
            *printed(lambda a, attrs: f"xp.{name}({a[0]}{_kwargs(attrs, specs, names=names)})"),
            method=lambda a, attrs: f"{a[0]}.{name}({_method_kwargs(a[0], attrs, specs)})",
            attrs=specs,
            ufunc=fn,
            error_depth=_depth_reduction(depth_factor),
            **meta,
        )
    )


def _swaps_last_two(axes: Sequence[int]) -> bool:
    n = len(axes)
    return n >= 2 and tuple(axes) == (*range(n - 2), n - 1, n - 2)


def _aliased(name: str, alias: str) -> Any:
    """The "numpy" spelling of reduction ``name``: NumPy's ``alias`` where an axis is given."""

    specs = {**_REDUCTION_ATTRS, **_STARTED}

    def render(a: Sequence[str], attrs: Mapping[str, Any]) -> str:
        called = alias if attrs.get("axis") is not None else name
        return f"xp.{called}({a[0]}{_kwargs(attrs, specs)})"

    return render


def _composite(name: str, arity: int, infer: Any, attrs: Mapping[str, Attr], depth: Any, **meta):
    getattr(composites, name)  # defined there
    keywords = tuple(attrs)

    def render(a: Sequence[str], values: Mapping[str, Any]) -> str:
        kw = "".join(f", {k}={values[k]!r}" for k in keywords)
        return f"ops.{name}({', '.join(a)}{kw})"

    register(
        Primitive(
            name,
            "composite",
            arity,
            infer,
            *printed(render),
            attrs=attrs,
            float_only=True,
            error_depth=depth,
            cost=1,
            **meta,
        )
    )


_LAYOUT = {"keeps": "values"}


def _sequence(values: Sequence[int], shown: Sequence[str] | None = None) -> str:
    """A method's sequence argument in one of the three forms NumPy takes, ``x.reshape(2, 3)``,
    ``x.reshape((2, 3))`` or ``x.reshape([2, 3])``, chosen by the first two values' sum modulo
    3 so that programs use each, rank-3 permutations too (each form is its own path in the
    frontend: with only the first printed,
    a frontend that mistook ``x.transpose((1, 0))`` went unseen, and with two, one that took
    ``x.transpose([1, 0, 2])`` for one axis); empty, the tuple ``()``. The choice is the
    values' alone: evaluation prints the call with placeholder names, and must print what the
    reproducer prints. ``shown``: each value's text, where it is not the value itself."""
    if not values:
        return "()"
    listed = ", ".join(map(str, values) if shown is None else shown)
    form = sum(values[:2]) % 3
    if form == 1:
        return f"({listed}{',' if len(values) == 1 else ''})"
    return f"[{listed}]" if form == 2 else listed


# --------------------------------------------------------------------------------------------
# The table, in generation order (the generator's shrinker prefers earlier entries)

_elementwise(
    "add", "binary", np.add, scalar.op("arith.addf", "arith.addi"), infix="+", rounding="correct"
)
_elementwise(
    "multiply",
    "binary",
    np.multiply,
    scalar.op("arith.mulf", "arith.muli"),
    infix="*",
    rounding="correct",
)
_elementwise("negative", "unary", np.negative, scalar.negative, keeps="bounds")
_elementwise("exp", "unary", np.exp, scalar.op("math.exp"), result_range="nonnegative")
register(
    Primitive(
        "matmul",
        "matmul",
        2,
        results.matmul_infer,
        *_call("matmul"),
        ufunc=np.matmul,
        method=lambda a, attrs: f"{a[0]} @ {a[1]}",
        error_depth=_depth_contraction,
        doc="np.matmul: 1-D operands, 2-D, and broadcast batch dimensions of any rank",
    )
)
register(
    Primitive(
        "transpose",
        "layout",
        1,
        results.transpose_infer,
        *printed(lambda a, attrs: f"{a[0]}.T"),
        # ``none``: the axes written as None, NumPy's default spelled out (``np.transpose(x,
        # None)``, ``x.transpose(None)``), a form of its own in the frontend (a method that
        # took the None for a one-axis permutation went unseen while only ``x.transpose()``
        # was printed); printing alone reads it.
        numpy=lambda a, attrs: f"xp.transpose({a[0]}{', None' if attrs.get('none') else ''})",
        method=lambda a, attrs: f"{a[0]}.transpose({'None' if attrs.get('none') else ''})",
        attrs={"none": Attr("bool", False, form=True)},
        doc="x.T: all axes reversed",
        **_LAYOUT,
    )
)
# dtype: NumPy's accumulator and result dtype (np.sum(x, dtype=np.int32) sums modulo 2**32,
# np.mean(x, dtype=np.float16) sums and divides in float16, x cast to it first).
_ACCUMULATOR = {"dtype": Attr("result_dtype", None, keyword=True)}
# NumPy's other keywords, refused (the compiler computes no masked or seeded reduction); for
# var and std dtype= too (NumPy's accumulates the mean and the squares in it, each of its own).
_MASKED = {"where": (True,)}
_SEEDED = {"initial": (0, 1, -3), **_MASKED}
_reduction("sum", np.sum, 1.0, _ACCUMULATOR, refused=_SEEDED)
_elementwise(
    "subtract",
    "binary",
    np.subtract,
    scalar.op("arith.subf", "arith.subi"),
    infix="-",
    rounding="correct",
)
_elementwise(
    "abs",
    "unary",
    np.abs,
    scalar.op("math.absf", "math.absi"),
    result_range="nonnegative",
    keeps="bounds",
    method=lambda a, attrs: f"abs({a[0]})",
)
_elementwise("tanh", "unary", np.tanh, scalar.op("math.tanh"), result_range="bounded")
_elementwise(
    "maximum",
    "binary",
    np.maximum,
    scalar.extremum("arith.maximumf", "arith.maxsi"),
    keeps="bounds",
)
_elementwise(
    "minimum",
    "binary",
    np.minimum,
    scalar.extremum("arith.minimumf", "arith.minsi"),
    keeps="bounds",
)
register(
    Primitive(
        "permute_dims",
        "layout",
        1,
        results.permute_infer,
        *printed(lambda a, attrs: f"xp.permute_dims({a[0]}, {attrs['axes']!r})"),
        # x.transpose() reverses every axis: an empty permutation is passed as one; a swap of
        # the last two axes of three or more is x.mT (NumPy 2's matrix transpose), a matrix's
        # transpose the list form (rank-3 permutations are mostly a swap of the last two, so
        # ``_sequence``'s list was in 3 of 1500 default cases)
        method=lambda a, attrs: (
            f"{a[0]}.transpose([1, 0])"
            if tuple(attrs["axes"]) == (1, 0)
            else (
                f"{a[0]}.mT"
                if _swaps_last_two(attrs["axes"])
                else f"{a[0]}.transpose({_sequence(attrs['axes'])})"
            )
        ),
        attrs={"axes": Attr("axes")},
        **_LAYOUT,
    )
)
register(
    Primitive(
        "reshape",
        "layout",
        1,
        results.reshape_infer,
        *printed(lambda a, attrs: f"xp.reshape({a[0]}, {attrs['shape']!r})"),
        method=lambda a, attrs: f"{a[0]}.reshape({_reshape_method(a[0], attrs['shape'])})",
        attrs={"shape": Attr("shape")},
        **_LAYOUT,
    )
)
register(
    Primitive(
        "index",
        "layout",
        1,
        results.index_infer,
        *printed(lambda a, attrs: f"{a[0]}[{format_key(attrs['key'])}]"),
        method=lambda a, attrs: f"{a[0]}[{_key_method(a[0], attrs['key'])}]",
        attrs={"key": Attr("index")},
        doc="static basic indexing: slices (positive steps), ints, None and Ellipsis",
        **_LAYOUT,
    )
)
# NumPy's other names for them, np.amax and np.amin, where an axis is given (np.max and np.min
# for whole-array reductions): the frontend dispatches both names.
_reduction("max", np.max, 1.0, _STARTED, keeps="bounds", numpy=_aliased("max", "amax"),
           refused=_MASKED)  # fmt: skip
_reduction("min", np.min, 1.0, _STARTED, keeps="bounds", numpy=_aliased("min", "amin"),
           refused=_MASKED)  # fmt: skip
_reduction("mean", np.mean, 1.0, _ACCUMULATOR, refused=_MASKED)
# ddof: NumPy divides the sum of squared deviations by max(n - ddof, 0) (inf or NaN at 0).
# The array API standard calls it ``correction``, which NumPy 2 takes too: the array-api
# spelling writes that, the others ``ddof`` (each keyword its own path in a frontend).
# (mean=, NumPy's precomputed mean, an array: refused, never drawn)
_WIDENED = {"dtype": ("float64",), "mean": (), **_MASKED}
_CORRECTION = {"ddof": "correction"}
_reduction("var", np.var, 2.0, {"ddof": Attr("count", 0)}, _CORRECTION, refused=_WIDENED)
# NumPy's std: the square root of var
_reduction("std", np.std, 2.0, {"ddof": Attr("count", 0)}, _CORRECTION, refused=_WIDENED)
register(
    Primitive(
        "astype",
        "cast",
        1,
        results.astype_infer,
        *printed(lambda a, attrs: f"xp.astype({a[0]}, {_namespace_dtype(attrs['dtype'])})"),
        method=lambda a, attrs: f"{a[0]}.astype({dtype_source(attrs['dtype'])})",
        attrs={"dtype": Attr("dtype")},
        scalar=scalar.cast,
        operand_dtypes=lambda ops, out: [np.dtype(ops[0].dtype)],
        keeps="values",
        rounding="correct",
        doc="x.astype(dtype) with NumPy's C-style conversions (float -> int truncates)",
    )
)
register(
    Primitive(
        "where",
        "select",
        3,
        results.where_infer,
        *_call("where"),
        ufunc=np.where,
        scalar=scalar.select,
        operand_dtypes=lambda ops, out: [BOOL, out.dtype, out.dtype],
        consts=True,
        cost=2,
        keeps="bounds",
        doc="np.where(condition, a, b): a nonzero condition selects a",
    )
)
for _name, _ufunc, _symbol, _float_predicate, _int_predicate in (
    ("greater", np.greater, ">", "ogt", "sgt"),
    ("less", np.less, "<", "olt", "slt"),
    ("greater_equal", np.greater_equal, ">=", "oge", "sge"),
    ("less_equal", np.less_equal, "<=", "ole", "sle"),
    ("equal", np.equal, "==", "oeq", "eq"),
    ("not_equal", np.not_equal, "!=", "une", "ne"),
):
    _elementwise(
        _name,
        "compare",
        _ufunc,
        scalar.predicate(_float_predicate, _int_predicate),
        infix=_symbol,
        cost=2,
    )
_elementwise(
    "divide", "binary", np.true_divide, scalar.op("arith.divf"), infix="/", rounding="correct"
)
# The array API's own name, ``xp.pow`` (NumPy 2's alias of np.power), is the "methods" spelling:
# no array method computes a power but ``**``, which the array-api spelling already writes.
_elementwise(
    "power",
    "binary",
    np.power,
    scalar.power,
    infix="**",
    method=lambda a, attrs: f"xp.pow({a[0]}, {a[1]})",
)
_elementwise("log", "unary", np.log, scalar.op("math.log"), domain="nonnegative", cost=2)
_elementwise(
    "sqrt",
    "unary",
    np.sqrt,
    scalar.op("math.sqrt"),
    domain="nonnegative",
    result_range="nonnegative",
    cost=2,
    rounding="correct",
)
_elementwise("sin", "unary", np.sin, scalar.op("math.sin"), result_range="bounded")
_elementwise("cos", "unary", np.cos, scalar.op("math.cos"), result_range="bounded")
register(
    Primitive(
        "unary_minus",
        "unary",
        1,
        results.unary_infer("negative", np.negative),
        *printed(lambda a, attrs: f"-{a[0]}"),
        ufunc=np.negative,
        scalar=scalar.negative,
        keeps="bounds",
        call="negative",
        doc="-x (the operator; the same lowering as negative)",
    )
)
register(
    Primitive(
        "causal_mask",
        "source",
        0,
        results.mask_infer,
        *printed(
            lambda a, attrs: f"ops.causal_mask({attrs['size']}, {dtype_source(attrs['dtype'])}, xp)"
        ),
        attrs={"size": Attr("positive"), "dtype": Attr("dtype")},
        float_only=True,
        cost=2,
        doc="(size, size) additive mask: 0 where column <= row, -inf above the diagonal",
    )
)
register(
    Primitive(
        "gather",
        "gather",
        2,
        results.gather_infer,
        *printed(lambda a, attrs: f"ops.gather({a[0]}, {a[1]})"),
        keeps="values",
        doc="table[ids] along axis 0 (an embedding lookup); out-of-range ids raise when run",
    )
)
_composite("gelu", 1, results.gelu_infer, {}, _depth_composite(6, 2))
_composite(
    "softmax",
    1,
    results.softmax_infer,
    {"axis": Attr("axis", -1)},
    _depth_composite(6, 2),
    result_range="nonnegative,bounded",
)
_composite("layer_norm", 3, results.layer_norm_infer, {}, _depth_composite(6, 2))
_composite("linear", 3, results.linear_infer, {}, _depth_composite(6, 2))
_composite(
    "attention", 5, results.attention_infer, {"heads": Attr("positive")}, _depth_composite(24, 4, 4)
)
_composite(
    "attend", 7, results.attend_infer, {"heads": Attr("positive")}, _depth_composite(24, 4, 4)
)
_composite("feedforward", 7, results.feedforward_infer, {}, _depth_composite(24, 4, 4))
register(
    Primitive(
        "broadcast_to",
        "copy",
        1,
        results.broadcast_to_infer,
        *printed(lambda a, attrs: f"xp.broadcast_to({a[0]}, {attrs['shape']!r})"),
        attrs={"shape": Attr("shape")},
        scalar=scalar.copy,
        operand_dtypes=lambda ops, out: [np.dtype(ops[0].dtype)],
        keeps="values",
        generate=False,
        doc="np.broadcast_to, materialized (later ops need a real buffer)",
    )
)
# NumPy's other transcendental ufuncs of the real line (and log2/log10/log1p of nonnegative
# inputs in the generator's guard: log1p is finite down to -1), each one math op, a libm function
# or an LLVM intrinsic in every lowering: expm1 and log1p are accurate where exp(x) - 1 and
# log(1 + x) cancel, the reason a user calls them (the CPU targets' ``libm`` stage keeps them so).
# Appended, so the entries above keep their generation order. The array API names two of them
# otherwise (NumPy 2 has both): the "methods" spelling writes ``xp.atan`` and ``xp.asinh``, as it
# writes ``xp.pow``.
for _name, _math, _meta in (
    ("expm1", "math.expm1", {}),
    ("log1p", "math.log1p", {"domain": "nonnegative"}),
    ("exp2", "math.exp2", {"result_range": "nonnegative"}),
    ("log2", "math.log2", {"domain": "nonnegative"}),
    ("log10", "math.log10", {"domain": "nonnegative"}),
    ("sinh", "math.sinh", {}),
    ("cosh", "math.cosh", {"result_range": "nonnegative"}),
    ("tan", "math.tan", {}),
    ("arctan", "math.atan", {"result_range": "bounded", "method": _call("atan")[1]}),
    ("arcsinh", "math.asinh", {"method": _call("asinh")[1]}),
    ("cbrt", "math.cbrt", {}),
):
    _elementwise(_name, "unary", getattr(np, _name), scalar.op(_math), **_meta)

__all__ = ["compare_dtype", "format_key"]
