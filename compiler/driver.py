"""The compile driver: a traced graph and a target in, every stage's IR and a native kernel out.

Compilation is separate from the runtime: ``compile_graph`` builds the module, runs each stage of
the target (each verified at its end), keeps each stage's output text and the command line that
reproduces that stage from the previous stage's text with the project's tools, and finally hands
the lowered module to LLVM through the runtime. Listeners hear about each stage *before* it runs,
so a process that dies inside a stage has said which one (the harness writes this down).
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import persist, tools, workarounds
from .errors import CompilerError
from .frontend.graph import Graph
from .lower import emit
from .pipelines import (
    BUILT,
    LLVM,
    Stage,
    Target,
    verify_each,
    verifying_each,
    without_bf16_conversions,
)
from .threadlocal import setting

#: Called as ``listener(backend, stage)`` before each stage (``module``, pipeline stages, ``llvm``).
STAGE_LISTENERS: list[Callable[[str, str], None]] = []


def notify(backend: str, stage: str) -> None:
    for listener in STAGE_LISTENERS:
        listener(backend, stage)


@dataclass
class Artifacts:
    """What a backend made of one program: each stage's text (in order, the first being the
    module as built), the command reproducing each stage from the previous one's saved text, and
    the native handle the backend runs (not serializable)."""

    backend: str
    stages: dict[str, str]
    commands: dict[str, str] = field(default_factory=dict)
    signature: Any = None
    native: Any = None
    notes: dict[str, str] = field(default_factory=dict)

    def previous(self, stage: str) -> str:
        """The name of the stage whose output is ``stage``'s input."""
        names = list(self.stages)
        index = names.index(stage)
        if index == 0:
            raise ValueError(f"{stage} is the first stage")
        return names[index - 1]

    def to_dict(self) -> dict[str, Any]:
        """The serializable part (texts and commands), e.g. for a corpus entry."""
        return {
            "backend": self.backend,
            "stages": dict(self.stages),
            "commands": dict(self.commands),
        }


#: How a ``CompilerError`` of a stage whose output LLVM's translation cannot take begins.
UNTRANSLATED = "left for LLVM's translation, which takes none of them:"


def untranslated(module: Any) -> dict[str, int]:
    """The ops of a lowered ``module`` that are neither LLVM's nor the module itself, by name:
    what makes the ExecutionEngine fail to translate it ("missing
    LLVMTranslationDialectInterface registration ... vector.extract")."""
    from .lower import operations

    left: dict[str, int] = {}
    for op in operations(module):
        if op.name.split(".")[0] not in ("llvm", "builtin"):
            left[op.name] = left.get(op.name, 0) + 1
    return left


def untranslated_message(stage: str, left: dict[str, int]) -> str:
    ops = ", ".join(f"{name} ({count})" for name, count in sorted(left.items()))
    return (
        f"{UNTRANSLATED} {ops}: the {stage} stage's conversions to the LLVM dialect miss them "
        "(a conversion pass absent, or running before the pass that makes them)"
    )


def stage_command(target: Target, stage: Stage, source: str, output: str) -> str:
    """The command that runs ``stage`` of ``target`` on the file ``source``, writing ``output``.
    A Python stage that a named target runs too (``libm``, which every CPU target and variant
    runs) is named by that target: a variant's own name may need a plugin to parse."""
    if stage.pipeline:
        return tools.command("mlir-opt", f"--pass-pipeline={stage.pipeline}", source, "-o", output)
    from .pipelines import TARGETS

    shared = [t.name for t in TARGETS.values() if stage in t.stages]
    name = target.name if target.name in TARGETS or not shared else shared[0]
    return " ".join(
        ["python", "-m", "compiler", "opt", shlex.quote(source), "--target", name,
         "--from-stage", stage.name, "--to-stage", stage.name, "-o", shlex.quote(output)]
    )  # fmt: skip


