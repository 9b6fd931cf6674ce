"""Random valid programs, and (program, values) samples, drawn from the primitive table.

Generation grows a program one step at a time: draw the node count first (small), then per step
an op, a primary operand (usually the latest value, so the output depends on most nodes; else a
fresh input shaped for the op), and whatever else the op needs (broadcast partners, weights,
constants). Every choice shrinks toward fewer nodes, lower rank and smaller sides.

What the generator knows of an op comes from the compiler's primitive table: its kind picks the
maker, its result rule decides which dtypes it takes, and its metadata (cost, value domain and
range) guides the choices. An elementwise primitive added to the table is generated at once.

By default programs avoid the promotions where JAX and NumPy disagree (an int32 operand meeting a
float32 one, float results of int inputs), so a JAX oracle agrees with the model;
``implicit_int_to_float=True`` lifts that for NumPy-only oracles.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from compiler import primitives
from compiler.primitives.rules import ArrayType, broadcast_shapes
from compiler.primitives.rules import matmul_result_shape as matmul_shape

from ..model import (
    DTYPES,
    FLOAT_DTYPES,
    REJECTIONS,
    Const,
    Program,
    ProgramBuilder,
    Ref,
    TensorType,
)
from .shapes import (
    attention_configs,
    broadcastable_shapes,
    permutations,
    reductions,
    reshapes,
)
from .shapes import shapes as shapes_strategy
from .shapes import slices as slices_strategy
from .values import input_values, regimes


def _kind(*kinds: str) -> tuple[str, ...]:
    return tuple(p.name for p in primitives.of_kind(*kinds) if p.generate)


def generation_order() -> tuple[str, ...]:
    """Every generated op, in table order: the shrinker prefers ops earlier in it."""
    return tuple(name for name, p in primitives.PRIMITIVES.items() if p.generate)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return broadcast_shapes(*shapes)


@functools.cache
def _accepts(op: str, dtype: str) -> bool:
    """Does ``op``'s result rule accept ``dtype`` operands (float-only ops: floats only)?"""
    prim = primitives.get(op)
    if prim.float_only:
        return dtype in FLOAT_DTYPES
    if prim.kind not in ("unary", "binary", "compare", "reduction", "matmul", "select"):
        return True  # layout, casts, gathers: any dtype
    stand = ArrayType((2, 2), np.dtype(dtype))
    operands = [stand] * prim.arity
    if prim.kind == "select":
        operands = [ArrayType((2, 2), np.dtype(bool)), stand, stand]
    attrs = {k: a.default for k, a in prim.attrs.items()}
    try:
        prim.result(operands, attrs)
    except REJECTIONS:
        return False
    return True


@functools.cache
def _int_to_float(op: str) -> bool:
    """Does ``op`` give a float for int32 operands (NumPy float64, JAX float32)?"""
    prim = primitives.get(op)
    if prim.kind not in ("unary", "binary", "reduction") or not _accepts(op, "int32"):
        return False
    attrs = {k: a.default for k, a in prim.attrs.items()}
    result = prim.result([ArrayType((2, 2), np.dtype(np.int32))] * prim.arity, attrs)
    return result.dtype.kind == "f"


Shape = tuple[int, ...]


@dataclass(frozen=True)
class _Config:
    max_nodes: int
    min_nodes: int
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    max_rank: int
    max_side: int
    implicit: bool

    @property
    def floats(self) -> tuple[str, ...]:
        return tuple(d for d in self.dtypes if d in FLOAT_DTYPES)

    def compatible(self, a: str, b: str) -> bool:
        """May values of dtypes ``a`` and ``b`` meet in one op (NumPy and JAX agreeing)?"""
        if a == b or self.implicit:
            return True
        return {a, b} <= set(FLOAT_DTYPES) or {a, b} == {"int32", "float64"}

    def op_dtypes(self, op: str) -> tuple[str, ...]:
        if op == "astype" and len(self.dtypes) < 2:
            return ()
        floats_only = _int_to_float(op) and not self.implicit
        return tuple(
            d
            for d in self.dtypes
            if _accepts(op, d) and not (floats_only and d not in FLOAT_DTYPES)
        )


