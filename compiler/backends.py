"""Backends behind one protocol, in one registry.

A backend has a ``name``, says whether it can run here (``unavailable()`` gives the reason it
cannot, or None; the optional ``limits()`` what an available one still cannot do here, such as
running without a device), ``compile``s a traced graph into
:class:`~compiler.driver.Artifacts` (every stage's text and the commands that reproduce it) and
``run``s artifacts on NumPy arrays. The harness and ``@jit`` know backends only through this
protocol, so a new backend is one class and one ``register`` call. The built-in CPU targets are
instances of :class:`MlirCpuBackend`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import pipelines
from .driver import Artifacts, compile_graph
from .frontend.graph import Graph


@runtime_checkable
class Backend(Protocol):
    """What the harness and ``@jit`` need of a backend."""

    name: str
    description: str

    def unavailable(self) -> str | None:
        """Why this backend cannot run here (a missing package, no device), or None."""

    def compile(self, graph: Graph) -> Artifacts:
        """Every stage of this backend on ``graph``; raises CompilerError on a failed stage."""

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs for C-contiguous ``arrays`` of the graph's input types."""


class MlirCpuBackend:
    """Our own pipeline (``compiler.pipelines``) JIT-compiled by MLIR's ExecutionEngine.

    ``runtime="mlir"`` calls the kernel through MLIR's own runtime helpers (the
    ``NAME+mlir-runtime`` variants), to tell a bug of our runtime from one in the code."""

    def __init__(self, target: pipelines.Target, runtime: str = "ours") -> None:
        self.target = target
        self.runtime = runtime
        base, at, level = target.name.partition("@")  # NAME+suffix@O<n>, as parse_variant reads
        self.name = base + ("+mlir-runtime" if runtime == "mlir" else "") + at + level
        self.description = target.description

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    def unavailable(self) -> str | None:
        try:
            import mlir.execution_engine  # noqa: F401
        except ImportError as error:  # pragma: no cover - a dependency of the project
            return f"the MLIR Python bindings are not installed ({error})"
        return None

    def compile(self, graph: Graph) -> Artifacts:
        return compile_graph(graph, self.target, runtime=self.runtime)

    def stage_texts(self, graph: Graph, before: str) -> Artifacts:
        """Every stage's text up to (not including) stage ``before``, without the JIT: the input
        of a stage that crashed, rebuilt without running it (``llvm``, the JIT: every stage)."""
        names = self.target.stage_names()
        if before == pipelines.LLVM:
            stages = self.target.stages
        else:
            stages = self.target.stages[: names.index(before)] if before in names else ()
        truncated = pipelines.Target(self.target.name, tuple(stages), self.target.opt_level)
        return compile_graph(graph, truncated, native=False)

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        outputs, errors = artifacts.native(arrays)
        if any(int(e) for e in errors):
            raise ValueError("gather ids out of range for the table")
        return outputs


