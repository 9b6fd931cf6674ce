"""Named, printable pipeline stages and the CPU targets that chain them.

Every stage has a name and either an ``mlir-opt`` pass string or a Python transformation (the
BLAS substitution); the driver runs them in order, keeps each stage's output text, and records the
command that reproduces each stage from the previous stage's text with the project's tools. A
target is a list of stages plus LLVM's optimization level for the JIT.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from . import workarounds
from .threadlocal import setting

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


# The minimal completion: whatever level a module is at (tensors, buffers, loops), take it to LLVM
# with no fusion, no buffer optimization and no deallocation (leaks are fine for one run), only
# the conversions each level needs. Attribution runs a prefix of a target's stages and then this,
# to ask "is the result already wrong after that stage?".
COMPLETE = (
    "builtin.module(one-shot-bufferize, bufferization-lower-deallocations, "
    "convert-bufferization-to-memref, func.func(convert-linalg-to-loops), expand-strided-metadata, "
    "lower-affine, convert-scf-to-cf, finalize-memref-to-llvm, convert-math-to-llvm, "
    "convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, convert-func-to-llvm, "
    "convert-cf-to-llvm, reconcile-unrealized-casts)"
)


def split_top_level(text: str) -> list[str]:
    """Split a pass list on commas outside (), {}, [] and quotes."""
    parts, depth, start, quote = [], 0, 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def pipeline_steps(pipeline: str) -> list[str]:
    """The single steps of ``builtin.module(a, func.func(b, c))``: ``a``, ``func.func(b)``,
    ``func.func(c)`` (a pipeline alias such as ``buffer-deallocation-pipeline`` is one step)."""
    inner = pipeline.strip()
    if inner.startswith("builtin.module(") and inner.endswith(")"):
        inner = inner[len("builtin.module(") : -1]
    steps: list[str] = []
    for element in split_top_level(inner):
        head, paren, rest = element.partition("(")
        if paren and "{" not in head and rest.endswith(")") and "." in head:
            steps.extend(f"{head}({s})" for s in split_top_level(rest[:-1]))
        else:
            steps.append(element)
    return steps


def join_steps(steps: list[str]) -> str:
    return "builtin.module(" + ", ".join(steps) + ")"


def step_name(step: str) -> str:
    """The pass a step runs (``func.func(canonicalize)`` runs ``canonicalize``)."""
    head, paren, rest = step.partition("(")
    if paren and "." in head and rest.endswith(")"):
        return step_name(rest[:-1])
    return step.split("{")[0].strip()


def _blas_substitute(module: Any) -> None:
    from .lower.blas import substitute

    substitute(module)


_blas_substitute.source = "compiler/lower/blas.py"  # type: ignore[attr-defined]


def _libm_calls(module: Any) -> bool:
    from .lower.libm import replace

    return replace(module) > 0


_libm_calls.source = "compiler/lower/libm.py"  # type: ignore[attr-defined]


def _plain_libm_calls(module: Any) -> None:
    from .lower.libm import plain

    plain(module)


_plain_libm_calls.source = "compiler/lower/libm.py"  # type: ignore[attr-defined]


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

    @property
    def source(self) -> str:
        """The file of this project that implements a Python stage ("" if not known), so that
        a failure attributed to the stage names the code to read."""
        return str(getattr(self.transform, "source", "") or "")

    def run(self, module: Any) -> bool:
        """Run on a parsed ``mlir.ir.Module`` (inside its context); the output is verified once
        at the end, or after every pass under ``verify_each()`` (see ``verifying_each``). False
        when a Python stage says it changed nothing (its transform returned False): the module
        is its input, and its text need not be printed again."""
        if self.transform is not None:
            if self.transform(module) is False:
                return False
        else:
            pass_manager(self.pipeline, module.context).run(module.operation)
            if verifying_each():
                return True  # the pass manager verified after the last pass
        module.operation.verify()
        return True


_PASS_MANAGERS = threading.local()
_VERIFY = threading.local()


def verify_each() -> Any:
    """Inside this block (this thread), pipeline stages verify the IR after every pass, as
    ``mlir-opt`` does, and so name the pass whose output does not verify. Outside it a stage
    verifies its output once, at its end: on the small modules a fuzzing session compiles,
    verifying after each of the lowering's ~17 passes was half the pipeline's time and about
    15% of a worker's. Invalid IR is still caught at the stage's end; the driver then runs the
    stage again under this block, so the error reported is the one that names the pass; and a
    crash is re-run under it (the runner), as its ``mlir-opt`` reproducer is."""
    return setting(_VERIFY, "each", True, False)


def verifying_each() -> bool:
    """Whether this thread's pipeline stages verify after every pass (``verify_each``)."""
    return bool(getattr(_VERIFY, "each", False))


