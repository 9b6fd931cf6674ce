"""Random valid programs, (program, values) cases, and invalid programs with one violation.

Generation grows a program one step at a time: draw the node count first (small), then per step
an op, a primary operand (usually the latest value, so the output depends on most nodes; else a
fresh input shaped for the op), and whatever else the op needs (broadcast partners, weights,
constants). Every choice shrinks toward fewer nodes, lower rank and smaller sides.

By default programs avoid the promotions where JAX and NumPy disagree (an int32 operand meeting a
float32 one, true division or transcendental functions of ints, int mean/var), so a JAX oracle
agrees with the model; ``implicit_int_to_float=True`` lifts that for NumPy-only oracles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from .program import (
    ALL_OPS,
    DTYPES,
    FLOAT_DTYPES,
    Const,
    Input,
    Program,
    ProgramBuilder,
    RawNode,
    Ref,
    TensorType,
    _decode_arg,
    _decode_attr,
    _encode_arg,
    _encode_attr,
    _function,
    _python_source,
    broadcast,
    matmul_shape,
)
from .shape_strategies import (
    attention_configs,
    broadcastable_shapes,
    permutations,
    reductions,
    reshapes,
)
from .shape_strategies import shapes as shapes_strategy
from .shape_strategies import slices as slices_strategy
from .value_strategies import input_values, regimes

UNARY = ("negative", "abs", "exp", "tanh", "log", "sqrt", "unary_minus")
BINARY = ("add", "multiply", "subtract", "maximum", "minimum", "divide", "power")
COMPARISONS = ("greater", "less", "greater_equal", "less_equal", "equal", "not_equal")
REDUCTIONS = ("sum", "max", "min", "mean", "var")
LAYOUT = ("transpose", "permute_dims", "reshape", "index")
COMPOSITES = ("gelu", "softmax", "layer_norm", "linear", "attention", "attend", "feedforward")

#: Generation order is shrink order: the shrinker prefers ops earlier in this list.
GENERATION_ORDER: tuple[str, ...] = (
    "add",
    "multiply",
    "negative",
    "exp",
    "matmul",
    "transpose",
    "sum",
    "subtract",
    "abs",
    "tanh",
    "maximum",
    "minimum",
    "permute_dims",
    "reshape",
    "index",
    "max",
    "min",
    "mean",
    "var",
    "astype",
    "where",
    *COMPARISONS,
    "divide",
    "power",
    "log",
    "sqrt",
    "unary_minus",
    "causal_mask",
    "gather",
    *COMPOSITES,
)
assert sorted(GENERATION_ORDER) == sorted(ALL_OPS), set(ALL_OPS) ^ set(GENERATION_ORDER)

# Ops JAX promotes differently from NumPy when given int32 (NumPy: float64, JAX: float32).
_INT_TO_FLOAT = ("exp", "tanh", "log", "sqrt", "divide", "mean", "var")
# Ops the generator only applies to floats (int sum is int64; int power is unsupported).
_FLOAT_ONLY = ("sum", "power", "causal_mask", *COMPOSITES)
# Nodes a step may add beyond the op itself (abs before log/sqrt, comparison before where...).
_COST = {"log": 2, "sqrt": 2, "where": 2, "causal_mask": 2, **{c: 2 for c in COMPARISONS}}

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
        if op in _FLOAT_ONLY or (op in _INT_TO_FLOAT and not self.implicit):
            return self.floats
        if op == "astype" and len(self.dtypes) < 2:
            return ()
        return self.dtypes


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
        self, op: str, *args: Any, nonneg: bool = False, bounded: bool = False, **attrs: Any
    ) -> _Value:
        refs = [a.ref if isinstance(a, _Value) else a for a in args]
        ref = self.builder.node(op, *refs, **attrs)
        value = _Value(ref, self.builder.nodes[ref.index].type, nonneg, bounded)
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
# One maker per op; each adds the op's node (plus at most _COST - 1 helper nodes)


def _unary(g: _Gen, op: str) -> None:
    p = g.primary(op)
    if op in ("log", "sqrt") and not p.nonneg and "abs" in g.cfg.ops:
        p = g.node("abs", p, nonneg=True, bounded=p.bounded)
    keeps_bound = op in ("abs", "negative", "unary_minus") and p.bounded
    g.node(op, p, nonneg=op in ("abs", "exp", "sqrt"), bounded=keeps_bound or op == "tanh")


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
    q = g.partner(p, op, consts=op not in ("maximum", "minimum"))
    a, b = g.ordered(p, q)
    both_bounded = p.bounded and (isinstance(q, Const) or q.bounded)
    g.node(op, a, b, bounded=op in ("maximum", "minimum") and both_bounded)


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
    g.node("where", cond, a, b, bounded=p.bounded and other.bounded)


def _where(g: _Gen, op: str) -> None:
    allowed = [c for c in COMPARISONS if c in g.cfg.ops] or list(COMPARISONS)
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
    g.node(op, p, axis=red.axis, keepdims=red.keepdims, bounded=op in ("max", "min") and p.bounded)


def _layout(g: _Gen, op: str) -> None:
    if op == "transpose":
        p = g.primary(op, lambda v: v.ndim == 2, min_dims=2, max_dims=2)
        g.node(op, p, nonneg=p.nonneg, bounded=p.bounded)
    elif op == "permute_dims":
        p = g.primary(op, lambda v: v.ndim >= 2, min_dims=2)
        axes = g.draw(permutations(p.ndim))
        event(f"layout:permute{axes}")
        g.node(op, p, axes=axes, nonneg=p.nonneg, bounded=p.bounded)
    elif op == "reshape":
        p = g.primary(op)
        new = g.draw(reshapes(p.shape, max_dims=g.cfg.max_rank))
        event(f"layout:reshape-rank{len(p.shape)}to{len(new)}")
        g.node(op, p, shape=new, nonneg=p.nonneg, bounded=p.bounded)
    else:
        p = g.primary(op, lambda v: v.ndim >= 1)
        key = g.draw(slices_strategy(p.shape, max_dims=g.cfg.max_rank))
        g.node(op, p, key=key, nonneg=p.nonneg, bounded=p.bounded)


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
    g.node(op, p, dtype=dtype, nonneg=p.nonneg, bounded=p.bounded)


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
    g.node(op, p, ids, nonneg=p.nonneg, bounded=p.bounded)


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
        g.node(op, p, axis=g.draw(st.sampled_from(axes)), nonneg=True, bounded=True)
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


_MAKERS: dict[str, Callable[[_Gen, str], None]] = {
    **{op: _unary for op in UNARY},
    **{op: _binary for op in BINARY},
    **{op: _compare for op in COMPARISONS},
    **{op: _reduction for op in REDUCTIONS},
    **{op: _layout for op in LAYOUT},
    **{op: _composite for op in COMPOSITES},
    "where": _where,
    "matmul": _matmul,
    "astype": _astype,
    "causal_mask": _causal_mask,
    "gather": _gather,
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
    op_list = tuple(GENERATION_ORDER if ops is None else ops)
    unknown = set(op_list) - set(ALL_OPS)
    if unknown:
        raise ValueError(f"unknown ops {sorted(unknown)}; choose from {ALL_OPS}")
    dtype_list = tuple(DTYPES if dtypes is None else (np.dtype(d).name for d in dtypes))
    if set(dtype_list) - set(DTYPES) or not dtype_list:
        raise ValueError(f"dtypes must be a non-empty subset of {DTYPES}, got {dtype_list}")
    if not 1 <= min_nodes <= max_nodes or max_rank < 1 or max_side < 2:
        raise ValueError("need 1 <= min_nodes <= max_nodes, max_rank >= 1 and max_side >= 2")
    order = tuple(op for op in GENERATION_ORDER if op in op_list)
    cfg = _Config(
        max_nodes, min_nodes, order, dtype_list, max_rank, max_side, implicit_int_to_float
    )
    if not any(_COST.get(op, 1) <= max_nodes and cfg.op_dtypes(op) for op in order):
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
    choices = [op for op in g.cfg.ops if _COST.get(op, 1) <= g.budget and g.cfg.op_dtypes(op)]
    if not choices:
        return None
    op = draw(st.sampled_from(choices))
    _MAKERS[op](g, op)
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


class Case(NamedTuple):
    """A program and one set of input values for it."""

    program: Program
    inputs: tuple[np.ndarray, ...]
    regime: str


@st.composite
def cases(
    draw: st.DrawFn,
    programs_strategy: st.SearchStrategy[Program] | None = None,
    *,
    regime: str | None = None,
    finite: bool = True,
) -> Case:
    """(program, input values): values from one drawn regime unless ``regime`` is given."""
    program = draw(programs() if programs_strategy is None else programs_strategy)
    chosen = draw(regimes()) if regime is None else regime
    inputs = draw(input_values(program, chosen, finite=finite))
    return Case(program, inputs, chosen)


# --------------------------------------------------------------------------------------------
# Invalid programs


@dataclass(frozen=True)
class Violation:
    """One kind of invalid program: does NumPy reject it, and what a conforming compiler raises."""

    name: str
    description: str
    numpy_rejects: bool
    errors: tuple[type[BaseException], ...] = (ValueError, TypeError)


VIOLATIONS: dict[str, Violation] = {
    v.name: v
    for v in (
        Violation("matmul_contraction", "matmul whose contracted dimensions differ", True),
        Violation("broadcast", "elementwise op on shapes that do not broadcast", True),
        Violation("reshape_size", "reshape to a shape of a different size", True),
        Violation("not_a_permutation", "permute_dims with axes that are not a permutation", True),
        Violation("axis_out_of_range", "reduction over an axis the operand lacks", True),
        Violation("index_out_of_range", "integer index past the end of a dimension", True),
        # NumPy returns an empty array; the compiler has no zero-size arrays (UnsupportedFeature).
        Violation(
            "empty_slice",
            "slice selecting nothing",
            False,
            (ValueError, TypeError, NotImplementedError),
        ),
        # NumPy computes in any dtype; the compiler supports float32, float64 and int32 only.
        Violation("unsupported_dtype", "an input of a dtype the compiler does not support", False),
        Violation("heads_mismatch", "attention whose width is not divisible by heads", True),
    )
}
UNSUPPORTED_DTYPES = ("int64", "float16", "int16", "uint8")


@dataclass(frozen=True)
class InvalidProgram:
    """A valid ``program`` plus one violation: an unchecked ``node`` evaluated after it (its
    result is the function's result), or ``inputs`` whose dtypes differ from the program's."""

    program: Program
    violation: str
    node: RawNode | None
    inputs: tuple[Input, ...]

    @property
    def numpy_rejects(self) -> bool:
        """Does NumPy itself raise on this program?"""
        return VIOLATIONS[self.violation].numpy_rejects

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """Exception types a conforming compiler may raise for it."""
        return VIOLATIONS[self.violation].errors

    def as_function(self, namespace: Any = None) -> Callable[..., Any]:
        return _function(self.program, namespace, self.node)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the valid program's JSON plus the violation), for corpus files."""
        node = None
        if self.node is not None:
            node = {
                "op": self.node.op,
                "args": [_encode_arg(a) for a in self.node.args],
                "attrs": {k: _encode_attr(k, v) for k, v in self.node.attrs.items()},
            }
        return {
            "program": self.program.to_dict(),
            "violation": self.violation,
            "node": node,
            "inputs": [
                {"shape": list(i.shape), "dtype": i.dtype, "bound": i.bound} for i in self.inputs
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvalidProgram:
        if data.get("violation") not in VIOLATIONS:
            raise ValueError(f"unknown violation {data.get('violation')!r}")
        node = data.get("node")
        raw = None
        if node is not None:
            raw = RawNode(
                node["op"],
                tuple(_decode_arg(a) for a in node["args"]),
                {k: _decode_attr(k, v) for k, v in node.get("attrs", {}).items()},
            )
        inputs = tuple(Input(tuple(i["shape"]), i["dtype"], i.get("bound")) for i in data["inputs"])
        return cls(Program.from_dict(data["program"]), data["violation"], raw, inputs)

    def to_python(
        self,
        values: Sequence[np.ndarray] | None = None,
        *,
        check_compiler: bool = True,
        seed: int = 0,
    ) -> str:
        """A standalone snippet: reports whether NumPy rejects the program and asserts that
        ``compiler.jit`` does."""
        header = f"Invalid program ({self.violation}) built on {self.program.digest()[:12]}"
        return _python_source(
            self.program,
            self.node,
            values,
            self.inputs,
            check_compiler,
            None,
            None,
            seed,
            header=header,
            rejects=self.errors,
        )

    def __str__(self) -> str:
        text = str(self.program)
        if self.node is not None:
            args = ", ".join(str(a) for a in self.node.args)
            attrs = "".join(f", {k}={v!r}" for k, v in self.node.attrs.items())
            text += f"\n  invalid: {self.node.op}({args}{attrs})"
        changed = [
            f"x{i}: {a.dtype} (declared {b.dtype})"
            for i, (a, b) in enumerate(zip(self.inputs, self.program.inputs, strict=True))
            if a != b
        ]
        return text + "".join(f"\n  invalid input {c}" for c in changed) + f"\n  [{self.violation}]"


def _fresh_matrix(draw: st.DrawFn, b: ProgramBuilder, dtype: str) -> tuple[Ref, TensorType]:
    shape = draw(shapes_strategy(min_dims=2, max_dims=2))
    ref = b.input(shape, dtype)
    return ref, TensorType(shape, dtype)


def _bad_side(draw: st.DrawFn, good: int) -> int:
    return draw(st.sampled_from([s for s in range(2, 8) if s != good]))


def _violate(
    draw: st.DrawFn, name: str, b: ProgramBuilder, ref: Ref, t: TensorType
) -> RawNode | None:
    float_dtype = t.dtype if t.dtype in FLOAT_DTYPES else "float32"
    if name in ("matmul_contraction", "not_a_permutation", "index_out_of_range", "empty_slice"):
        if t.ndim == 0:
            ref, t = _fresh_matrix(draw, b, t.dtype)
    if name == "matmul_contraction":
        p_right = draw(st.booleans())
        k = (t.shape[-2] if t.ndim >= 2 else t.shape[0]) if p_right else t.shape[-1]
        bad, other = _bad_side(draw, k), draw(st.integers(2, 6))
        shape = draw(st.sampled_from([(bad,), (other, bad) if p_right else (bad, other)]))
        q = b.input(shape, t.dtype)
        return RawNode("matmul", (q, ref) if p_right else (ref, q), {})
    if name == "broadcast":
        dims = [i for i, d in enumerate(t.shape) if d >= 2]
        if not dims:
            ref, t = _fresh_matrix(draw, b, t.dtype)
            dims = [0, 1]
        i = draw(st.sampled_from(dims))
        shape = list(t.shape)
        shape[i] = _bad_side(draw, t.shape[i])
        q = b.input(shape, t.dtype)
        op = draw(st.sampled_from(["add", "multiply", "subtract", "maximum", "minimum"]))
        args = (q, ref) if draw(st.booleans()) else (ref, q)
        return RawNode(op, args, {})
    if name == "reshape_size":
        size = t.size
        variant = draw(st.sampled_from(["grow", "factor", "minus_one"]))
        if variant == "grow":
            new: tuple[int, ...] = (size + draw(st.integers(1, 3)),)
        elif variant == "factor":
            new = (2, size) if size > 1 else (2,)
        else:
            new = (-1, size + 1)
        return RawNode("reshape", (ref,), {"shape": new})
    if name == "not_a_permutation":
        n = t.ndim
        variant = draw(st.sampled_from(["repeated", "short", "long", "out_of_range"]))
        if variant == "repeated":
            axes: tuple[int, ...] = (0, 0, *range(2, n)) if n >= 2 else (0, 0)
        elif variant == "short":
            axes = tuple(range(n - 1))
        elif variant == "long":
            axes = tuple(range(n + 1))
        else:
            axes = (*range(n - 1), n)
        return RawNode("permute_dims", (ref,), {"axes": axes})
    if name == "axis_out_of_range":
        ops = ["max", "min"] + (["sum", "mean", "var"] if t.dtype in FLOAT_DTYPES else [])
        op = draw(st.sampled_from(ops))
        # NumPy's ufunc reductions accept axis 0 and -1 on 0-d operands: skip those there.
        bads = [1, 2, -2] if t.ndim == 0 else [t.ndim, t.ndim + 1, -t.ndim - 1]
        bad = draw(st.sampled_from(bads))
        axis: int | tuple[int, ...] = (0, bad) if t.ndim >= 1 and draw(st.booleans()) else bad
        return RawNode(op, (ref,), {"axis": axis, "keepdims": draw(st.booleans())})
    if name in ("index_out_of_range", "empty_slice"):
        i = draw(st.integers(0, t.ndim - 1))
        extent = t.shape[i]
        item: Any
        if name == "index_out_of_range":
            item = draw(st.sampled_from([extent, extent + 1, -extent - 1]))
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
        return RawNode("index", (ref,), {"key": key})
    if name == "heads_mismatch":
        width = draw(st.integers(3, 8))
        heads = draw(st.sampled_from([h for h in range(2, width + 2) if width % h]))
        length = draw(st.sampled_from([s for s in range(2, 7) if s != width]))
        shapes = [(length, width), (width, 3 * width), (3 * width,), (width, width), (width,)]
        refs = [b.input(s, float_dtype) for s in shapes]
        if draw(st.booleans()):
            gain, bias = b.input((width,), float_dtype), b.input((width,), float_dtype)
            return RawNode("attend", (refs[0], gain, bias, *refs[1:]), {"heads": heads})
        return RawNode("attention", tuple(refs), {"heads": heads})
    raise AssertionError(name)


@st.composite
def invalid_programs(
    draw: st.DrawFn, violations: Iterable[str] | None = None, *, max_nodes: int = 3
) -> InvalidProgram:
    """A valid program of up to ``max_nodes`` nodes plus exactly one violation, labelled."""
    names = tuple(VIOLATIONS if violations is None else violations)
    unknown = set(names) - set(VIOLATIONS)
    if unknown:
        raise ValueError(f"unknown violations {sorted(unknown)}; choose from {tuple(VIOLATIONS)}")
    name = draw(st.sampled_from(names))
    event(f"violation:{name}")
    base = draw(programs(max_nodes=max_nodes))
    builder = ProgramBuilder.from_program(base)
    if name == "unsupported_dtype":
        i = draw(st.integers(0, len(base.inputs) - 1))
        dtype = draw(st.sampled_from(UNSUPPORTED_DTYPES))
        inputs = list(base.inputs)
        inputs[i] = Input(inputs[i].shape, dtype, inputs[i].bound)
        return InvalidProgram(base, name, None, tuple(inputs))
    node = _violate(draw, name, builder, base.output, base.output_type)
    program = builder.build(base.output)
    return InvalidProgram(program, name, node, program.inputs)


__all__ = [
    "BINARY",
    "COMPARISONS",
    "COMPOSITES",
    "GENERATION_ORDER",
    "LAYOUT",
    "REDUCTIONS",
    "UNARY",
    "UNSUPPORTED_DTYPES",
    "VIOLATIONS",
    "Case",
    "InvalidProgram",
    "Violation",
    "cases",
    "invalid_programs",
    "programs",
]