class GraphInterpreterBackend:
    """The traced graph evaluated by NumPy (``compiler.interpret``), no MLIR at all: the
    reference that tells a frontend bug (the graph is wrong) from a lowering bug."""

    name = "graph-numpy"
    description = "the traced graph interpreted by NumPy (no MLIR): a reference for triage"
    # Where its failures live (triage): tracing and the graph, nothing compiles the program.
    layer = "frontend"

    def unavailable(self) -> str | None:
        return None

    def compile(self, graph: Graph) -> Artifacts:
        from .lower.emit import build

        text, signature = build(graph)
        return Artifacts(self.name, {"module": text}, signature=signature, native=graph)

    def run(self, artifacts: Artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Each output an array of its own, as a kernel's are: NumPy's value of a graph that
        returns its input (or a reshape or transpose of it) is that array or a view of it,
        and the determinism oracle's aliasing check then failed here too, so a runtime that
        reused its output buffers was attributed to the frontend."""
        from .interpret import evaluate_graph

        return [np.array(a, copy=True) for a in evaluate_graph(artifacts.native, arrays)]


#: The variants but ``+mlir-runtime`` run at -O0 only, each made by its ``Target`` method.
_AT_O0 = {
    "generic-cpu": "with_generic_cpu",
    "poison-checks": "with_poison_checks",
    "copied-gathers": "with_copied_gathers",
    "plain-libm": "with_plain_libm",
    "optimized-codegen": "with_optimized_codegen",
}

#: The suffixes of our CPU targets' triage variants: ``+mlir-runtime`` (MLIR's runtime helpers
#: call the kernel), ``+generic-cpu`` (LLVM compiles it for a generic x86-64 CPU) and
#: ``+poison-checks`` (an operation whose result would be poison aborts instead, saying so),
#: ``+copied-gathers`` (cpu-vector's gathers fix-up replaced by one that copies the views),
#: ``+plain-libm`` (the libm stage replaced by one written apart) and ``+optimized-codegen`` (no
#: IR passes, but the code generation of an optimized target).
VARIANT_SUFFIXES = ("mlir-runtime", *_AT_O0)

BACKENDS: dict[str, Backend] = {}
#: Backends whose names take an ``@O<n>`` suffix: factory(level) -> backend.
_LEVELED: dict[str, Callable[[int], Backend]] = {}
#: Backends that parse their own variant names (``NAME+option@O<n>``): factory(name) -> backend.
_FAMILIES: dict[str, Callable[[str], Backend]] = {}


def register(
    backend: Backend,
    leveled: Callable[[int], Backend] | None = None,
    variants: Callable[[str], Backend] | None = None,
) -> Backend:
    """Add ``backend``; ``leveled(n)`` builds its ``NAME@O<n>`` variants, or ``variants(name)``
    any variant name it parses itself (``iree-cpu+no-fusion@O2``)."""
    if backend.name in BACKENDS:
        raise ValueError(f"backend {backend.name!r} is already registered")
    BACKENDS[backend.name] = backend
    if leveled is not None:
        _LEVELED[backend.name] = leveled
    if variants is not None:
        _FAMILIES[backend.name] = variants
    return backend


def unregister(name: str) -> None:
    """Remove a backend (for tests that register a toy one)."""
    BACKENDS.pop(name, None)
    _LEVELED.pop(name, None)
    _FAMILIES.pop(name, None)


def names(include_aliases: bool = True) -> list[str]:
    """Every backend name a user can pass as ``target=``."""
    return list(BACKENDS) + (list(pipelines.ALIASES) if include_aliases else [])


def cpu_targets(include_aliases: bool = True) -> list[str]:
    """Our MLIR CPU targets (each runs here): the ones the demo and the tests loop over."""
    ours = [n for n, b in BACKENDS.items() if isinstance(b, MlirCpuBackend)]
    return ours + (list(pipelines.ALIASES) if include_aliases else [])


def get(name: str) -> Backend:
    """The backend for ``name``; a ValueError listing the known ones otherwise.

    Besides registered names and aliases, our CPU targets take variant suffixes (for triage):
    ``NAME@O<n>`` (LLVM's level), ``NAME[:stage]`` / ``NAME[:stage#k]`` (the target's stages up
    to ``stage``, or its first ``k`` steps, then the minimal completion, at -O0;
    ``NAME[:module]`` is the module as built, completed), ``NAME+mlir-runtime`` (called
    through MLIR's runtime helpers), ``NAME+generic-cpu`` (JIT-compiled for a generic
    x86-64 CPU, at -O0), ``NAME+poison-checks`` (operations that would compute poison abort
    instead, saying which: compiler/lower/poison.py; at -O0) and ``NAME+optimized-codegen``
    (no LLVM IR passes, the JIT's optimized code generation: at -O0, functions not optnone).
    ``mlir:<entries>`` names an upstream MLIR pipeline variant (``compiler/mlir_variants/``),
    with the same suffixes; a backend registered with ``variants`` parses its own
    (``iree-cpu[+option...][@O<n>]``, ``compiler/iree.py``).
    """
    if isinstance(name, str) and name.startswith("mlir:"):
        from . import mlir_variants

        return mlir_variants.backend(name)
    if isinstance(name, str) and name in BACKENDS:
        return BACKENDS[name]  # a registered name, variants listed by name included
    base, stage, steps, given, suffix = pipelines.parse_variant(name)
    key, level = pipelines.unalias(base, given)
    if stage is not None:
        level = given  # a prefix runs at -O0 unless told (cpu[:bufferized] as cpu-vector's)
    if key not in BACKENDS:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(names())}")
    if key in _FAMILIES and stage is None:
        return _cached((name,), lambda: _FAMILIES[key](name))
    if stage is None and not suffix:
        if level is None:
            return BACKENDS[key]
        if key not in _LEVELED:
            raise ValueError(f"target {key!r} has no optimization levels (got {name!r})")
        return _cached((key, level), lambda: _LEVELED[key](level))
    backend = BACKENDS[key]
    if not isinstance(backend, MlirCpuBackend) or suffix not in ("", *VARIANT_SUFFIXES):
        raise ValueError(f"target {key!r} has no variant {name!r}")

    def make() -> Backend:
        target = backend.target
        if stage is not None:
            target = target.prefix(stage, steps)
        if level is not None:
            target = target.with_opt_level(level)
        if suffix in _AT_O0:
            if given not in (None, 0):
                raise ValueError(f"{name!r}: +{suffix} runs at -O0 only")
            target = getattr(target, _AT_O0[suffix])()
        return MlirCpuBackend(target, runtime="mlir" if suffix == "mlir-runtime" else "ours")

    return _cached((name,), make)


_VARIANTS: dict[tuple, Backend] = {}


def _cached(key: tuple, make: Callable[[], Backend]) -> Backend:
    if key not in _VARIANTS:
        _VARIANTS[key] = make()
    return _VARIANTS[key]


def _ask(backend: Backend, method: str) -> str | None:
    """``backend.<method>()`` (None if it has no such method); a raising plugin is a reason."""
    call = getattr(backend, method, None)
    if call is None:
        return None
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - one broken backend must not hide the others
        return f"{method}() raised {type(error).__name__}: {error}"


def why_not(name: str) -> str | None:
    """Why ``name`` (any variant) cannot be used here: unknown, or unavailable; None if it can.
    The one check made before anything runs on it (the CLI's arguments, a corpus replay)."""
    try:
        backend = get(name)
    except (ValueError, TypeError) as error:
        return str(error)
    reason = _ask(backend, "unavailable")
    return f"{name} is unavailable here: {reason}" if reason else None


def describe() -> list[dict[str, Any]]:
    """Every registered backend: name, description, why it is unavailable (or None) and what it
    cannot do here though available (``limits``, or None)."""
    return [
        {
            "name": b.name,
            "description": b.description,
            "unavailable": _ask(b, "unavailable"),
            "limits": _ask(b, "limits"),
        }
        for b in BACKENDS.values()
    ]


for _target in pipelines.TARGETS.values():
    register(
        MlirCpuBackend(_target),
        leveled=lambda level, _t=_target: MlirCpuBackend(_t.with_opt_level(level)),
    )
register(GraphInterpreterBackend())

__all__ = [
    "BACKENDS",
    "Backend",
    "GraphInterpreterBackend",
    "MlirCpuBackend",
    "cpu_targets",
    "describe",
    "get",
    "names",
    "register",
    "why_not",
]

from .gpu import GpuEmulatedBackend, GpuNvptxBackend  # noqa: E402 - cheap: MLIR and CUDA load later

register(GpuNvptxBackend())
register(GpuEmulatedBackend())

from .xla import XlaCpuBackend  # noqa: E402 - cheap: JAX loads on first compile

register(XlaCpuBackend(), leveled=XlaCpuBackend)

from . import iree  # noqa: E402 - cheap: IREE loads on first compile; never a default backend

for _name in iree.LISTED:
    register(iree.backend(_name), variants=iree.backend if _name == iree.NAME else None)