def pass_manager(pipeline: str, context: Any) -> Any:
    """A pass manager for ``pipeline`` in ``context``, kept for the thread's next run there, as
    ``mlir-opt`` keeps one for every input of a ``--split-input-file`` run: a new one
    initializes its passes again on each run (canonicalize collects every dialect's patterns,
    each conversion builds its own), about 20% of a small module's time in the passes. One
    context's pass managers are kept at a time: the driver's thread changes context every
    ``driver.CONTEXT_USES`` compiles, or for each ``fresh()`` one. It verifies after every
    pass only under ``verify_each()``."""
    from mlir import passmanager

    cache = getattr(_PASS_MANAGERS, "cache", None)
    if cache is None or cache[0] is not context:
        cache = _PASS_MANAGERS.cache = (context, {})
    key = (pipeline, verifying_each())
    manager = cache[1].get(key)
    if manager is None:
        manager = cache[1][key] = passmanager.PassManager.parse(pipeline, context)
        manager.enable_verifier(key[1])
    return manager


def target_features(module: Any, features: tuple[str, ...], cpu: str | None = None) -> None:
    """Every ``llvm.func`` of the lowered ``module`` compiled with ``features`` (LLVM's
    ``+name``/``-name``) and, where given, for ``cpu`` instead of this one."""
    from mlir import ir

    listed = ", ".join(f'"{f}"' for f in features)
    attribute = ir.Attribute.parse(f"#llvm.target_features<[{listed}]>")
    for op in module.body.operations:
        if op.operation.name == "llvm.func":
            if cpu is not None:
                op.operation.attributes["target_cpu"] = ir.StringAttr.get(cpu)
            op.operation.attributes["target_features"] = attribute


#: The host CPU features a kernel computing in bfloat16 is compiled without (workaround
#: ``bf16-rounding-in-integers``): their vcvtneps2bf16 flushes bfloat16 subnormals, and LLVM
#: selects it for the truncations it makes itself (a bfloat16 maximum narrowed from float32).
WITHOUT_BF16_CONVERSIONS = ("-avx512bf16", "-avxneconvert")


def drops_bf16_conversions(*texts: str) -> bool:
    """Is a module (lowered from ``texts``; any module, given none) JIT-compiled without
    ``WITHOUT_BF16_CONVERSIONS``: one with bfloat16 in it, while the workaround
    ``bf16-rounding-in-integers`` is on (every CPU target's JIT, its stored ``llvm`` command,
    and gpu-emulated's JIT, which gives no text)."""
    enabled = workarounds.enabled("bf16-rounding-in-integers")
    return enabled and (not texts or any("bf16" in text for text in texts))


def without_bf16_conversions(module: Any, *texts: str) -> None:
    """Every function of the lowered ``module`` (of ``texts``) compiled without
    ``WITHOUT_BF16_CONVERSIONS`` where ``drops_bf16_conversions(*texts)``."""
    if drops_bf16_conversions(*texts):
        target_features(module, WITHOUT_BF16_CONVERSIONS)


def _generic_cpu(module: Any) -> None:
    target_features(module, ("+sse2",), cpu="x86-64")


