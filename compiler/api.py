"""``@jit``: trace once per specialization, compile on the chosen backend, run natively.

A specialization is keyed by the argument tree (tuples, lists, dicts, NamedTuples, dataclasses),
each array leaf's shape and dtype, every static value (non-array leaves and keyword arguments)
and the target. Compiled specializations live in one process-wide LRU, so a fuzz session that
compiles thousands of programs keeps its memory bounded; ``clear()`` releases them explicitly,
and a jitted function that is collected takes its specializations with it (as JAX's caches
hold functions weakly): they could never be called again.

A static value is keyed by its type and value (``2``, ``2.0`` and ``True`` are three
specializations; floats by their bits). A NumPy array the function captures from its enclosing
scope becomes an extra kernel argument of the specialization that traced it, which keeps that
array *object* and reads its current values at every call: changes made in place are seen by
the next call. Rebinding the name to another array is not seen by specializations traced before
(they still read the array they captured; ``clear()`` makes the next call trace again), unlike
eager NumPy; jax.jit instead bakes a captured array's values in as a constant at trace time.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from . import backends, driver, pipelines, workarounds
from .driver import Artifacts
from .dtypes import check_dtype
from .errors import CompilerError, UnsupportedFeature
from .frontend.graph import Graph, Node
from .frontend.pytree import flatten, is_array, statics, unflatten
from .frontend.tensor import Tensor
from .frontend.trace import Trace, tracing
from .lower import emit

MAX_SPECIALIZATIONS = int(os.environ.get("COMPILER_MAX_SPECIALIZATIONS", "128"))


class Compiled:
    """One specialization: its IR at every stage and a callable native kernel."""

    def __init__(
        self,
        fn_name: str,
        trace: Trace,
        graph: Graph,
        out_structure: Hashable,
        backend: backends.Backend,
    ) -> None:
        self.name = fn_name
        self.traced = (trace, graph, out_structure)
        self.backend = backend
        self.inputs = list(trace.inputs)
        self.captured = list(trace.captured.values())
        self.graph = graph
        self.outputs = graph.outputs
        self.out_structure = out_structure
        self.artifacts: Artifacts = backend.compile(graph)
        self.stages: dict[str, str] = self.artifacts.stages
        self._arity = len(self.inputs) - len(self.captured)

    @property
    def target(self) -> backends.Backend:
        return self.backend

    def _parsed(self, stage: str) -> Any:
        from mlir import ir

        return ir.Module.parse(self.stages[stage], ir.Context())

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
        if len(leaves) != self._arity:
            raise TypeError(
                f"{self.name}: this specialization takes {self._arity} arrays, got {len(leaves)}"
            )
        named = zip(self.inputs, leaves, strict=False)  # captured inputs follow the leaves
        arrays = [_check_argument(node, leaf, self.name) for node, leaf in named]
        arrays += [_check_argument(node, array, self.name) for array, node in self.captured]
        try:
            outputs = self.backend.run(self.artifacts, arrays)
        except ValueError as error:
            raise ValueError(f"{self.name}: {error}") from None
        return unflatten(self.out_structure, outputs)


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
_COMPILING: dict[Hashable, threading.Lock] = {}
_IDS = itertools.count()
#: Functions collected since the cache was last purged (``_forget``): their specializations go
#: at the next insertion, not in the finalizer, which may run in a collection triggered while
#: a thread iterates the cache.
_COLLECTED: list[int] = []


def _forget(function_id: int) -> None:
    _COLLECTED.append(function_id)


def _purge_collected() -> None:
    """Drop the specializations of collected functions (under ``_CACHE_LOCK``)."""
    if _COLLECTED:
        dead = set()
        while _COLLECTED:
            dead.add(_COLLECTED.pop())
        for key in [k for k in _CACHE if k[0] in dead]:
            del _CACHE[key]


def clear_cache() -> None:
    """Release every compiled specialization of every function (and the driver's cached
    stage outputs and kernels)."""
    with _CACHE_LOCK:
        _CACHE.clear()
    driver.clear_caches()


def cache_size() -> int:
    with _CACHE_LOCK:
        _purge_collected()
        return len(_CACHE)


class JitFunction:
    """A NumPy-style function compiled per specialization; calling it runs native code."""

    def __init__(self, fn: Callable[..., Any], target: str | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = getattr(fn, "__name__", None) or type(fn).__name__  # partials have none
        self.default_target = target or pipelines.DEFAULT_TARGET
        backends.get(self.default_target)
        self._id = next(_IDS)
        weakref.finalize(self, _forget, self._id)
        self.traces = 0
        self._prepared: tuple[Hashable, tuple[Trace, Graph, Hashable]] | None = None

    def __repr__(self) -> str:
        return f"<jit {self.name}>"

    def __reduce__(self) -> tuple:  # pickles as the function it wraps (caches are per process)
        return (JitFunction, (self.fn, self.default_target))

    def _arrays(self, leaves: list[Any]) -> list[np.ndarray]:
        arrays = []
        for leaf in leaves:
            array = np.asarray(leaf)
            check_dtype(array.dtype, f"{self.name} argument")
            arrays.append(array)
        return arrays

    def specialize(self, *args: Any, target: str | None = None, **kwargs: Any) -> Compiled:
        """The Compiled specialization for these arguments (traced and compiled on first use)."""
        leaves, structure = flatten((args, kwargs), is_array)
        return self._specialize(structure, self._arrays(leaves), args, kwargs, target)

    def _specialize(
        self, structure: Hashable, arrays: list[np.ndarray], args: tuple, kwargs: dict,
        target: str | None,
    ) -> Compiled:  # fmt: skip
        backend = backends.get(target or self.default_target)
        # The workarounds off are part of the key, as every cache of emitted IR keys them: a
        # function compiled once, then called inside ``workarounds.disabled(...)``, was served
        # its specialization compiled with them on (the upstream bug never came back).
        shapes = tuple((a.shape, a.dtype.str) for a in arrays)
        key = (self._id, structure, shapes, backend.name, workarounds.state())
        with _CACHE_LOCK:
            compiled = _CACHE.get(key)
            if compiled is not None:
                _CACHE.move_to_end(key)
                return compiled
            # Threads racing on a new specialization: the first compiles, the others wait for it.
            lock = _COMPILING.setdefault(key, threading.Lock())
        with lock:
            with _CACHE_LOCK:
                compiled = _CACHE.get(key)
            if compiled is None:
                compiled = self._compile(args, kwargs, backend, key[1:3])
                with _CACHE_LOCK:
                    _purge_collected()
                    _CACHE[key] = compiled
                    while len(_CACHE) > MAX_SPECIALIZATIONS:
                        _CACHE.popitem(last=False)
        with _CACHE_LOCK:
            _COMPILING.pop(key, None)
        return compiled

    compile = specialize

    def _compile(
        self, args: tuple, kwargs: dict, backend: backends.Backend, key: Hashable = None
    ) -> Compiled:
        trace, graph, out_structure = self._traced(args, kwargs, key)
        return Compiled(self.name, trace, graph, out_structure, backend)

    def _traced(self, args: tuple, kwargs: dict, key: Hashable) -> tuple[Trace, Graph, Hashable]:
        """The trace for these arguments: another target's specialization of the same arguments
        shares its traced graph, and so does the one ``prepare`` made; else a new trace."""
        with _CACHE_LOCK:
            sibling = next(
                (c for k, c in _CACHE.items() if k[0] == self._id and k[1:3] == key), None
            )
        if sibling is not None:
            return sibling.traced
        prepared = self._prepared
        if prepared is not None and prepared[0] == key:
            return prepared[1]
        return self.trace(*args, **kwargs)

    def prepare(self, *args: Any, targets: Sequence[str], **kwargs: Any) -> int:
        """Compile these arguments for several of our CPU targets at once, so that their
        kernels come out of one linked JIT (``driver.jit_together``: the JIT's fixed cost
        paid once, not once per target); each target's later call finds its kernel. Nothing
        is raised here: a failure is the target's own compile's to report. Returns how many
        kernels the linked JIT made."""
        leaves, structure = flatten((args, kwargs), is_array)
        try:
            arrays = self._arrays(leaves)
            chosen = [backends.get(t) for t in dict.fromkeys(targets)]
            ours = [
                b.target for b in chosen
                if isinstance(b, backends.MlirCpuBackend) and b.runtime == "ours"
            ]  # fmt: skip
            if len(ours) < 2:
                return 0
            # _specialize's key without the function and the target (what _compile passes on)
            key = (structure, tuple((a.shape, a.dtype.str) for a in arrays))
            traced = self._traced(args, kwargs, key)
            self._prepared = (key, traced)
            return driver.jit_together(traced[1], ours)
        except Exception:  # noqa: BLE001 - each target's own compile raises it again
            return 0

    def trace(self, *args: Any, **kwargs: Any) -> tuple[Trace, Graph, Hashable]:
        """Trace for these arguments: the trace, the graph and the output tree's structure."""
        trace = Trace()
        with tracing(trace):
            counter = itertools.count()

            def to_tensor(leaf: Any) -> Any:
                if not (is_array(leaf) or isinstance(leaf, Tensor)):
                    return leaf
                array = np.asarray(leaf)
                dtype = check_dtype(array.dtype, f"{self.name} argument")
                return trace.input(array.shape, dtype, f"arg{next(counter)}")

            leaves, structure = flatten((args, kwargs), is_array)
            targs, tkwargs = unflatten(structure, [to_tensor(leaf) for leaf in leaves])
            self.traces += 1
            result = self.fn(*targs, **tkwargs)
        try:
            out_leaves, out_structure = flatten(result, lambda v: isinstance(v, Tensor))
        except TypeError:  # an unhashable non-tensor (an ndarray, say) among the outputs
            out_leaves, out_structure = [], ("static", None)
        if not out_leaves or any(s[0] == "static" for s in statics(out_structure)):
            raise TypeError(
                f"{self.name} must return a traced tensor or a tuple/list/dict of them, "
                f"got {_describe(result)}"
            )
        return trace, Graph(list(trace.inputs), [t.node for t in out_leaves]), out_structure

    def emit(self, *args: Any, abi: str = "memref", **kwargs: Any) -> str:
        """The MLIR text of the module as built for these arguments, without parsing or
        compiling it (safe even when a later stage would crash the process)."""
        _, graph, _ = self.trace(*args, **kwargs)
        return emit.build(graph, abi)[0]

    def __call__(self, *args: Any, target: str | None = None, **kwargs: Any) -> Any:
        # One flattening per call (this is the hot path): it both finds traced values and
        # gives the specialization key.
        leaves, structure = flatten((args, kwargs), lambda v: is_array(v) or isinstance(v, Tensor))
        if any(isinstance(leaf, Tensor) for leaf in leaves):
            return self.fn(*args, **kwargs)  # nested @jit inlines into the outer trace
        arrays = self._arrays(leaves)
        return self._specialize(structure, arrays, args, kwargs, target)(*arrays)

    def clear(self) -> None:
        """Release this function's compiled specializations (and their traced graphs)."""
        with _CACHE_LOCK:
            for key in [k for k in _CACHE if k[0] == self._id]:
                del _CACHE[key]
        self._prepared = None


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:200]


def jit(fn: Callable[..., Any] | None = None, *, target: str | None = None) -> Any:
    """Compile a NumPy-style function: ``@jit`` or ``@jit(target="cpu-loops")``."""
    if fn is None:
        return lambda f: JitFunction(f, target)
    return JitFunction(fn, target)


__all__ = [
    "Compiled",
    "CompilerError",
    "JitFunction",
    "UnsupportedFeature",
    "cache_size",
    "clear_cache",
    "jit",
]
