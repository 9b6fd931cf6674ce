"""Named, printable pipeline stages and the CPU targets that chain them.

Every stage has a name and either an ``mlir-opt`` pass string or a Python transformation (the
BLAS substitution); the driver runs them in order, keeps each stage's output text, and records the
command that reproduces each stage from the previous stage's text with the project's tools. A
target is a list of stages plus LLVM's optimization level for the JIT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

# Fusion on tensors. linalg.matmul is not elementwise, so it survives (with tensor.reshape, not
# collapse/expand_shape, next to it) until the BLAS substitution can see it.
OPTIMIZE = "builtin.module(canonicalize, cse, linalg-fuse-elementwise-ops, canonicalize, cse)"

# Tensors -> buffers. Function arguments are already memrefs (the kernel ABI), so no boundary
# bufferization is needed; temporaries are freed by the ownership-based deallocation pipeline.
BUFFERIZE = (
    "builtin.module(eliminate-empty-tensors, one-shot-bufferize, canonicalize, cse, "
    "func.func(buffer-hoisting, buffer-loop-hoisting), "
    "buffer-deallocation-pipeline, convert-bufferization-to-memref, canonicalize)"
)

# Buffers -> LLVM dialect through plain loops.
LOWER = (
    "builtin.module(func.func(convert-linalg-to-loops), canonicalize, "
    "func.func(loop-invariant-code-motion), lower-affine, convert-scf-to-cf, "
    "expand-strided-metadata, lower-affine, finalize-memref-to-llvm, convert-math-to-llvm, "
    "convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, "
    "convert-cf-to-llvm, reconcile-unrealized-casts, canonicalize)"
)


def _blas_substitute(module: Any) -> None:
    from .lower.blas import substitute

    substitute(module)


@dataclass(frozen=True)
class Stage:
    """One named step from module text to module text."""

    name: str
    pipeline: str = ""  # an mlir-opt pass pipeline, or "" for a Python stage
    transform: Callable[[Any], None] | None = None  # mutates a parsed module in place
    description: str = ""

    @property
    def layer(self) -> str:
        """Where a failure of this stage lives: an MLIR pass pipeline or this project's code."""
        return "mlir" if self.pipeline else "project"

    def run(self, module: Any) -> None:
        """Run on a parsed ``mlir.ir.Module`` (inside its context)."""
        if self.transform is not None:
            self.transform(module)
            module.operation.verify()
            return
        from mlir import passmanager

        passmanager.PassManager.parse(self.pipeline).run(module.operation)


OPTIMIZED = Stage("optimized", OPTIMIZE, description="fusion on tensors")
BUFFERIZED = Stage("bufferized", BUFFERIZE, description="tensors -> buffers")
BLAS = Stage(
    "blas",
    transform=_blas_substitute,
    description="float matmuls -> OpenBLAS gemm helper calls (compiler/lower/blas.py)",
)
LOWERED = Stage("lowered", LOWER, description="buffers -> loops -> LLVM dialect")
STAGES: dict[str, Stage] = {s.name: s for s in (OPTIMIZED, BUFFERIZED, BLAS, LOWERED)}

#: The pseudo-stages around the pipeline: the module as built, and LLVM's JIT at the end.
BUILT, LLVM = "module", "llvm"


@dataclass(frozen=True)
class Target:
    """A named CPU backend: which stages run, and LLVM's optimization level."""

    name: str
    stages: tuple[Stage, ...]
    opt_level: int = 3
    description: str = ""

    @property
    def fused(self) -> bool:
        return any(s.name == "optimized" for s in self.stages)

    @property
    def blas(self) -> bool:
        return any(s.name == "blas" for s in self.stages)

    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise ValueError(f"target {self.name} has no stage {name!r}: {self.stage_names()}")

    def with_opt_level(self, level: int) -> Target:
        base = self.name.split("@")[0]
        return replace(self, name=f"{base}@O{level}", opt_level=level)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "cpu-loops",
            (OPTIMIZED, BUFFERIZED, LOWERED),
            description="fused linalg lowered to loops",
        ),
        Target(
            "cpu-blas",
            (OPTIMIZED, BUFFERIZED, BLAS, LOWERED),
            description="fused, matmuls as OpenBLAS gemm calls",
        ),
        Target("cpu-loops-unfused", (BUFFERIZED, LOWERED), description="cpu-loops without fusion"),
        Target(
            "cpu-blas-unfused", (BUFFERIZED, BLAS, LOWERED), description="cpu-blas without fusion"
        ),
    )
}
ALIASES = {"cpu": "cpu-blas"}
DEFAULT_TARGET = "cpu"


def split_level(name: str) -> tuple[str, int | None]:
    """``NAME@O<n>`` -> (NAME, n); a ValueError for a bad level."""
    if not isinstance(name, str):
        raise TypeError(f"target must be a string, got {type(name).__name__}")
    base, _, level = name.partition("@")
    if not level:
        return base, None
    if level not in ("O0", "O1", "O2", "O3"):
        raise ValueError(f"unknown optimization level {level!r} in target {name!r} (O0-O3)")
    return base, int(level[1])


def resolve(name: str) -> Target:
    """The CPU Target for ``name`` (aliases, ``NAME@O<n>``); a ValueError naming the known ones."""
    base, level = split_level(name)
    key = ALIASES.get(base, base)
    if key not in TARGETS:
        known = ", ".join([*TARGETS, *ALIASES])
        raise ValueError(f"unknown target {name!r}; known targets: {known}")
    target = TARGETS[key]
    return target if level is None else target.with_opt_level(level)


__all__ = [
    "ALIASES",
    "BUFFERIZE",
    "BUILT",
    "DEFAULT_TARGET",
    "LLVM",
    "LOWER",
    "OPTIMIZE",
    "STAGES",
    "TARGETS",
    "Stage",
    "Target",
    "resolve",
    "split_level",
]