def llvm_command(target: Target, source: str, text: str) -> str:
    """What the JIT does to the lowered module (``text``, in file ``source``), with the
    project's and LLVM's tools: at -O0 its functions marked as clang -O0 marks them
    (``runtime.unoptimized``), translation, opt at the target's level, then code generation as
    the JIT really does it (-O2 at every level), both for the CPU that the JIT compiles for
    (``runtime.jit_cpu_arguments``: this one, without its bfloat16 conversions for a module
    with bfloat16 in it)."""
    from .runtime import jit_cpu_arguments, jit_step_arguments

    steps = []
    if target.opt_level == 0:
        quoted = shlex.quote(source)
        steps.append(f"python -m compiler jit-input {quoted} --level 0 -o kernel.mlir")
        source = "kernel.mlir"
    cpu = jit_cpu_arguments(text)
    level = target.opt_level
    steps += [
        tools.command("mlir-translate", "--mlir-to-llvmir", source, "-o", "kernel.ll"),
        tools.command("opt", *jit_step_arguments("opt", level, cpu), "kernel.ll", "-o",
                      "kernel.opt.ll"),
        tools.command("llc", *jit_step_arguments("llc", level, cpu), "kernel.opt.ll", "-o",
                      "kernel.s"),
    ]  # fmt: skip
    return " && ".join(steps)


def run_stages(module_text: str, target: Target, stages: list[Stage]) -> str:
    """Parse ``module_text`` and run ``stages`` of ``target`` on it; the resulting text (for
    ``python -m compiler opt``)."""
    from mlir import ir

    with ir.Context(), verify_each():  # as mlir-opt: an error names its pass
        module = ir.Module.parse(module_text)
        for stage in stages:
            stage.run(module)
        return str(module)


class _Memo:
    """A small thread-safe LRU map (the in-process compile caches)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = 0

    def get(self, key: Any) -> Any:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
                self.hits += 1
            return value

    def put(self, key: Any, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


#: Stage outputs by (stage, input text) and native kernels by (lowered text, level, runtime):
#: targets that share stages (cpu-loops and cpu-blas up to bufferization) or reach identical
#: lowered IR (no matmul for BLAS to take) run those stages and JIT once per process, and a
#: program compiled again (a new ``@jit`` of the same function) costs no LLVM time.
_STAGE_MEMO = _Memo(256)
_KERNEL_MEMO = _Memo(64)
_LOCAL = threading.local()


def fresh() -> contextlib.AbstractContextManager[None]:
    """Compile without the in-process caches inside this block (this thread): every stage and
    the JIT really run again, e.g. to check that recompiling gives the same bits."""
    return setting(_LOCAL, "fresh", True, False)


def through_disk() -> contextlib.AbstractContextManager[None]:
    """Compile past the in-process kernel cache inside this block (this thread): with the
    persistent cache on, a kernel compiled here is JIT-compiled and stored, and a compile of a
    stored one loads it from disk, as a second process would (the stages' cache still serves)."""
    return setting(_LOCAL, "disk", True, False)


def clear_caches() -> None:
    """Drop the cached stage outputs and kernels (their memory goes with the last user)."""
    _STAGE_MEMO.clear()
    _KERNEL_MEMO.clear()


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=20).digest()


def _text(module: Any) -> str:
    """A stage's output as text, printed without verifying it again: ``Stage.run`` verified it
    (``str(module)`` verifies first, a third of the printing of a small module; the text is the
    same)."""
    return module.operation.get_asm(assume_verified=True)


def _stage_key(stage: Stage, text: str) -> tuple:
    """A stage's output is a function of its input text, its passes and, for a Python stage,
    the workarounds on (the cpu-vector planner asks them)."""
    transform = stage.transform
    name = f"{transform.__module__}.{transform.__qualname__}" if transform is not None else ""
    state = workarounds.state() if transform is not None else ()
    return (stage.name, stage.pipeline, name, state, _digest(text))


def remembered(stage: Stage, text: str) -> str | None:
    """``stage``'s output on ``text`` if a compile in this process (any backend) ran it already,
    else None (and always None under ``fresh()``): for backends with stages of their own."""
    if getattr(_LOCAL, "fresh", False):
        return None
    return _STAGE_MEMO.get(_stage_key(stage, text))


def remember(stage: Stage, text: str, output: str) -> None:
    """Keep ``stage``'s ``output`` on ``text`` for ``remembered``."""
    if not getattr(_LOCAL, "fresh", False):
        _STAGE_MEMO.put(_stage_key(stage, text), output)


#: Compiles per MLIR context before a thread starts a new one: creating a context costs about as
#: much as running a small pipeline, but a context never forgets a type or attribute it saw.
CONTEXT_USES = 64