@dataclass
class _Value:
    ref: Ref
    type: TensorType
    nonneg: bool = False
    bounded: bool = False  # finite and moderate: safe to cast to int32

    @property
    def shape(self) -> Shape:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.ndim


@dataclass
class _Gen:
    draw: st.DrawFn
    cfg: _Config
    builder: ProgramBuilder = field(default_factory=ProgramBuilder)
    values: list[_Value] = field(default_factory=list)
    base: str = "float32"

    @property
    def budget(self) -> int:
        return self.cfg.max_nodes - len(self.builder.nodes)

    # ---- creating values

    def input(self, shape: Shape, dtype: str, *, bound: int | None = None) -> _Value:
        ref = self.builder.input(shape, dtype, bound=bound)
        value = _Value(ref, TensorType(tuple(shape), dtype), bounded=True)
        self.values.append(value)
        return value

    def node(
        self, op: str, *args: Any, nonneg: bool | None = None, bounded: bool | None = None,
        **attrs: Any,
    ) -> _Value:  # fmt: skip
        """Add ``op``; what is known of its values (non-negative, bounded) follows the
        primitive's range metadata unless given."""
        refs = [a.ref if isinstance(a, _Value) else a for a in args]
        ref = self.builder.node(op, *refs, **attrs)
        prim = primitives.get(op)
        tensors = [a for a in args if isinstance(a, _Value) and a.dtype != "bool"]
        if nonneg is None:
            nonneg = "nonnegative" in prim.result_range or (
                prim.keeps == "values" and bool(tensors) and tensors[0].nonneg
            )
        if bounded is None:
            if prim.keeps == "values":
                bounded = bool(tensors) and tensors[0].bounded
            elif prim.keeps == "bounds":
                bounded = all(v.bounded for v in tensors)
            bounded = bounded or "bounded" in prim.result_range
        value = _Value(ref, self.builder.nodes[ref.index].type, nonneg, bool(bounded))
        if value.dtype != "bool":
            self.values.append(value)
        event(f"op:{op}")
        return value

    # ---- drawing

    def shape(self, *, min_dims: int = 1, max_dims: int | None = None, ones: bool = False) -> Shape:
        max_dims = self.cfg.max_rank if max_dims is None else min(max_dims, self.cfg.max_rank)
        return self.draw(
            shapes_strategy(
                min_dims=min_dims,
                max_dims=max(min_dims, max_dims),
                max_side=self.cfg.max_side,
                ones=ones,
            )
        )

    def side(self, avoid: Iterable[int] = ()) -> int:
        """A new dimension size, distinct from ``avoid`` when possible."""
        all_sides = list(range(2, self.cfg.max_side + 1))
        return self.draw(
            st.sampled_from([s for s in all_sides if s not in set(avoid)] or all_sides)
        )

    def dtype(self, allowed: Sequence[str]) -> str:
        ordered = sorted(allowed, key=lambda d: d != self.base)
        return self.draw(st.sampled_from(ordered))

    def pick(self, ok: Callable[[_Value], bool], fresh: Callable[[], _Value]) -> _Value:
        """Usually a recent value passing ``ok``, else ``fresh()``. Shrinks toward ``fresh()``:
        an operand that is a new input cuts the dependency on earlier steps, which then become
        dead code, so shrunk programs lose whole chains."""
        candidates = [v for v in reversed(self.values) if v.dtype != "bool" and ok(v)][:4]
        if candidates and self.draw(st.integers(0, 7)) != 0:
            return candidates[self.draw(st.integers(0, len(candidates) - 1))]
        return fresh()

    def primary(
        self, op: str, ok: Callable[[_Value], bool] = lambda v: True, **shape_kw: Any
    ) -> _Value:
        allowed = self.cfg.op_dtypes(op)

        def fresh() -> _Value:
            # Now and then size-1 sides on purpose, for a partner to broadcast against.
            ones = shape_kw.pop("ones", self.draw(st.integers(0, 7)) == 7)
            return self.input(self.shape(ones=ones, **shape_kw), self.dtype(allowed))

        return self.pick(lambda v: v.dtype in allowed and ok(v), fresh)

    def partner_shape(self, shape: Shape) -> Shape:
        """Same shape, or one that broadcasts against ``shape`` (labelled by pattern)."""
        if not self.draw(st.booleans()):
            event("broadcast:same")
            return shape
        other = self.draw(
            broadcastable_shapes(shape, max_dims=self.cfg.max_rank, max_side=self.cfg.max_side)
        )
        result = broadcast(shape, other)
        if result != shape:
            event("broadcast:expands")
        elif len(other) < len(shape):
            event("broadcast:lower-rank")
        elif other != shape:
            event("broadcast:size-one")
        else:
            event("broadcast:same")
        return other

    def partner(
        self, p: _Value, op: str, *, consts: bool, shape: Shape | None = None
    ) -> _Value | Const:
        """Second operand for ``op`` next to ``p``: fresh input, constant or existing value."""
        target = p.shape if shape is None else shape
        allowed = [d for d in self.cfg.op_dtypes(op) if self.cfg.compatible(d, p.dtype)]
        kinds = ["fresh", "const", "existing"] if consts else ["fresh", "existing"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "const":
            return self.const(p.dtype, op)
        if kind == "existing":

            def fits(v: _Value) -> bool:
                try:
                    return (
                        v.dtype in allowed and len(broadcast(target, v.shape)) <= self.cfg.max_rank
                    )
                except ValueError:
                    return False

            candidates = [v for v in reversed(self.values) if v.dtype != "bool" and fits(v)][:4]
            if candidates:
                event("operand:reused")
                return candidates[self.draw(st.integers(0, len(candidates) - 1))]
        dtype = p.dtype if p.dtype in allowed else allowed[0]
        dtype = self.draw(st.sampled_from(sorted(allowed, key=lambda d: d != dtype)))
        return self.input(self.partner_shape(target), dtype)

    def const(self, dtype: str, op: str) -> Const:
        """A weak (Python) or strong (NumPy) scalar; strong ones only where JAX agrees."""
        if op in ("greater", "less", "greater_equal", "less_equal", "equal", "not_equal"):
            choices: list[int | float] = [0.0, 0.5, -1.0, 0, 2]
        else:
            choices = [2.0, 0.5, -1.5, 3.0, 2, -3]
        value = self.draw(st.sampled_from(choices))
        strong = [d for d in DTYPES if self.cfg.compatible(d, dtype)]
        if isinstance(value, float):
            strong = [d for d in strong if d in FLOAT_DTYPES]
        if strong and self.draw(st.booleans()):
            const_dtype = self.draw(st.sampled_from(strong))
            event("const:strong")
            return Const(value, const_dtype)
        event("const:weak")
        return Const(value)

    def ordered(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``(a, b)`` or, when drawn, ``(b, a)`` (reflected operators, swapped matmul sides)."""
        return (b, a) if self.draw(st.booleans()) else (a, b)


# --------------------------------------------------------------------------------------------
# One maker per kind; each adds the op's node (plus at most cost - 1 helper nodes)


def _unary(g: _Gen, op: str) -> None:
    p = g.primary(op)
    if primitives.get(op).domain == "nonnegative" and not p.nonneg and "abs" in g.cfg.ops:
        p = g.node("abs", p)
    g.node(op, p)


def _binary(g: _Gen, op: str) -> None:
    p = g.primary(op)
    if op == "power":
        kind = g.draw(st.sampled_from(["exponent", "base"]))
        if kind == "base":
            g.node(op, Const(g.draw(st.sampled_from([2.0, 0.5]))), p)
            return
        exponents: list[int | float] = [2, 3, 2.0, -1.0]
        if p.nonneg:
            exponents.append(0.5)
        g.node(op, p, Const(g.draw(st.sampled_from(exponents))))
        return
    q = g.partner(p, op, consts=primitives.get(op).consts)
    a, b = g.ordered(p, q)
    g.node(op, a, b)


def _condition(g: _Gen, op: str) -> tuple[_Value, _Value]:
    p = g.primary(op)
    q = g.partner(p, op, consts=True)
    a, b = g.ordered(p, q)
    return g.node(op, a, b), p


def _where_on(g: _Gen, cond: _Value, p: _Value) -> None:
    shape = broadcast(cond.shape, p.shape)
    other = g.partner(p, "where", consts=False, shape=shape)
    assert not isinstance(other, Const)
    a, b = g.ordered(p, other)
    g.node("where", cond, a, b)


def _where(g: _Gen, op: str) -> None:
    comparisons = _kind("compare")
    allowed = [c for c in comparisons if c in g.cfg.ops] or list(comparisons)
    cond, p = _condition(g, g.draw(st.sampled_from(allowed)))
    _where_on(g, cond, p)


def _compare(g: _Gen, op: str) -> None:
    cond, p = _condition(g, op)
    if g.draw(st.booleans()):
        g.node(
            "astype", cond, dtype=g.draw(st.sampled_from(g.cfg.dtypes)), nonneg=True, bounded=True
        )
    else:
        _where_on(g, cond, p)


def _matmul(g: _Gen, op: str) -> None:
    p = g.primary(op, lambda v: v.ndim >= 1)
    # Structural choices first, shape-dependent ones last: when the shrinker lowers a rank, the
    # decisions drawn before it stay aligned with what they meant.
    p_right = g.draw(st.booleans())
    layout = [op for op in ("transpose", "permute_dims") if op in g.cfg.ops]
    # The classic layout bug: a transposed operand (k.T in attention, x @ w.T).
    transposed = bool(layout) and g.budget >= 2 and g.draw(st.integers(0, 3)) == 3
    layout_op = g.draw(st.sampled_from(layout)) if transposed else ""
    allowed = [d for d in g.cfg.dtypes if g.cfg.compatible(d, p.dtype)]

    def fits(v: _Value) -> bool:
        if v.ndim == 0 or v.dtype not in allowed:
            return False
        try:
            shape = matmul_shape(v.shape, p.shape) if p_right else matmul_shape(p.shape, v.shape)
        except ValueError:
            return False
        return len(shape) <= g.cfg.max_rank

    reuse = [v for v in reversed(g.values) if v.dtype != "bool" and fits(v)][:4]
    if reuse and not transposed and g.draw(st.integers(0, 3)) == 3:
        q = reuse[g.draw(st.integers(0, len(reuse) - 1))]
        event("operand:reused")
    else:
        dtype = g.draw(st.sampled_from(sorted(allowed, key=lambda d: d != p.dtype)))
        shape = _matmul_partner(g, p.shape, p_right, matrix=transposed)
        if transposed:
            q = g.input((*shape[:-2], shape[-1], shape[-2]), dtype)
            if layout_op == "transpose" and len(shape) == 2:
                q = g.node("transpose", q)
            else:
                axes = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
                q = g.node("permute_dims", q, axes=axes)
            event("matmul:transposed-operand")
        else:
            q = g.input(shape, dtype)
    a, b = (q, p) if p_right else (p, q)
    if a.ndim == 1 and b.ndim == 1:
        kind = "dot"
    elif a.ndim == 1 or b.ndim == 1:
        kind = "vec-mat" if a.ndim == 1 else "mat-vec"
    elif a.ndim == b.ndim == 2:
        kind = "2d"
    else:
        kind = "batched" if a.shape[:-2] == b.shape[:-2] else "broadcast-batch"
    event(f"matmul:{kind}")
    g.node("matmul", a, b)


def _matmul_partner(g: _Gen, shape: Shape, p_right: bool, *, matrix: bool = False) -> Shape:
    """The other operand's shape; ``matrix`` asks for at least two dimensions."""
    room = g.cfg.max_rank - 2
    kinds = ["matrix"] + ([] if matrix else ["vector"]) + (["batch"] if room >= 1 else [])
    kind = g.draw(st.sampled_from(kinds))
    k = (shape[-2] if len(shape) >= 2 else shape[0]) if p_right else shape[-1]
    if kind == "vector":
        return (k,)
    other = g.side(avoid=shape)
    if kind == "matrix":
        return (other, k) if p_right else (k, other)
    q_batch = g.draw(broadcastable_shapes(shape[:-2], min_dims=1, max_dims=room, max_side=3))
    return (*q_batch, other, k) if p_right else (*q_batch, k, other)


def _reduction(g: _Gen, op: str) -> None:
    p = g.primary(op)
    red = g.draw(reductions(p.shape))
    g.node(op, p, axis=red.axis, keepdims=red.keepdims)


def _layout(g: _Gen, op: str) -> None:
    if op == "transpose":
        p = g.primary(op, lambda v: v.ndim == 2, min_dims=2, max_dims=2)
        g.node(op, p)
    elif op == "permute_dims":
        p = g.primary(op, lambda v: v.ndim >= 2, min_dims=2)
        axes = g.draw(permutations(p.ndim))
        event(f"layout:permute{axes}")
        g.node(op, p, axes=axes)
    elif op == "reshape":
        p = g.primary(op)
        new = g.draw(reshapes(p.shape, max_dims=g.cfg.max_rank))
        event(f"layout:reshape-rank{len(p.shape)}to{len(new)}")
        g.node(op, p, shape=new)
    else:
        p = g.primary(op, lambda v: v.ndim >= 1)
        key = g.draw(slices_strategy(p.shape, max_dims=g.cfg.max_rank))
        g.node(op, p, key=key)


def _astype(g: _Gen, op: str) -> None:
    def targets(v: _Value) -> list[str]:
        return [
            d
            for d in g.cfg.dtypes
            if d != v.dtype and (d != "int32" or v.dtype == "int32" or v.bounded)
        ]

    p = g.primary(op, lambda v: bool(targets(v)))
    dtype = g.draw(st.sampled_from(targets(p)))
    event(f"cast:{p.dtype}->{dtype}")
    g.node(op, p, dtype=dtype)


def _causal_mask(g: _Gen, op: str) -> None:
    p = g.primary(op, lambda v: v.ndim >= 1)
    size = p.shape[-1]
    variants = ["matmul"]
    if (p.ndim == 1 and g.cfg.max_rank >= 2) or (p.ndim >= 2 and p.shape[-2] in (1, size)):
        variants.insert(0, "add")
    variant = g.draw(st.sampled_from(variants))
    dtypes = [d for d in g.cfg.floats if g.cfg.compatible(d, p.dtype)]
    dtype = g.draw(st.sampled_from(sorted(dtypes, key=lambda d: d != p.dtype)))
    mask = g.node("causal_mask", size=size, dtype=dtype)
    g.values.remove(mask)  # reused alone, it could leave an output that reads no input
    event(f"mask:{variant}")
    if variant == "add":
        g.node("add", *g.ordered(p, mask))
    else:
        g.node("matmul", p, mask)


def _gather(g: _Gen, op: str) -> None:
    p = g.primary(op, lambda v: 1 <= v.ndim <= g.cfg.max_rank)
    room = g.cfg.max_rank - p.ndim + 1
    ids_inputs = [
        Ref("input", i)
        for i, inp in enumerate(g.builder.inputs)
        if inp.bound is not None and inp.bound <= p.shape[0] and len(inp.shape) <= room
    ]
    if ids_inputs and g.draw(st.integers(0, 3)) == 3:
        ref = ids_inputs[g.draw(st.integers(0, len(ids_inputs) - 1))]
        inp = g.builder.inputs[ref.index]
        ids = _Value(ref, inp.type, nonneg=True, bounded=True)
    else:
        ids = g.input(g.shape(min_dims=1, max_dims=min(room, 2)), "int32", bound=p.shape[0])
    g.node(op, p, ids)


def _composite(g: _Gen, op: str) -> None:
    if op in ("attention", "attend"):
        p = g.pick(
            lambda v: v.dtype in g.cfg.floats and v.ndim == 2,
            lambda: _attention_input(g),
        )
        width = p.shape[1]
        divisors = [h for h in range(1, width + 1) if width % h == 0]
        heads = g.draw(st.sampled_from(sorted(divisors, key=lambda h: (h == 1 or h == width, h))))
        weights = [(width, 3 * width), (3 * width,), (width, width), (width,)]
        if op == "attend":
            weights = [(width,), (width,), *weights]
        args = [g.input(s, p.dtype) for s in weights]
        event(f"attention:heads={heads}")
        g.node(op, p, *args, heads=heads)
        return
    p = g.primary(op, lambda v: v.ndim >= 1 or op == "gelu")
    if op == "gelu":
        g.node(op, p)
    elif op == "softmax":
        axes = [-1, *(a for a in range(-p.ndim, p.ndim) if a != -1)]
        g.node(op, p, axis=g.draw(st.sampled_from(axes)))
    else:
        width = p.shape[-1]
        if op == "layer_norm":
            shapes: list[Shape] = [(width,), (width,)]
        elif op == "linear":
            hidden = g.side(avoid=p.shape)
            shapes = [(width, hidden), (hidden,)]
        else:
            hidden = g.side(avoid=p.shape)
            shapes = [(width,), (width,), (width, hidden), (hidden,), (hidden, width), (width,)]
        g.node(op, p, *(g.input(s, p.dtype) for s in shapes))


def _attention_input(g: _Gen) -> _Value:
    config = g.draw(attention_configs(max_length=max(g.cfg.max_side, 3), dtypes=g.cfg.floats))
    return g.input((config.length, config.width), config.dtype)


#: One maker per kind of primitive.
_MAKERS: dict[str, Callable[[_Gen, str], None]] = {
    "unary": _unary,
    "binary": _binary,
    "compare": _compare,
    "select": _where,
    "cast": _astype,
    "matmul": _matmul,
    "reduction": _reduction,
    "layout": _layout,
    "source": _causal_mask,
    "gather": _gather,
    "composite": _composite,
}


# --------------------------------------------------------------------------------------------
# Public strategies


def programs(
    *,
    max_nodes: int = 8,
    min_nodes: int = 1,
    ops: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    max_rank: int = 3,
    max_side: int = 6,
    implicit_int_to_float: bool = False,
) -> st.SearchStrategy[Program]:
    """Valid programs of at most ``max_nodes`` nodes, from at least ``min_nodes`` generation steps
    (dead-code removal can leave fewer nodes; raise ``min_nodes`` for bigger fuzzing programs,
    at the price of shrinking no further than that).

    ``ops`` limits the ops steps are drawn from (indispensable helpers may still appear: the
    comparison feeding a where, the where or astype consuming a comparison, the add or matmul
    consuming a causal mask); ``dtypes`` limits input and cast dtypes
    (promotion, e.g. GELU's float64 constant, can still produce float64)."""
    order_all = generation_order()
    op_list = tuple(order_all if ops is None else ops)
    unknown = set(op_list) - set(order_all)
    if unknown:
        raise ValueError(f"unknown ops {sorted(unknown)}; choose from {order_all}")
    dtype_list = tuple(DTYPES if dtypes is None else (np.dtype(d).name for d in dtypes))
    if set(dtype_list) - set(DTYPES) or not dtype_list:
        raise ValueError(f"dtypes must be a non-empty subset of {DTYPES}, got {dtype_list}")
    if not 1 <= min_nodes <= max_nodes or max_rank < 1 or max_side < 2:
        raise ValueError("need 1 <= min_nodes <= max_nodes, max_rank >= 1 and max_side >= 2")
    order = tuple(op for op in order_all if op in op_list)
    cfg = _Config(
        max_nodes, min_nodes, order, dtype_list, max_rank, max_side, implicit_int_to_float
    )
    if not any(primitives.get(op).cost <= max_nodes and cfg.op_dtypes(op) for op in order):
        raise ValueError(f"no op in {order} can be generated with dtypes {dtype_list}")
    return _programs(cfg)


_JOINS = ("add", "multiply", "subtract", "maximum", "minimum")


def _live(g: _Gen) -> set[int]:
    """Node indices the last node depends on."""
    nodes = g.builder.nodes
    live: set[int] = set()
    stack = [len(nodes) - 1]
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(a.index for a in nodes[i].args if isinstance(a, Ref) and a.kind == "node")
    return live


def _join_dead_branches(g: _Gen) -> None:
    """Fold branches the output does not read back into it (a step that needed a fresh input
    cuts everything before it off), while the node budget lasts; shrinks toward not joining."""
    joins = [op for op in _JOINS if op in g.cfg.ops]
    while joins and g.budget >= 1:
        live = _live(g)
        out = next(v for v in reversed(g.values) if v.ref == Ref("node", len(g.builder.nodes) - 1))
        dead = [
            v
            for v in reversed(g.values)
            if v.ref.kind == "node"
            and v.ref.index not in live
            and g.builder.nodes[v.ref.index].op != "causal_mask"
            and g.cfg.compatible(v.dtype, out.dtype)
        ]
        if not dead or not g.draw(st.booleans()):
            return
        branch = dead[0]
        try:
            fits = len(broadcast(out.shape, branch.shape)) <= g.cfg.max_rank
        except ValueError:
            fits = False
        if not fits:
            reducer = "max" if "max" in g.cfg.ops or branch.dtype == "int32" else "sum"
            if g.budget < 2:
                return
            branch = g.node(reducer, branch)
        event("join")
        g.node(g.draw(st.sampled_from(joins)), *g.ordered(out, branch))


@st.composite
def _step(draw: st.DrawFn, g: _Gen) -> str | None:
    """One generation step: an op and everything it needs (one span for the shrinker)."""
    g.draw = draw
    choices = [
        op for op in g.cfg.ops if primitives.get(op).cost <= g.budget and g.cfg.op_dtypes(op)
    ]
    if not choices:
        return None
    op = draw(st.sampled_from(choices))
    _MAKERS[primitives.get(op).kind](g, op)
    return op


@st.composite
def _programs(draw: st.DrawFn, cfg: _Config) -> Program:
    g = _Gen(draw, cfg)
    g.base = draw(st.sampled_from(cfg.dtypes))
    # The step count comes first, as a list: each step is one list element, so the shrinker can
    # delete any step (not just trailing ones) and programs shrink toward fewer nodes.
    draw(st.lists(_step(g), min_size=cfg.min_nodes, max_size=cfg.max_nodes))
    g.draw = draw
    _join_dead_branches(g)
    program, _ = g.builder.build().dead_code_eliminated().drop_unused_inputs()
    event(f"nodes:{len(program)}")
    event(f"output:rank{program.output_type.ndim}:{program.output_type.dtype}")
    for dtype in sorted(program.dtypes()):
        event(f"dtype:{dtype}")
    return program


class Sample(NamedTuple):
    """A program and one set of input values for it (drawn from one value regime)."""

    program: Program
    inputs: tuple[np.ndarray, ...]
    regime: str


@st.composite
def samples(
    draw: st.DrawFn,
    programs_strategy: st.SearchStrategy[Program] | None = None,
    *,
    regime: str | None = None,
    finite: bool = True,
) -> Sample:
    """(program, input values): values from one drawn regime unless ``regime`` is given."""
    program = draw(programs() if programs_strategy is None else programs_strategy)
    chosen = draw(regimes()) if regime is None else regime
    inputs = draw(input_values(program, chosen, finite=finite))
    return Sample(program, inputs, chosen)


__all__ = ["Sample", "generation_order", "programs", "samples"]
