"""``@jit``: trace once per specialization, compile through the target's pipelines, run natively.

A specialization is keyed by the argument tree (tuples, lists, dicts, NamedTuples, dataclasses),
each array leaf's shape and dtype, every static value (non-array leaves and keyword arguments)
and the target. Compiled specializations live in one process-wide LRU, so a fuzz session that
compiles thousands of programs keeps its memory bounded; ``clear()`` releases them explicitly.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from . import blas, builder, pipelines
from .expr import Node, Tensor, Trace, UnsupportedFeature, check_dtype, tracing

MAX_SPECIALIZATIONS = int(os.environ.get("COMPILER_MAX_SPECIALIZATIONS", "128"))


class CompilerError(RuntimeError):
    """MLIR rejected or failed on a module we built: always a compiler bug, never user error."""

    def __init__(self, stage: str, pipeline: str, message: str, module_text: str) -> None:
        super().__init__(f"{stage} failed: {message}")
        self.stage = stage
        self.pipeline = pipeline
        self.message = message
        self.module_text = module_text

    def __reduce__(self) -> tuple:  # pickles (across worker processes) as it was raised
        return (type(self), (self.stage, self.pipeline, self.message, self.module_text))


# --------------------------------------------------------------------------------------------
# Argument trees


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def flatten(tree: Any, is_leaf: Callable[[Any], bool]) -> tuple[list[Any], Hashable]:
    """Leaves (for which ``is_leaf`` holds) in order, and a hashable description of the rest."""
    leaves: list[Any] = []

    def walk(node: Any) -> Hashable:
        if is_leaf(node):
            leaves.append(node)
            return ("*",)
        if _is_namedtuple(node):
            return ("namedtuple", type(node), tuple(walk(v) for v in node))
        if isinstance(node, (tuple, list)):
            return (type(node).__name__, tuple(walk(v) for v in node))
        if isinstance(node, dict):
            keys = sorted(node, key=repr)
            return ("dict", tuple(keys), tuple(walk(node[k]) for k in keys))
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            names = tuple(f.name for f in dataclasses.fields(node))
            return ("dataclass", type(node), names, tuple(walk(getattr(node, n)) for n in names))
        return ("static", _static(node))

    return leaves, walk(tree)


class _Static:
    """A static argument in a specialization key. Floats compare by bit pattern: -0.0 and 0.0
    are different programs, and a NaN must find its own specialization again."""

    __slots__ = ("value", "key")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.key = _static_key(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _static_key(value: Any) -> Hashable:
    if isinstance(value, (float, np.floating)):
        return (type(value), np.float64(value).tobytes())
    if isinstance(value, tuple):
        return (type(value), tuple(_static_key(v) for v in value))
    return (type(value), value)


def _static(value: Any) -> Hashable:
    try:
        hash(value)
    except TypeError as error:
        raise TypeError(
            f"static argument {value!r} of type {type(value).__name__} is not hashable; "
            "pass arrays as NumPy arrays and other arguments as hashable values"
        ) from error
    return (type(value), _Static(value))


def unflatten(structure: Hashable, leaves: list[Any]) -> Any:
    """Inverse of ``flatten``: rebuild the tree with ``leaves`` in place of its leaves."""
    it = iter(leaves)

    def build(node: Hashable) -> Any:
        kind = node[0]
        if kind == "*":
            return next(it)
        if kind == "static":
            return node[1][1].value
        if kind == "namedtuple":
            return node[1](*[build(c) for c in node[2]])
        if kind in ("tuple", "list"):
            items = [build(c) for c in node[1]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {k: build(c) for k, c in zip(node[1], node[2], strict=True)}
        if kind == "dataclass":
            return node[1](**{n: build(c) for n, c in zip(node[2], node[3], strict=True)})
        raise AssertionError(kind)

    return build(structure)


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, (str, bytes))


# --------------------------------------------------------------------------------------------
# Memref descriptors and the runtime libraries


@functools.cache
def _descriptor_class(rank: int) -> type[ctypes.Structure]:
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_longlong),
    ]
    if rank:
        fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _descriptor(array: np.ndarray, shape: tuple[int, ...]) -> ctypes.Structure:
    """A memref descriptor for a C-contiguous buffer of ``shape`` (pointers set per call)."""
    desc = _descriptor_class(len(shape))()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    if shape:
        desc.sizes[:] = shape
        desc.strides[:] = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    return desc


@functools.cache
def runtime_libraries() -> tuple[str, ...]:
    """Shared libraries the ExecutionEngine loads: MLIR's C runner utils and OpenBLAS."""
    import mlir

    libs = []
    for root in mlir.__path__:
        path = os.path.join(root, "lib", "libmlir_c_runner_utils.so")
        if os.path.exists(path):
            libs.append(path)
            break
    libs.append(blas.library_path())
    return tuple(libs)


# --------------------------------------------------------------------------------------------
# A compiled specialization