#: The ``NAME+generic-cpu`` variants' last stage (for triage, at -O0): the same LLVM IR,
#: compiled for a generic x86-64 CPU instead of this one. A wrong answer that goes away there
#: lives in LLVM's code generation for this CPU's features (``fptrunc float to bfloat`` as
#: ``vcvtneps2bf16`` flushed bfloat16 subnormals on AVX512-BF16 CPUs).
GENERIC_CPU = Stage(
    "generic-cpu",
    transform=_generic_cpu,
    description="every function compiled for a generic x86-64 CPU (target_cpu, target_features)",
)


def _poison_checks(module: Any) -> None:
    from .lower.poison import guard

    guard(module)


_poison_checks.source = "compiler/lower/poison.py"  # type: ignore[attr-defined]

#: The ``NAME+poison-checks`` variants' last stage (for triage, at -O0): every operation of the
#: lowered module whose result is poison on some operands (an ``fptoui`` of a negative float, a
#: shift by the width) checks them first and aborts, saying which, if they are (compiler/lower/
#: poison.py). A wrong answer that depends on the CPU or on LLVM's optimizations is then told
#: apart from LLVM's bug: poison is the IR's, and whoever wrote it.
POISON_CHECKS = Stage(
    "poison-checks",
    transform=_poison_checks,
    description="every poison-producing operation checks its operands first, or aborts",
)

#: The discardable attribute ``OPTIMIZED_CODEGEN`` puts on a lowered module's functions, which
#: ``runtime.unoptimized`` leaves unmarked.
CODEGEN_OPTIMIZED_ATTRIBUTE = "compiler.codegen_optimized"


def defined_functions(module: Any) -> list[Any]:
    """The ``llvm.func`` operations of a lowered ``module`` that have a body (not the
    declarations of external functions)."""
    return [
        op.operation
        for op in module.body.operations
        if op.operation.name == "llvm.func" and len(op.operation.regions[0].blocks)
    ]


def _optimized_codegen(module: Any) -> None:
    from mlir import ir

    for function in defined_functions(module):
        function.attributes[CODEGEN_OPTIMIZED_ATTRIBUTE] = ir.UnitAttr.get()


#: The ``NAME+optimized-codegen`` variants' last stage (for triage, at -O0): the same LLVM IR,
#: without LLVM's IR passes (-O0), its functions left unmarked by ``optnone``, so the JIT
#: generates their code as it does for an optimized target (at -O2, whatever the level: an
#: upstream bug, ``runtime.JIT_CODEGEN_ARGUMENTS``). A wrong answer at -O3 that this variant
#: shows too lives in LLVM's code generation, not in its IR passes (an X86 lowering of
#: ``llvm.maximum`` that returned the number for a signaling NaN).
OPTIMIZED_CODEGEN = Stage(
    "optimized-codegen",
    transform=_optimized_codegen,
    description="every function left to optimized code generation (not marked optnone)",
)

OPTIMIZED = Stage("optimized", OPTIMIZE, description="fusion on tensors")
BUFFERIZED = Stage("bufferized", BUFFERIZE, description="tensors -> buffers")
BLAS = Stage(
    "blas",
    transform=_blas_substitute,
    description="float matmuls -> OpenBLAS gemm helper calls (compiler/lower/blas.py)",
)
#: Before every CPU target's lowering, and in each completion: libm's expm1 and log1p, where
#: convert-math-to-llvm would write exp(x) - 1 and log(1 + x) (workaround ``expm1-log1p-libm``).
LIBM = Stage(
    "libm",
    transform=_libm_calls,
    description="math.expm1/log1p -> libm calls, vectors lane by lane (compiler/lower/libm.py)",
)
LOWERED = Stage("lowered", LOWER, description="buffers -> loops -> LLVM dialect")
COMPLETED = Stage("complete", COMPLETE, description="the minimal completion to LLVM dialect")
STAGES: dict[str, Stage] = {s.name: s for s in (OPTIMIZED, BUFFERIZED, BLAS, LIBM, LOWERED)}

