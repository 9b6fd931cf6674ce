"""The compile driver: a traced graph and a target in, every stage's IR and a native kernel out.

Compilation is separate from the runtime: ``compile_graph`` builds the module, runs each stage of
the target (verifying after each), keeps each stage's output text and the command line that
reproduces that stage from the previous stage's text with the project's tools, and finally hands
the lowered module to LLVM through the runtime. Listeners hear about each stage *before* it runs,
so a process that dies inside a stage has said which one (the harness writes this down).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import tools
from .errors import CompilerError
from .frontend.graph import Graph
from .lower import emit
from .pipelines import BUILT, LLVM, Stage, Target

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


def stage_command(target: Target, stage: Stage, source: str, output: str) -> str:
    """The command that runs ``stage`` of ``target`` on the file ``source``, writing ``output``."""
    if stage.pipeline:
        return tools.command("mlir-opt", f"--pass-pipeline={stage.pipeline}", source, "-o", output)
    return " ".join(
        ["python", "-m", "compiler", "opt", shlex.quote(source), "--target", target.name,
         "--from-stage", stage.name, "--to-stage", stage.name, "-o", shlex.quote(output)]
    )  # fmt: skip


def llvm_command(target: Target, source: str) -> str:
    """What the JIT does to the lowered module, with LLVM's tools (translation, opt, codegen)."""
    level = f"-O{target.opt_level}"
    return (
        f"{tools.command('mlir-translate', '--mlir-to-llvmir', source, '-o', 'kernel.ll')} && "
        f"{tools.command('opt', level, 'kernel.ll', '-S', '-o', 'kernel.opt.ll')} && "
        f"{tools.command('llc', level, 'kernel.opt.ll', '-o', 'kernel.s')}"
    )


def run_stages(module_text: str, target: Target, stages: list[Stage]) -> str:
    """Parse ``module_text`` and run ``stages`` of ``target`` on it; the resulting text (for
    ``python -m compiler opt``)."""
    from mlir import ir

    with ir.Context():
        module = ir.Module.parse(module_text)
        for stage in stages:
            stage.run(module)
        return str(module)


def compile_graph(
    graph: Graph, target: Target, native: bool = True, runtime: str = "ours"
) -> Artifacts:
    """Build, run every stage of ``target``, and (``native``) JIT the result; ``runtime``
    "mlir" calls it through MLIR's own runtime helpers instead of ours."""
    from mlir import ir

    text, signature = emit.build(graph)
    artifacts = Artifacts(target.name, {BUILT: text}, signature=signature)
    context = ir.Context()
    with context:
        notify(target.name, BUILT)
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as error:
            raise CompilerError("parse/verify", "", str(error), text) from None
        current, previous = text, BUILT
        for stage in target.stages:
            notify(target.name, stage.name)
            try:
                stage.run(module)
            except ir.MLIRError as error:
                raise CompilerError(stage.name, stage.pipeline, str(error), current) from None
            current = str(module)
            artifacts.stages[stage.name] = current
            artifacts.commands[stage.name] = stage_command(
                target, stage, f"{previous}.mlir", f"{stage.name}.mlir"
            )
            previous = stage.name
        artifacts.commands[LLVM] = llvm_command(target, f"{previous}.mlir")
        if native:
            from .runtime import Kernel, MlirRuntimeKernel

            notify(target.name, LLVM)
            kernel = MlirRuntimeKernel if runtime == "mlir" else Kernel
            try:
                artifacts.native = kernel(module, signature, target.opt_level)
            except ir.MLIRError as error:  # pragma: no cover - the JIT rarely reports, it aborts
                raise CompilerError(LLVM, "", str(error), current) from None
            artifacts.native.context = context  # the engine's module lives in this context
    return artifacts


__all__ = ["Artifacts", "STAGE_LISTENERS", "compile_graph", "notify", "run_stages", "stage_command"]