class Compiled:
    """One specialization: its IR at every stage and a native entry point."""

    def __init__(
        self,
        fn_name: str,
        trace: Trace,
        outputs: list[Node],
        out_structure: Hashable,
        target: pipelines.Target,
    ) -> None:
        from mlir import ir, passmanager
        from mlir.execution_engine import ExecutionEngine

        self.name = fn_name
        self.target = target
        self.inputs = list(trace.inputs)
        self.captured = list(trace.captured.values())
        self.outputs = outputs
        self.out_structure = out_structure
        text, self.signature = builder.build(self.inputs, outputs)
        self.stages: dict[str, str] = {"module": text}
        self.context = ir.Context()
        with self.context:
            try:
                module = ir.Module.parse(text)
            except ir.MLIRError as error:
                raise CompilerError("parse/verify", "", str(error), text) from None
            current = text
            for stage, pipeline in target.stages():
                if stage == "lowered" and target.blas:
                    try:
                        blas.substitute(module)
                    except ir.MLIRError as error:
                        raise CompilerError("blas", "", str(error), current) from None
                    self.stages["blas"] = str(module)
                pm = passmanager.PassManager.parse(pipeline)
                try:
                    pm.run(module.operation)
                except ir.MLIRError as error:
                    raise CompilerError(stage, pipeline, str(error), current) from None
                current = str(module)
                self.stages[stage] = current
            self.engine = ExecutionEngine(
                module, opt_level=target.opt_level, shared_libs=list(runtime_libraries())
            )
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            self.engine.raw_lookup("_mlir_ciface_" + builder.KERNEL)
        )
        self._lock = threading.Lock()
        self._prepare_descriptors()

    def _parsed(self, stage: str) -> Any:
        from mlir import ir

        with self.context:
            return ir.Module.parse(self.stages[stage])

    @property
    def module(self) -> Any:
        """The module as built: named linalg ops on tensors."""
        return self._parsed("module")

    @property
    def optimized(self) -> Any:
        """After fusion, still on tensors (the built module for unfused targets)."""
        return self._parsed("optimized" if "optimized" in self.stages else "module")

    @property
    def bufferized(self) -> Any:
        return self._parsed("bufferized")

    @property
    def lowered(self) -> Any:
        """LLVM dialect, as handed to the ExecutionEngine."""
        return self._parsed("lowered")

    def __call__(self, *leaves: np.ndarray) -> Any:
        """Run on the array leaves (in flattening order); returns the output tree."""
        if len(leaves) != len(self.inputs) - len(self.captured):
            raise TypeError(
                f"{self.name}: this specialization takes {len(self.inputs) - len(self.captured)} "
                f"arrays, got {len(leaves)}"
            )
        arrays = []
        for node, leaf in zip(self.inputs, leaves, strict=False):  # captured inputs follow
            arrays.append(_check_argument(node, leaf, self.name))
        for array, node in self.captured:
            arrays.append(_check_argument(node, array, self.name))
        outputs = [np.empty(node.shape, node.dtype) for node in self.outputs]
        errors = [np.zeros((), np.int32) for _ in range(self.signature.error_outputs)]
        buffers = arrays + outputs + errors
        # Every buffer is C-contiguous with the specialized shape, so the descriptors' sizes and
        # strides never change: only the two data pointers are written per call.
        with self._lock:
            for descriptor, buffer in zip(self._descriptors, buffers, strict=True):
                descriptor.allocated = descriptor.aligned = buffer.ctypes.data
            self._entry(self._packed)
        if any(int(e) for e in errors):
            raise ValueError(f"{self.name}: gather ids out of range for the table")
        return unflatten(self.out_structure, outputs)

    def _prepare_descriptors(self) -> None:
        nodes = self.inputs + self.outputs
        shapes = [(n.shape, n.dtype) for n in nodes]
        shapes += [((), np.dtype(np.int32))] * self.signature.error_outputs
        self._descriptors = [
            _descriptor(np.empty((0,) * len(s) if s else (), d), s) for s, d in shapes
        ]
        self._pointers = [ctypes.pointer(d) for d in self._descriptors]
        self._packed = (ctypes.c_void_p * len(self._pointers))(
            *[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in self._pointers]
        )


def _check_argument(node: Node, value: Any, name: str) -> np.ndarray:
    # np.require keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
    array = np.require(np.asarray(value), requirements="C")
    if array.shape != node.shape or array.dtype != node.dtype:
        raise TypeError(
            f"{name}: argument {node.attrs['name']} was specialized for "
            f"{node.dtype}{list(node.shape)}, got {array.dtype}{list(array.shape)}"
        )
    return array


# --------------------------------------------------------------------------------------------
# The decorator

_CACHE: OrderedDict[Hashable, Compiled] = OrderedDict()
_CACHE_LOCK = threading.RLock()
_IDS = itertools.count()


def clear_cache() -> None:
    """Release every compiled specialization of every function."""
    with _CACHE_LOCK:
        _CACHE.clear()


def cache_size() -> int:
    return len(_CACHE)