#: The pseudo-stages around the pipeline: the module as built, and LLVM's JIT at the end.
BUILT, LLVM = "module", "llvm"


# --------------------------------------------------------------------------------------------
# cpu-vector (compiler/vector/): tiled, vectorized linalg with polynomial exp/log/tanh and BLAS.
# Python stages (*) are hooks into compiler.vector; the transform stages are plain pass
# pipelines because the planning stage before each writes its schedule into the module
# (compiler/vector/schedule.py), so mlir-opt alone reproduces them.

_CUT = BUFFERIZE.index("buffer-deallocation-pipeline")
BUFFERIZE_ALLOCATE = BUFFERIZE[:_CUT].rstrip(", ") + ")"
BUFFERIZE_DEALLOCATE = "builtin.module(" + BUFFERIZE[_CUT:]
VECTOR_INLINE = "builtin.module(inline, symbol-dce, canonicalize, cse)"
VECTOR_ROWS = "builtin.module(transform-interpreter, symbol-dce, canonicalize, cse)"
# lower-vector-mask before bufferization: the ownership-based deallocation puts a constant into
# vector.mask regions ("expects only one operation to mask"; llvm-project #99662).
VECTORIZE = (
    "builtin.module(transform-interpreter, symbol-dce, func.func(lower-vector-mask), "
    "canonicalize, cse)"
)
VECTOR_LOWER = (
    "builtin.module(func.func(lower-vector-mask), scf-forall-to-for, "
    "convert-vector-to-scf{full-unroll=true target-rank=1}, "
    "func.func(lower-vector-multi-reduction{lowering-strategy=inner-reduction}), "
    "func.func(convert-linalg-to-loops), canonicalize, cse, "
    "func.func(loop-invariant-code-motion), lower-affine, expand-strided-metadata, lower-affine, "
    "convert-vector-to-llvm{reassociate-fp-reductions=true vector-contract-lowering=outerproduct "
    "vector-transpose-lowering=shuffle1d}, "
    "finalize-memref-to-llvm, convert-scf-to-cf, convert-math-to-llvm, convert-math-to-libm, "
    "convert-vector-to-llvm, convert-arith-to-llvm, convert-ub-to-llvm, convert-index-to-llvm, "
    "convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts, canonicalize)"
)
# COMPLETE plus what vectors and schedules need (symbol-dce drops a schedule not yet applied), in
# two parts: the buffers, then (after the gathers fix-up, a legalization the lowering needs)
# the rest.
VECTOR_COMPLETE_BUFFERS = (
    "builtin.module(symbol-dce, func.func(lower-vector-mask), one-shot-bufferize, "
    "bufferization-lower-deallocations, convert-bufferization-to-memref)"
)
VECTOR_COMPLETE = (
    "builtin.module(scf-forall-to-for, convert-vector-to-scf{full-unroll=true target-rank=1}, "
    "func.func(lower-vector-multi-reduction), func.func(convert-linalg-to-loops), "
    "expand-strided-metadata, lower-affine, convert-vector-to-llvm, convert-scf-to-cf, "
    "finalize-memref-to-llvm, convert-math-to-llvm, convert-math-to-libm, convert-vector-to-llvm, "
    "convert-arith-to-llvm, convert-ub-to-llvm, convert-index-to-llvm, convert-func-to-llvm, "
    "convert-cf-to-llvm, reconcile-unrealized-casts)"
)


def _vector_hook(module_name: str, function: str) -> Callable[[Any], None]:
    """A Python stage implemented in ``compiler.vector.<module_name>`` (imported on first use)."""

    def run(module: Any) -> None:
        import importlib

        getattr(importlib.import_module(f".vector.{module_name}", __package__), function)(module)

    # (named for the in-process stage memo's key too: as ``_vector_hook.<locals>.run``, two
    # hooks in stages of one name shared their outputs)
    run.__name__ = run.__qualname__ = f"{module_name}.{function}"
    run.source = f"compiler/vector/{module_name}.py"  # type: ignore[attr-defined]
    return run