def _context() -> Any:
    """This thread's MLIR context (a fresh one every CONTEXT_USES compiles, or under fresh())."""
    from mlir import ir

    if getattr(_LOCAL, "fresh", False):
        return ir.Context()
    uses = getattr(_LOCAL, "uses", CONTEXT_USES)
    if uses >= CONTEXT_USES:
        _LOCAL.context, uses = ir.Context(), 0
    _LOCAL.uses = uses + 1
    return _LOCAL.context


def _verified_error(stage: Stage, text: str) -> str:
    """The error ``stage`` reports on ``text`` when it verifies after every pass (``mlir-opt``'s
    error, naming the pass whose output does not verify), where the stage failed verifying only
    its end; "" if it was run so already, or if the verifying run does not fail (it always
    should: the passes are deterministic)."""
    from mlir import ir

    if verifying_each():
        return ""
    with verify_each():
        try:
            stage.run(ir.Module.parse(text))
        except ir.MLIRError as error:
            return str(error)
    return ""


def _raised_in(error: BaseException) -> str:
    """``Type: message (at FILE:LINE in FUNCTION)``, the innermost frame of this project's
    code that raised ``error``, not the MLIR bindings' (so a finding names the line of the stage
    that failed)."""
    import os
    import traceback

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        ours = path.startswith(os.path.join(root, "compiler") + os.sep)
        if ours or (path.startswith(root + os.sep) and "site-packages" not in path):
            where = f" (at {os.path.relpath(path, root)}:{frame.lineno} in {frame.name})"
            break
    return f"{type(error).__name__}: {error}{where}"


def _kernel_key(lowered: str, target: Target, runtime: str, signature: Any) -> tuple:
    """A kernel is a function of its lowered text, level, runtime, signature, instrumentation
    and the workarounds on (``runtime.unoptimized`` asks one at -O0; a bfloat16 kernel's CPU
    features, ``bf16-rounding-in-integers``, at every level)."""
    from .runtime import instrumenting

    off = workarounds.state()
    return (_digest(lowered), target.opt_level, runtime, signature.key(), instrumenting(), off)


def _link(texts: list[str]) -> Any:
    """One module holding the functions of every lowered module of ``texts`` (parsed in the
    current context), each module's own symbols suffixed ``__k<i>``; external declarations are
    kept once. None when they cannot be linked (module attributes, two declarations of one
    name that differ)."""
    from mlir import ir

    with ir.Location.unknown():
        linked = ir.Module.create()
    declared: dict[str, tuple] = {}
    for index, text in enumerate(texts):
        module = ir.Module.parse(text)
        if len(module.operation.attributes):
            return None
        operations = []
        for op in module.body.operations:
            if "sym_name" not in op.attributes:
                return None
            name = ir.StringAttr(op.attributes["sym_name"]).value
            external = op.name == "llvm.func" and not len(op.regions[0].blocks)
            # A declaration's attributes (its type, linkage...), read before anything moves.
            attributes = tuple(sorted((n, str(op.attributes[n])) for n in op.attributes))
            operations.append((op, name, external and attributes))
            if not external:
                renamed = f"{name}__k{index}"  # _mlir_ciface_kernel__k0 is kernel__k0's C interface
                ir.SymbolTable.replace_all_symbol_uses(name, renamed, module.operation)
                ir.SymbolTable.set_symbol_name(op, renamed)
        for op, name, declaration in operations:
            if declaration:
                if name in declared:
                    if declared[name] != declaration:
                        return None
                    continue
                declared[name] = declaration
            linked.body.append(op)
    return linked


#: The most kernels one linked JIT takes (a crash there re-runs the task backend by backend).
LINK_LIMIT = 8