class JitFunction:
    """A NumPy-style function compiled per specialization; calling it runs native code."""

    def __init__(self, fn: Callable[..., Any], target: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = getattr(fn, "__name__", None) or type(fn).__name__  # partials have none
        self.default_target = target or pipelines.DEFAULT_TARGET
        pipelines.resolve(self.default_target)
        self._id = next(_IDS)
        self.traces = 0

    def __repr__(self) -> str:
        return f"<jit {self.name}>"

    def _arrays(self, leaves: list[Any]) -> list[np.ndarray]:
        arrays = []
        for leaf in leaves:
            array = np.asarray(leaf)
            check_dtype(array.dtype, f"{self.name} argument")
            arrays.append(array)
        return arrays

    def specialize(self, *args: Any, target: str | None = None, **kwargs: Any) -> Compiled:
        """The Compiled specialization for these arguments (traced and compiled on first use)."""
        leaves, structure = flatten((args, kwargs), _is_array)
        return self._specialize(structure, self._arrays(leaves), args, kwargs, target)

    def _specialize(
        self, structure: Hashable, arrays: list[np.ndarray], args: tuple, kwargs: dict,
        target: str | None,
    ) -> Compiled:  # fmt: skip
        resolved = pipelines.resolve(target or self.default_target)
        key = (self._id, structure, tuple((a.shape, a.dtype.str) for a in arrays), resolved.name)
        with _CACHE_LOCK:
            compiled = _CACHE.get(key)
            if compiled is not None:
                _CACHE.move_to_end(key)
                return compiled
        compiled = self._compile(args, kwargs, resolved)
        with _CACHE_LOCK:
            _CACHE[key] = compiled
            while len(_CACHE) > MAX_SPECIALIZATIONS:
                _CACHE.popitem(last=False)
        return compiled

    compile = specialize

    def _compile(self, args: tuple, kwargs: dict, target: pipelines.Target) -> Compiled:
        trace, outputs, out_structure = self._trace(args, kwargs)
        return Compiled(self.name, trace, outputs, out_structure, target)

    def _trace(self, args: tuple, kwargs: dict) -> tuple[Trace, list[Node], Hashable]:
        trace = Trace()
        with tracing(trace):
            counter = itertools.count()

            def to_tensor(leaf: Any) -> Any:
                if not (_is_array(leaf) or isinstance(leaf, Tensor)):
                    return leaf
                array = np.asarray(leaf)
                return trace.input(array.shape, array.dtype, f"arg{next(counter)}")

            leaves, structure = flatten((args, kwargs), lambda v: _is_array(v))
            targs, tkwargs = unflatten(structure, [to_tensor(leaf) for leaf in leaves])
            self.traces += 1
            result = self.fn(*targs, **tkwargs)
        try:
            out_leaves, out_structure = flatten(result, lambda v: isinstance(v, Tensor))
        except TypeError:  # an unhashable non-tensor (an ndarray, say) among the outputs
            out_leaves, out_structure = [], ("static", None)
        if not out_leaves or any(s[0] == "static" for s in _statics(out_structure)):
            raise TypeError(
                f"{self.name} must return a traced tensor or a tuple/list/dict of them, "
                f"got {_describe(result)}"
            )
        return trace, [t.node for t in out_leaves], out_structure

    def emit(self, *args: Any, **kwargs: Any) -> str:
        """The MLIR text of the module as built for these arguments, without parsing or
        compiling it (safe even when a later stage would crash the process)."""
        trace, outputs, _ = self._trace(args, kwargs)
        return builder.build(trace.inputs, outputs)[0]

    def __call__(self, *args: Any, target: str | None = None, **kwargs: Any) -> Any:
        # One flattening per call (this is the hot path): it both finds traced values and
        # gives the specialization key.
        leaves, structure = flatten((args, kwargs), lambda v: _is_array(v) or isinstance(v, Tensor))
        if any(isinstance(leaf, Tensor) for leaf in leaves):
            return self.fn(*args, **kwargs)  # nested @jit inlines into the outer trace
        arrays = self._arrays(leaves)
        return self._specialize(structure, arrays, args, kwargs, target)(*arrays)

    def clear(self) -> None:
        """Release this function's compiled specializations."""
        with _CACHE_LOCK:
            for key in [k for k in _CACHE if k[0] == self._id]:
                del _CACHE[key]


def _statics(structure: Hashable) -> list[Hashable]:
    found: list[Hashable] = []

    def walk(node: Any) -> None:
        if isinstance(node, tuple) and node and node[0] == "static":
            found.append(node)
        elif isinstance(node, tuple):
            for child in node:
                if isinstance(child, tuple):
                    walk(child)

    walk(structure)
    return found


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:200]


def jit(fn: Callable[..., Any] | None = None, *, target: str | None = None) -> Any:
    """Compile a NumPy-style function: ``@jit`` or ``@jit(target="cpu-loops")``."""
    if fn is None:
        return lambda f: JitFunction(f, target)
    return JitFunction(fn, target)


__all__ = ["jit", "JitFunction", "Compiled", "CompilerError", "clear_cache", "UnsupportedFeature"]