def python_stage_source(name: str) -> str | None:
    """The file implementing the Python stage ``name`` of any CPU target (None: no such
    stage), for a finding whose layer is that stage."""
    for target in TARGETS.values():
        for stage in (*target.stages, *target.completion):
            if stage.name == name and not stage.pipeline and stage.transform is not None:
                return stage.source
    return None


VECTOR_STAGES: tuple[Stage, ...] = (
    OPTIMIZED,
    Stage("vecmath", transform=_vector_hook("vecmath", "rewrite"),
          description="exp/log/tanh on f32/f64 -> polynomial function calls; abs(int) -> max"),
    Stage("inlined", VECTOR_INLINE, description="the polynomial functions inlined"),
    Stage("views", transform=_vector_hook("fusion", "views"),
          description="reshapes -> indexing maps or expand/collapse_shape views"),
    Stage("rows-planned", transform=_vector_hook("schedule", "plan_rows"),
          description="softmax/layer-norm row groups tagged, their schedule appended"),
    Stage("rows-fused", VECTOR_ROWS, description="row schedule applied: one scf.forall per row"),
    Stage("vector-planned", transform=_vector_hook("schedule", "plan_vectors"),
          description="every linalg op but BLAS matmuls tagged, tile+vectorize schedule appended"),
    Stage("vectorized", VECTORIZE, description="tiled and (masked) vectorized, masks lowered"),
    Stage("bufferized", BUFFERIZE_ALLOCATE, description="tensors -> buffers (no deallocation)"),
    Stage("gathers", transform=_vector_hook("gathers", "strided_gathers"),
          description="gathers from strided views: linear indices -> physical offsets"),
    Stage("temporaries", transform=_vector_hook("memory", "temporaries"),
          description="loop allocations hoisted, static temporaries as module globals (capped)"),
    Stage("deallocated", BUFFERIZE_DEALLOCATE, description="ownership-based deallocation"),
    BLAS,
    LIBM,
    Stage("lowered", VECTOR_LOWER, description="vectors, buffers, loops -> LLVM dialect"),
)  # fmt: skip
#: ``NAME+copied-gathers``'s gathers fix-up (``Target.with_copied_gathers``).
COPIED_GATHERS = _vector_hook("gathers", "copied_gathers")
COPIED_GATHERS_FREED = _vector_hook("gathers", "copied_gathers_freed")
#: What finishes a prefix of cpu-vector: its gathers fix-up is no optimization but a
#: legalization (convert-vector-to-llvm cannot lower a gather from a strided view), so a prefix
#: that stops before it keeps it; without it every prefix past vectorization failed alike on
#: a strided gather, and bisection blamed the vectorizer.
VECTOR_COMPLETED = (
    Stage("complete-buffers", VECTOR_COMPLETE_BUFFERS, description="cpu-vector's completion: "
          "buffers"),
    Stage("complete-gathers", transform=_vector_hook("gathers", "strided_gathers"),
          description="cpu-vector's completion: the gathers fix-up"),
    LIBM,
    Stage("complete", VECTOR_COMPLETE, description="cpu-vector's completion: to LLVM dialect"),
)  # fmt: skip


