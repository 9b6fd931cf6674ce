"""A jit sequence: ONE Python function called several times through one ``@jit`` cache.

A specialization cache is only wrong when a call is answered by a specialization made for an
earlier, different call. A program case calls each function once, so it can never see that; a
sequence calls the same function with the same shapes in other dtypes, with other static
arguments, with another argument tree, with the array it captures changed in place, with one
array passed as two arguments, with an earlier output passed back in.

The function is plain Python, the same for every call::

    def f(*args, **statics):
        return VARIANTS[skeleton(args)](*leaves(args), W, **statics)

- ``variants`` are programs over the same inputs (variant 1 is variant 0 with one more equation):
  the argument tree (its *skeleton*: the tree with each array written ``*``) picks one, so two
  trees with the same leaves may mean different computations, as an options dict does;
- ``holes`` are the static arguments: keywords that set a reduction's axis or keepdims, a
  reshape's target, a permutation, a scalar constant; each variant's own value is the default;
- with ``captured`` set, the variants' last input is not passed: the function reads it from the
  enclosing scope (``W``), and a call may overwrite its values in place before it runs (the
  documented semantics: captured arrays are read at every call); with a ``view`` too, the last
  two: ``W`` and a view of it made once, outside the function (``V = W[:1]``: two captured
  arrays that start at one address, both changed by a write into ``W``);
- each call names its skeleton, the dtypes of its leaves (same shapes), its statics, and where
  each leaf comes from: its own array, the same object as an earlier leaf, or the previous
  call's output.

Each call's own typed program (variant, dtypes and statics applied) is built with the checked
``ProgramBuilder``, so NumPy decides its types and rejects what NumPy rejects: it is the call's
reference. Only ``compiler.primitives`` is read, never the compiler itself.

Here the data model, its checks and JSON; ``sequence_evaluate`` (the function, NumPy's outputs),
``sequence_rewrites`` (smaller sequences) and ``sequence_printing`` (Python source) hold the rest,
as the program model splits them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .program import REJECTIONS, Program, rebuild
from .types import VALUE_DTYPES, Const, Input

FORMAT = "mlir-tensor-fuzz/jit-sequence"
FORMAT_VERSION = 1

LEAF = "*"
OWN, OUTPUT = -1, -2  # a leaf's source: its own array, the previous call's output (else: a leaf)
MAX_CALLS, MAX_VARIANTS, MAX_HOLES, MAX_TREE = 32, 4, 8, 64
#: A call's arrays of other shapes than its variant's (``Call.shapes``): at most this rank and
#: extent (a stored sequence is untrusted data).
MAX_RANK, MAX_EXTENT = 6, 4096

#: Views of the captured array ``W`` that the function may also capture, by name: (the Python
#: that makes it from ``W``, the view itself). Each starts at ``W``'s address, as ``W.T`` does;
#: a compiler that keyed captured arrays by their address took two of them for one.
CAPTURED_VIEWS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "first-row": ("W[:1]", lambda w: w[:1]),
    "first-column": ("W[..., :1]", lambda w: w[..., :1]),
    "transposed": ("W.T", lambda w: w.T),
}


def captured_values(view: str, captured: np.ndarray) -> list[np.ndarray]:
    """The captured program inputs given the captured array's values: ``W``, and its view."""
    return [captured, CAPTURED_VIEWS[view][1](captured)] if view else [captured]