def jit_together(graph: Graph, targets: list[Target]) -> int:
    """JIT-compile the lowered modules of ``graph`` on several targets as one LLVM module per
    optimization level, and leave the kernels where ``compile_graph`` finds them: an
    ExecutionEngine costs ~8 ms (with the runtime libraries loaded) before its first function
    and ~5 ms a small function after, so a worker compiling one program for five targets pays
    the fixed cost once, not once per target. The code of each kernel is its own (its functions
    and globals renamed apart, nothing shared but external declarations). A target whose stages
    fail is left to its own compile, which raises. Returns how many kernels were made."""
    from .runtime import Kernel, instrumenting, make_engine, poison_globals

    if getattr(_LOCAL, "fresh", False):
        return 0
    wanted: dict[int, dict[tuple, tuple[str, Any]]] = {}
    for target in targets:
        try:
            artifacts = compile_graph(graph, target, native=False)
        except CompilerError:
            continue
        lowered = list(artifacts.stages.values())[-1]
        key = _kernel_key(lowered, target, "ours", artifacts.signature)
        if _KERNEL_MEMO.get(key) is None:
            wanted.setdefault(target.opt_level, {})[key] = (lowered, artifacts.signature)
    made = 0
    for level, kernels in wanted.items():
        items = list(kernels.items())[:LINK_LIMIT]
        if len(items) < 2:
            continue
        context = _context()
        instrument = instrumenting()
        with context:
            module = _link([poison_globals(t) if instrument else t for _, (t, _) in items])
            if module is None:
                continue
            # as each kernel's own JIT (compile_graph): a copy of a bfloat16 subnormal through
            # cpu-vector came back -0.0 from the linked one only
            without_bf16_conversions(module, *(text for _, (text, _) in items))
            notify(",".join(t.name for t in targets), LLVM)
            engine = make_engine(module, level, instrument)
            names = [f"kernel__k{index}" for index in range(len(items))]
            if not all(engine.raw_lookup(f"_mlir_ciface_{name}") for name in names):
                continue  # a symbol unresolved: each target's own JIT fails with its evidence
            for index, (key, (_, signature)) in enumerate(items):
                kernel = Kernel(
                    None, signature, level, engine=engine, name=names[index], instrument=instrument
                )
                kernel.context = context
                kernel.unclaimed = len(items)
                _KERNEL_MEMO.put(key, kernel)
                made += 1
    return made


def _persistent_entry(text: str, target: Target, signature: Any, state: Any) -> str | None:
    """The persistent cache's entry for this compile, None when that cache is off (or the
    kernel is instrumented: its code calls the harness's wrappers)."""
    from .runtime import instrumenting

    if persist.cache_dir() is None or instrumenting():
        return None
    return persist.key(text, target, signature, state)


def _from_disk(artifacts: Artifacts, target: Target, stages: dict, library: Any) -> Artifacts:
    """A compile answered by the persistent cache: the stored stage texts (the commands that
    reproduce them as for a compile) and the stored kernel; nothing runs."""
    from .runtime import Kernel

    previous = BUILT
    for stage in target.stages:
        artifacts.stages[stage.name] = stages[stage.name]
        artifacts.commands[stage.name] = stage_command(
            target, stage, f"{previous}.mlir", f"{stage.name}.mlir"
        )
        previous = stage.name
    lowered = artifacts.stages.get(previous, "")
    artifacts.commands[LLVM] = llvm_command(target, f"{previous}.mlir", lowered)
    artifacts.native = Kernel(None, artifacts.signature, target.opt_level, engine=library)
    artifacts.notes["shared"] = ",".join([*target.stage_names(), LLVM])
    artifacts.notes["persisted"] = str(library.path.parent.name)
    return artifacts


def _persist(entry: str, stages: dict[str, str], engine: Any) -> None:
    """Store a fresh kernel; the compile it came from stands whatever happens here."""
    import warnings

    try:
        persist.store(entry, {k: v for k, v in stages.items() if k != BUILT}, engine)
    except Exception as error:  # noqa: BLE001 - a cache that cannot write is only slower
        warnings.warn(f"compiler cache: not stored ({error!r})", RuntimeWarning, stacklevel=3)