@dataclass(frozen=True)
class Target:
    """A named CPU backend: which stages run, and LLVM's optimization level."""

    name: str
    stages: tuple[Stage, ...]
    opt_level: int = 3
    description: str = ""
    # What finishes a prefix of this target (``prefix``); empty: COMPLETED. A target whose stages
    # leave other dialects behind (vectors, transform schedules) brings its own.
    completion: tuple[Stage, ...] = ()

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

    def with_generic_cpu(self) -> Target:
        """``NAME+generic-cpu``: the same stages, then ``GENERIC_CPU``, at -O0 (where the
        JIT honours the functions' target; at -O3 it did not: the probe is for triage)."""
        base = self.name.split("@")[0]
        stages = (*self.stages, GENERIC_CPU)
        return replace(self, name=f"{base}+generic-cpu@O0", stages=stages, opt_level=0)

    def with_poison_checks(self) -> Target:
        """``NAME+poison-checks``: the same stages, then ``POISON_CHECKS``, at -O0."""
        base = self.name.split("@")[0]
        stages = (*self.stages, POISON_CHECKS)
        return replace(self, name=f"{base}+poison-checks@O0", stages=stages, opt_level=0)

    def with_optimized_codegen(self) -> Target:
        """``NAME+optimized-codegen``: the same stages, then ``OPTIMIZED_CODEGEN``, at -O0."""
        base = self.name.split("@")[0]
        stages = (*self.stages, OPTIMIZED_CODEGEN)
        return replace(self, name=f"{base}+optimized-codegen@O0", stages=stages, opt_level=0)

    def _with_swapped(self, suffix: str, swap: Callable[[Stage], Stage]) -> Target:
        """``NAME+suffix``: the same stages, at -O0, each (its own and its completion's)
        passed through ``swap``, which returns a stage to replace or the stage itself."""
        base = self.name.split("@")[0]
        return replace(
            self, name=f"{base}+{suffix}@O0", stages=tuple(map(swap, self.stages)),
            completion=tuple(map(swap, self.completion)), opt_level=0,
        )  # fmt: skip

    def with_copied_gathers(self) -> Target:
        """``NAME+copied-gathers``: the same stages, at -O0, each gathers fix-up (cpu-vector's
        ``gathers``, its completion's ``complete-gathers``) reading contiguous copies of the
        strided views instead (``gathers.copied_gathers``): a second way to complete a prefix,
        for triage (``Attributor``)."""

        def swap(s: Stage) -> Stage:
            if s.transform is None or s.transform.__name__ != "gathers.strided_gathers":
                return s
            # A completion's copies are freed by the fix-up (no deallocation follows).
            freed = s.name == "complete-gathers"
            return replace(s, transform=COPIED_GATHERS_FREED if freed else COPIED_GATHERS)

        return self._with_swapped("copied-gathers", swap)

    def with_plain_libm(self) -> Target:
        """``NAME+plain-libm``: the same stages, at -O0, each ``libm`` stage (its own and its
        completion's) replaced by ``libm.plain`` (written apart: its own table of names, its own
        vector helper): a second way to complete a prefix, for triage, as ``+copied-gathers``
        is."""
        return self._with_swapped(
            "plain-libm",
            lambda s: replace(s, transform=_plain_libm_calls) if s.transform is _libm_calls else s,
        )

    def prefix(self, stage: str, steps: int | None = None) -> Target:
        """``NAME[:stage]`` (``NAME[:stage#k]``): this target's stages up to and including
        ``stage`` (of which only the first ``k`` steps), then the minimal completion, at -O0.
        ``NAME[:module]`` runs none of its stages: the module as built, completed."""
        names = self.stage_names()
        if stage != BUILT and stage not in names:
            raise ValueError(f"target {self.name} has no stage {stage!r}: {names}")
        kept = [] if stage == BUILT else list(self.stages[: names.index(stage) + 1])
        label = stage
        if steps is not None:
            last = kept[-1] if kept else None
            if last is None or not last.pipeline:
                raise ValueError(f"stage {stage!r} of {self.name} has no pass steps")
            passes = pipeline_steps(last.pipeline)
            if not 0 <= steps <= len(passes):
                raise ValueError(f"stage {stage!r} has {len(passes)} steps, not {steps}")
            kept[-1] = replace(last, name=f"{stage}#{steps}", pipeline=join_steps(passes[:steps]))
            label = f"{stage}#{steps}"
            if steps == 0:
                kept.pop()
        base = self.name.split("@")[0]
        completion = self.completion or (LIBM, COMPLETED)
        return Target(f"{base}[:{label}]", (*kept, *completion), 0, f"{self.name} up to {label}")


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "cpu-loops",
            (OPTIMIZED, BUFFERIZED, LIBM, LOWERED),
            description="fused linalg lowered to loops",
        ),
        Target(
            "cpu-blas",
            (OPTIMIZED, BUFFERIZED, BLAS, LIBM, LOWERED),
            description="fused, matmuls as OpenBLAS gemm calls",
        ),
        Target(
            "cpu-loops-unfused", (BUFFERIZED, LIBM, LOWERED), description="cpu-loops without fusion"
        ),
        Target(
            "cpu-blas-unfused",
            (BUFFERIZED, BLAS, LIBM, LOWERED),
            description="cpu-blas without fusion",
        ),
        Target(
            "cpu-vector",
            VECTOR_STAGES,
            description="fused, tiled and vectorized (masked), polynomial exp/log/tanh, BLAS",
            completion=VECTOR_COMPLETED,
        ),
    )
}
# cpu-vector: the fastest (bench/compiler.py); every default fuzz session runs it (at -O0, and
# at -O3 on a sampled share of cases). ``cpu``, the default, is cpu-vector at LLVM -O2: its
# kernels ran as fast as -O3's on every bench case (the same bits), and its first call of the
# GPT-2 block took 0.85 s against 1.1 s (jax.jit: 0.43 s); LLVM's -O3 stays its own backend.
ALIASES = {"cpu": "cpu-vector@O2"}
DEFAULT_TARGET = "cpu"