def view_shape(view: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of view ``view`` of an array of ``shape``."""
    return CAPTURED_VIEWS[view][1](np.empty(shape, np.int8)).shape


# --------------------------------------------------------------------------------------------
# Argument trees


def skeleton_text(tree: Any) -> str:
    """The tree as Python would print it, each array (or traced array) written ``*``."""
    if isinstance(tree, tuple):
        inner = ", ".join(skeleton_text(t) for t in tree)
        return f"({inner},)" if len(tree) == 1 else f"({inner})"
    if isinstance(tree, list):
        return "[" + ", ".join(skeleton_text(t) for t in tree) + "]"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {skeleton_text(tree[k])}" for k in sorted(tree)) + "}"
    return "None" if tree is None else LEAF


def tree_leaves(tree: Any) -> list[Any]:
    """The arrays of a tree in the order ``compiler.jit`` flattens it (dict keys sorted)."""
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in tree_leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in tree_leaves(tree[k])]
    return [] if tree is None else [tree]


def fill(skeleton: Any, leaves: Sequence[Any]) -> Any:
    """The skeleton with its ``*`` replaced by ``leaves``, in order."""
    it = iter(leaves)

    def build(node: Any) -> Any:
        if isinstance(node, tuple):
            return tuple(build(n) for n in node)
        if isinstance(node, list):
            return [build(n) for n in node]
        if isinstance(node, dict):  # leaves in sorted key order (jit's), keys in the tree's
            built = {k: build(node[k]) for k in sorted(node)}
            return {k: built[k] for k in node}
        return None if node is None else next(it)

    return build(skeleton)


def positional(count: int) -> tuple[str, ...]:
    """``f(x0, x1, ...)``: the plainest skeleton."""
    return (LEAF,) * count


def _encode_tree(node: Any) -> Any:
    if isinstance(node, tuple):
        return {"tuple": [_encode_tree(n) for n in node]}
    if isinstance(node, list):
        return {"list": [_encode_tree(n) for n in node]}
    if isinstance(node, dict):
        items = {k: _encode_tree(v) for k, v in node.items()}
        # Canonical JSON sorts an object's keys: a dict built in another order is kept as pairs.
        return {"dict": items if list(node) == sorted(node) else [[k, v] for k, v in items.items()]}
    return node


def _decode_tree(data: Any, budget: list[int], depth: int = 0) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > 8:
        raise ValueError("argument skeleton too large or too deep")
    if data == LEAF or data is None:
        return data
    if isinstance(data, dict) and len(data) == 1:
        ((kind, items),) = data.items()
        if kind in ("tuple", "list") and isinstance(items, list):
            out = [_decode_tree(i, budget, depth + 1) for i in items]
            return tuple(out) if kind == "tuple" else out
        if kind == "dict" and isinstance(items, dict):
            items = [[k, v] for k, v in items.items()]
        if (
            kind == "dict" and isinstance(items, list)
            and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in items)
            and len({k for k, _ in items}) == len(items)
        ):  # fmt: skip
            return {k: _decode_tree(v, budget, depth + 1) for k, v in items}
    raise ValueError(f"malformed argument skeleton {data!r:.80}")


# --------------------------------------------------------------------------------------------
# Static arguments


@dataclass(frozen=True)
class Hole:
    """A static argument: keyword ``name`` sets attribute ``attr`` of equation ``node`` (or, with
    ``attr`` empty, its scalar-constant argument ``arg``) in every variant."""

    name: str
    node: int
    attr: str = ""
    arg: int = -1


def _freeze(value: Any) -> Any:
    """A static value as the function receives it: JSON lists become (hashable) tuples."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _check_static(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            raise ValueError(f"a static argument must be finite, got {value!r}")
        return value
    if isinstance(value, (list, tuple)) and len(value) <= 8:
        return tuple(_check_static(v) for v in value)
    raise ValueError(f"unsupported static argument {value!r:.80}")


# --------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True, eq=False)
class Call:
    """One call of the sequence.

    ``dtypes`` are its leaves' dtypes (the variant's inputs but the captured one); ``shapes``
    their shapes where they are not the variant's (empty: the variant's);
    ``sources[j]`` says where leaf j comes from: ``OWN`` (``arrays[j]``), ``OUTPUT`` (the
    previous call's output) or ``k < j`` (the same object as leaf k); ``captured`` are the values
    written into the captured array before the call (None: unchanged)."""

    variant: int
    skeleton: Any
    dtypes: tuple[str, ...]
    statics: tuple[tuple[str, Any], ...] = ()
    sources: tuple[int, ...] = ()
    arrays: tuple[np.ndarray | None, ...] = ()
    captured: np.ndarray | None = None
    note: str = ""  # what this call changes (documentation only)
    shapes: tuple[tuple[int, ...], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.statics)


@dataclass(frozen=True, eq=False)
class JitSequence:
    """Calls of one function through one ``@jit`` (see the module docstring)."""

    variants: tuple[Program, ...]
    holes: tuple[Hole, ...]
    captured: bool
    calls: tuple[Call, ...]
    view: str = ""  # a view of the captured array, captured too (``CAPTURED_VIEWS``)
    _programs: dict[int, Program] = field(default_factory=dict, repr=False, compare=False)

    # ---- queries

    @property
    def captures(self) -> int:
        """How many of the variants' inputs the function captures (the array, its view)."""
        return int(self.captured) + int(bool(self.view))

    @property
    def passed(self) -> int:
        """How many leaves a call passes (the variants' inputs but the captured ones)."""
        return len(self.variants[0].inputs) - self.captures

    @property
    def captured_input(self) -> Input | None:
        return self.variants[0].inputs[-self.captures] if self.captured else None

    def defaults(self) -> dict[str, Any]:
        """Each static argument's default: its value in variant 0."""
        out = {}
        for hole in self.holes:
            node = self.variants[0].nodes[hole.node]
            out[hole.name] = node.attrs[hole.attr] if hole.attr else node.args[hole.arg].value
        return out

    def dispatch(self) -> dict[str, int]:
        """skeleton text -> variant, as the calls use them."""
        table: dict[str, int] = {}
        for call in self.calls:
            table.setdefault(skeleton_text(call.skeleton), call.variant)
        return table

    def program(self, index: int) -> Program:
        """Call ``index``'s own program: its variant in its dtypes with its statics, checked by
        the ``ProgramBuilder`` (may raise what NumPy raises for it)."""
        if index not in self._programs:
            self._programs[index] = self._typed(self.calls[index])
        return self._programs[index]

    def _typed(self, call: Call) -> Program:
        base = self.variants[call.variant]
        captured = self.captured_input
        dtypes = list(call.dtypes) + ([captured.dtype] * self.captures if captured else [])
        if len(dtypes) != len(base.inputs):
            raise ValueError(f"a call passes {len(call.dtypes)} arrays, expected {self.passed}")
        shapes = list(call.shapes) + [i.shape for i in base.inputs[len(call.shapes) :]]
        inputs = [
            Input(shape, d, i.bound)
            for i, d, shape in zip(base.inputs, dtypes, shapes, strict=True)
        ]
        statics = call.kwargs
        unknown = set(statics) - {h.name for h in self.holes}
        if unknown:
            raise ValueError(f"unknown static arguments {sorted(unknown)}")
        specs = []
        for index, node in enumerate(base.nodes):
            args, attrs = list(node.args), dict(node.attrs)
            for hole in self.holes:
                if hole.node == index and hole.name in statics:
                    if hole.attr:
                        attrs[hole.attr] = statics[hole.name]
                    else:
                        args[hole.arg] = _const(statics[hole.name])
            specs.append((node.op, tuple(args), attrs))
        return rebuild(inputs, specs, base.output)

    def outputs_type(self, index: int) -> tuple[tuple[int, ...], str]:
        out = self.program(index).output_type
        return out.shape, out.dtype

    def captured_at(self, index: int) -> np.ndarray | None:
        """The captured array's values when call ``index`` runs."""
        for call in reversed(self.calls[: index + 1]):
            if call.captured is not None:
                return call.captured
        return None

    def leaves(self, index: int, previous: Any) -> list[Any]:
        """Call ``index``'s leaves as objects (an alias is the same object; ``previous`` is the
        previous call's output)."""
        call = self.calls[index]
        out: list[Any] = []
        for j, source in enumerate(call.sources):
            if source == OWN:
                out.append(call.arrays[j])
            elif source == OUTPUT:
                out.append(previous)
            else:
                out.append(out[source])
        return out

    def arguments(self, index: int, previous: Any = None) -> tuple[Any, dict[str, Any]]:
        """(positional arguments, static keyword arguments) of call ``index``."""
        call = self.calls[index]
        return fill(call.skeleton, self.leaves(index, previous)), call.kwargs

    def inputs(self, index: int, previous: Any = None) -> list[np.ndarray]:
        """Call ``index``'s program inputs: its leaves, then the captured values."""
        leaves = [np.asarray(a) for a in self.leaves(index, previous)]
        if not self.captured:
            return leaves
        return leaves + captured_values(self.view, self.captured_at(index))

    @property
    def size(self) -> int:
        """Smaller is simpler: calls, then features (aliases, fed-back outputs, statics,
        non-positional trees, captured updates, variants, holes), then array elements."""
        features = len(self.variants) + len(self.holes) + self.captures
        elements = 0
        for call in self.calls:
            features += sum(s != OWN for s in call.sources) + len(call.statics)
            features += int(call.skeleton != positional(len(call.dtypes))) + int(bool(call.shapes))
            features += int(call.captured is not None)
            elements += sum(int(a.size) for a in call.arrays if a is not None)
            elements += 0 if call.captured is None else int(call.captured.size)
        return len(self.calls) * 1_000_000 + features * 10_000 + elements

    # ---- checking

    def validate(self) -> JitSequence:
        """Raise ValueError (or what NumPy raises) unless every call is well formed; returns
        self."""
        if not self.calls or len(self.calls) > MAX_CALLS:
            raise ValueError(f"a sequence has 1 to {MAX_CALLS} calls, got {len(self.calls)}")
        if not self.variants or len(self.variants) > MAX_VARIANTS:
            raise ValueError(f"a sequence has 1 to {MAX_VARIANTS} variants")
        if len(self.holes) > MAX_HOLES or len({h.name for h in self.holes}) != len(self.holes):
            raise ValueError("too many static arguments, or two with one name")
        first = self.variants[0]
        for hole in self.holes:
            if not hole.name.isidentifier() or hole.name in _RESERVED:
                raise ValueError(f"static argument name {hole.name!r} is not usable")
            if not 0 <= hole.node < len(first.nodes):
                raise ValueError(f"static argument {hole.name}: no equation {hole.node}")
        for variant in self.variants:
            if variant.inputs != first.inputs or variant.nodes[: len(first.nodes)] != first.nodes:
                raise ValueError("variants must share inputs and variant 0's equations")
        for hole in self.holes:
            node = first.nodes[hole.node]
            if hole.attr and hole.attr not in node.attrs:
                raise ValueError(f"{node.op} has no attribute {hole.attr!r}")
            if not hole.attr and not (
                0 <= hole.arg < len(node.args)
                and isinstance(node.args[hole.arg], Const)
                and node.args[hole.arg].dtype is None
            ):
                raise ValueError(f"{hole.name}: argument {hole.arg} is not a weak constant")
        if self.captured:
            if self.passed < 1:
                raise ValueError("a captured array needs at least one passed array")
            if self.calls[0].captured is None:
                raise ValueError("the first call must give the captured array's values")
        if self.view:
            if not self.captured or self.view not in CAPTURED_VIEWS:
                raise ValueError(f"no captured view {self.view!r} (one of {list(CAPTURED_VIEWS)})")
            w, v = first.inputs[-2:]
            if v.dtype != w.dtype or v.shape != view_shape(self.view, w.shape):
                raise ValueError(f"the captured view {self.view} of a {w.type} is not a {v.type}")
        table: dict[str, int] = {}
        for index, call in enumerate(self.calls):
            self._check_call(index, call, table)
        return self

    def _check_call(self, index: int, call: Call, table: dict[str, int]) -> None:
        if not 0 <= call.variant < len(self.variants):
            raise ValueError(f"call {index}: no variant {call.variant}")
        if not isinstance(call.skeleton, tuple):
            raise ValueError(f"call {index}: the skeleton of positional arguments is a tuple")
        text = skeleton_text(call.skeleton)
        if table.setdefault(text, call.variant) != call.variant:
            raise ValueError(f"call {index}: skeleton {text} already means another variant")
        n = self.passed
        if len(tree_leaves(call.skeleton)) != n or len(call.dtypes) != n:
            raise ValueError(f"call {index}: its tree and dtypes must name {n} arrays")
        if len(call.sources) != n or len(call.arrays) != n:
            raise ValueError(f"call {index}: sources and arrays must name {n} arrays")
        if call.shapes and (
            len(call.shapes) != n
            or any(
                len(s) > MAX_RANK or any(not 1 <= e <= MAX_EXTENT for e in s) for s in call.shapes
            )
        ):
            raise ValueError(f"call {index}: shapes must name {n} arrays' shapes")
        program = self.program(index)
        for j, source in enumerate(call.sources):
            want = program.inputs[j]
            if source == OWN:
                array = call.arrays[j]
                if not isinstance(array, np.ndarray) or (array.shape, array.dtype.name) != (
                    want.shape,
                    want.dtype,
                ):
                    raise ValueError(f"call {index}: leaf {j} must be a {want.type} array")
            elif source == OUTPUT:
                if index == 0 or self.outputs_type(index - 1) != (want.shape, want.dtype):
                    raise ValueError(f"call {index}: leaf {j} cannot be the previous output")
            elif not 0 <= source < j or program.inputs[source].type != want.type:
                raise ValueError(f"call {index}: leaf {j} cannot alias leaf {source}")
            if source != OWN and call.arrays[j] is not None:
                raise ValueError(f"call {index}: leaf {j} has an array and another source")
        if call.captured is not None:
            want = self.captured_input
            if want is None or (call.captured.shape, call.captured.dtype.name) != (
                want.shape,
                want.dtype,
            ):
                raise ValueError(f"call {index}: captured values must be a {want.type} array")
        for _, value in call.statics:
            _check_static(value)

    # ---- the function (strategies.model.sequence_evaluate)

    def function(self, xp: Any = None, captured: np.ndarray | None = None) -> Callable[..., Any]:
        """The ONE function every call calls: ``f(*args, **statics)`` over namespace ``xp``
        (default: the first leaf's), reading ``captured`` from its enclosing scope."""
        from .sequence_evaluate import function

        return function(self, xp, captured)

    def numpy_outputs(self) -> list[Any]:
        """Every call's output as NumPy computes the sequence (None where NumPy raises)."""
        from .sequence_evaluate import numpy_outputs

        return numpy_outputs(self)

    # ---- smaller sequences, for minimizers (strategies.model.sequence_rewrites)

    def keep(self, indices: Sequence[int]) -> JitSequence:
        """Only calls ``indices`` (in order): a fed-back output whose call is gone becomes its
        own array (NumPy's value), the captured values each kept call saw are kept."""
        from .sequence_rewrites import keep

        return keep(self, indices)

    def simpler(self) -> Iterator[tuple[str, JitSequence]]:
        """Candidate simplifications, biggest first (unchecked: call ``validate``)."""
        from .sequence_rewrites import simpler

        return simpler(self)

    def rounded(self) -> Iterator[tuple[str, JitSequence]]:
        """The same sequence with one call's float arrays rounded (values simplified)."""
        from .sequence_rewrites import rounded

        return rounded(self)

    def with_calls(self, calls: Sequence[Call]) -> JitSequence:
        return JitSequence(self.variants, self.holes, self.captured, tuple(calls), self.view)

    # ---- JSON

    def to_dict(self, encode: Callable[[np.ndarray], Any]) -> dict[str, Any]:
        """JSON data; ``encode`` stores an array (the harness's exact encoding)."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "variants": [v.to_dict() for v in self.variants],
            "holes": [
                {"name": h.name, "node": h.node, "attr": h.attr, "arg": h.arg} for h in self.holes
            ],
            "captured": self.captured,
            **({"view": self.view} if self.view else {}),
            "calls": [
                {
                    "variant": c.variant,
                    "skeleton": _encode_tree(c.skeleton),
                    "dtypes": list(c.dtypes),
                    "statics": {k: _thaw(v) for k, v in c.statics},
                    "sources": list(c.sources),
                    "arrays": [None if a is None else encode(a) for a in c.arrays],
                    "captured": None if c.captured is None else encode(c.captured),
                    "note": c.note,
                    **({"shapes": [list(s) for s in c.shapes]} if c.shapes else {}),
                }
                for c in self.calls
            ],
        }

    @classmethod
    def from_dict(cls, data: Any, decode: Callable[[Any], np.ndarray]) -> JitSequence:
        """The sequence ``to_dict`` wrote, checked (ValueError if malformed)."""
        try:
            return cls._from_dict(data, decode).validate()
        except (KeyError, AttributeError, TypeError, IndexError) as error:
            raise ValueError(f"malformed jit sequence: {type(error).__name__}: {error}") from None

    @classmethod
    def _from_dict(cls, data: Any, decode: Callable[[Any], np.ndarray]) -> JitSequence:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a jit sequence")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"jit sequence version {data.get('version')!r} is not supported")
        if len(data["variants"]) > MAX_VARIANTS or len(data["calls"]) > MAX_CALLS:
            raise ValueError("too many variants or calls")
        if len(data["holes"]) > MAX_HOLES:
            raise ValueError("too many static arguments")
        variants = tuple(Program.from_dict(v) for v in data["variants"])
        holes = tuple(
            Hole(
                str(h["name"]), _index(h["node"]), str(h.get("attr", "")), _index(h.get("arg", -1))
            )
            for h in data["holes"]
        )
        calls = []
        for c in data["calls"]:
            statics = c.get("statics", {})
            if not isinstance(statics, dict):
                raise ValueError("statics must be an object")
            calls.append(
                Call(
                    variant=_index(c["variant"]),
                    skeleton=_decode_tree(c["skeleton"], [MAX_TREE]),
                    dtypes=tuple(_dtype(d) for d in c["dtypes"]),
                    statics=tuple(
                        sorted((str(k), _check_static(_freeze(v))) for k, v in statics.items())
                    ),
                    sources=tuple(_index(s) for s in c["sources"]),
                    arrays=tuple(None if a is None else decode(a) for a in c["arrays"]),
                    captured=None if c.get("captured") is None else decode(c["captured"]),
                    note=str(c.get("note", "")),
                    shapes=tuple(
                        tuple(_index(e) for e in shape) for shape in c.get("shapes", ())[:MAX_TREE]
                    ),
                )
            )
        view = data.get("view", "")
        if not isinstance(view, str):
            raise ValueError("a captured view is named by a string")
        return cls(variants, holes, bool(data["captured"]), tuple(calls), view)

    # ---- printing (strategies.model.sequence_printing)

    def source(self, array: Callable[[np.ndarray], str]) -> tuple[list[str], list[list[str]]]:
        """Python source: the definitions and, per call, the lines that call ``record`` (see
        :func:`strategies.model.sequence_printing.source`)."""
        from .sequence_printing import source

        return source(self, array)

    def uses(self, prefix: str) -> bool:
        """Does any variant's source use ``prefix`` (``ops.``, ``xp.``)?"""
        from .sequence_printing import uses

        return uses(self, prefix)


_RESERVED = {
    "args", "statics", "target", "f", "xp", "np", "W", "V", "record", "leaves", "skeleton"
}  # fmt: skip


def _const(value: Any) -> Const:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a scalar static argument must be an int or float, got {value!r}")
    return Const(value)


def _index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 1 << 20:
        raise ValueError(f"expected a small int, got {value!r:.40}")
    return value


def _dtype(value: Any) -> str:
    # bool too: a program's input may be one, and its sequence's first call passes it (a stored
    # sequence with a bool leaf could not be read back: a session with a workaround off, whose
    # cases are copies that decode their sequence again, stopped on one)
    if value not in VALUE_DTYPES:
        raise ValueError(f"a leaf dtype is one of {VALUE_DTYPES}, got {value!r:.40}")
    return value


def valid(sequence: JitSequence) -> bool:
    """Is ``sequence`` well formed (every call's program accepted by NumPy)?"""
    try:
        sequence.validate()
    except (*REJECTIONS, KeyError):
        return False
    return True


__all__ = [
    "CAPTURED_VIEWS",
    "FORMAT",
    "FORMAT_VERSION",
    "LEAF",
    "OUTPUT",
    "OWN",
    "Call",
    "Hole",
    "JitSequence",
    "captured_values",
    "fill",
    "positional",
    "skeleton_text",
    "tree_leaves",
    "valid",
    "view_shape",
]