def compile_graph(
    graph: Graph, target: Target, native: bool = True, runtime: str = "ours"
) -> Artifacts:
    """Build, run every stage of ``target``, and (``native``) JIT the result; ``runtime``
    "mlir" calls it through MLIR's own runtime helpers instead of ours. A stage whose input
    text was seen before (any target) is not run again, nor is an identical lowered module
    JIT-compiled again (``fresh()`` turns both off); ``notes["shared"]`` says what was reused.
    With a persistent cache (``persist``), a compile another process made is loaded instead."""
    cached = not getattr(_LOCAL, "fresh", False)
    # One graph compiled for several targets is emitted once per workaround state (a module
    # built with a workaround off must never serve a compile with it on, nor the reverse).
    memo = graph.__dict__.setdefault("_built", {})
    state = workarounds.state()
    built = memo.get(state) if cached else None
    if built is None:
        built = memo[state] = emit.build(graph)
    text, signature = built
    artifacts = Artifacts(target.name, {BUILT: text}, signature=signature)
    entry = _persistent_entry(text, target, signature, state) if native and cached else None
    if entry is not None and runtime == "ours" and (found := persist.load(entry)) is not None:
        if all(stage.name in found[0] for stage in target.stages):
            return _from_disk(artifacts, target, *found)
    from mlir import ir

    reused: list[str] = []
    context = _context()

    def parse(source: str) -> Any:
        try:
            return ir.Module.parse(source)
        except ir.MLIRError as error:
            if source is text:  # the module as built: this project's IR does not verify
                raise CompilerError("parse/verify", "", str(error), text) from None
            raise

    with context:
        notify(target.name, BUILT)
        # Parsed when a stage or the JIT needs it: a program compiled for five targets reaches
        # most stages' outputs (and every kernel of a linked JIT) from the caches.
        module = None if cached else parse(text)
        current, previous = text, BUILT
        for stage in target.stages:
            notify(target.name, stage.name)
            key = _stage_key(stage, current)
            output = _STAGE_MEMO.get(key) if cached else None
            if output is not None:
                current, module = output, None
                reused.append(stage.name)
            else:
                if module is None:
                    module = parse(current)
                try:
                    changed = stage.run(module)
                except ir.MLIRError as error:
                    message = _verified_error(stage, current) or str(error)
                    raise CompilerError(stage.name, stage.pipeline, message, current) from None
                except (OSError, MemoryError):
                    raise  # the machine's (a missing library), not the stage's
                except Exception as error:
                    if stage.transform is None:
                        raise
                    # A Python stage that raises on a module we built is a compiler bug, never a
                    # rejection of the user's program (a stray IndexError read as one).
                    message = _raised_in(error)
                    raise CompilerError(stage.name, "", message, current) from error
                current = current if changed is False else _text(module)
                _STAGE_MEMO.put(key, current)
            artifacts.stages[stage.name] = current
            artifacts.commands[stage.name] = stage_command(
                target, stage, f"{previous}.mlir", f"{stage.name}.mlir"
            )
            previous = stage.name
        artifacts.commands[LLVM] = llvm_command(target, f"{previous}.mlir", current)
        if native:
            from .runtime import Kernel, MlirRuntimeKernel, instrumenting, poison_globals

            notify(target.name, LLVM)
            key = _kernel_key(current, target, runtime, signature)
            disk = getattr(_LOCAL, "disk", False)
            kernel = _KERNEL_MEMO.get(key) if cached and not disk else None
            if kernel is not None:
                linked = kernel.__dict__.pop("unclaimed", 0)  # made for this compile
                if linked:
                    artifacts.notes["linked"] = str(linked)
                else:
                    reused.append(LLVM)
            else:
                jit_input = poison_globals(current) if instrumenting() else current
                if module is None or jit_input != current:
                    module = parse(jit_input)
                # LLVM truncates to bfloat16 where it narrowed a float32 op itself (a maximum
                # of two extended bfloat16 values), past our integer rounding: not with
                # vcvtneps2bf16, which flushes subnormals.
                without_bf16_conversions(module, current)
                try:
                    if runtime == "mlir":
                        kernel = MlirRuntimeKernel(module, signature, target.opt_level)
                    else:
                        kernel = Kernel(module, signature, target.opt_level, pic=bool(entry))
                except ir.MLIRError as error:  # pragma: no cover - the JIT rarely reports
                    raise CompilerError(LLVM, "", str(error), current) from None
                except RuntimeError as error:
                    left = untranslated(module)
                    if not left or not target.stages:
                        raise
                    # (the engine's error names nothing; MLIR printed the op to stderr only)
                    last = target.stages[-1]
                    before = artifacts.stages[([BUILT] + target.stage_names())[-2]]
                    raise CompilerError(
                        last.name, last.pipeline, untranslated_message(last.name, left), before
                    ) from error
                kernel.context = context  # the engine's module lives in this context
                _KERNEL_MEMO.put(key, kernel)
                if entry is not None and runtime == "ours":
                    _persist(entry, artifacts.stages, kernel.engine)
            artifacts.native = kernel
    if reused:
        artifacts.notes["shared"] = ",".join(reused)
    return artifacts


__all__ = [
    "Artifacts",
    "STAGE_LISTENERS",
    "clear_caches",
    "compile_graph",
    "fresh",
    "jit_together",
    "notify",
    "remember",
    "remembered",
    "run_stages",
    "stage_command",
    "through_disk",
]