def unalias(base: str, level: int | None) -> tuple[str, int | None]:
    """``(NAME, level)`` of an alias's target (a level given with the alias wins: ``cpu@O3``
    is ``cpu-vector@O3``); any other name as it is."""
    if base not in ALIASES:
        return base, level
    target, default = split_level(ALIASES[base])
    return target, default if level is None else level


def parse_variant(name: str) -> tuple[str, str | None, int | None, int | None, str]:
    """``NAME[:stage#k]+suffix@O<n>`` -> (NAME, stage, k, n, suffix); each part optional, the
    suffix also after the level (``NAME@O<n>+suffix``, as the ``mlir:`` variants read it)."""
    if not isinstance(name, str):
        raise TypeError(f"target must be a string, got {type(name).__name__}")
    base, at, tail = name.partition("@")
    if "+" in tail:
        level_text, _, suffix_text = tail.partition("+")
        name = f"{base}+{suffix_text}{at}{level_text}"
    rest, level = split_level(name)
    suffix = ""
    if "+" in rest:
        rest, suffix = rest.split("+", 1)
    rest, stage, steps = split_stage(rest, f"target {name!r}")
    return rest, stage, steps, level, suffix


def split_stage(rest: str, where: str) -> tuple[str, str | None, int | None]:
    """``NAME[:stage]`` / ``NAME[:stage#k]`` -> (NAME, stage, k); (rest, None, None) without
    a bracket. ``where`` names the whole name in errors."""
    if not (rest.endswith("]") and "[:" in rest):
        return rest, None, None
    rest, _, inside = rest[:-1].partition("[:")
    stage, _, count = inside.partition("#")
    if count and not count.isdigit():
        raise ValueError(f"bad step count {count!r} in {where}")
    return rest, stage, int(count) if count else None


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
    key, level = unalias(*split_level(name))
    if key not in TARGETS:
        known = ", ".join([*TARGETS, *ALIASES])
        raise ValueError(f"unknown target {name!r}; known targets: {known}")
    target = TARGETS[key]
    return target if level is None else target.with_opt_level(level)


__all__ = [
    "ALIASES",
    "BUFFERIZE",
    "BUILT",
    "COMPLETE",
    "DEFAULT_TARGET",
    "LLVM",
    "LOWER",
    "OPTIMIZE",
    "STAGES",
    "TARGETS",
    "Stage",
    "Target",
    "join_steps",
    "parse_variant",
    "pipeline_steps",
    "python_stage_source",
    "resolve",
    "split_level",
    "step_name",
    "target_features",
    "unalias",
    "verify_each",
    "verifying_each",
]
