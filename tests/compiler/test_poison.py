"""The poison checks (``compiler/lower/poison.py``, the ``+poison-checks`` triage variants): each
guard tests exactly the operands on which LLVM makes the operation poison, the guarded module
still parses, and none of our lowerings computes poison on any edge value (so a check that
fires in triage is the bug's, not ours)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from compiler.lower.poison import MARKER, _round, guarded_text

_FORMATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _near(value: float, dtype: type) -> list[float]:
    """``value`` in ``dtype`` (rounded) and its 3 neighbours either side, finite ones only."""
    with np.errstate(over="ignore"):
        x = dtype(value)
    x = x if math.isfinite(float(x)) else np.finfo(dtype).max
    out = [x]
    for direction in (np.inf, -np.inf):
        y = x
        for _ in range(3):
            with np.errstate(over="ignore"):
                y = np.nextafter(y, dtype(direction))
            out.append(y)
    return [float(v) for v in out if math.isfinite(float(v))]


@pytest.mark.parametrize("element", sorted(_FORMATS))
@pytest.mark.parametrize("width", [8, 16, 32, 64])
@pytest.mark.parametrize("op", ["fptosi", "fptoui"])
def test_a_conversion_guard_admits_exactly_the_values_whose_integer_part_fits(
    element: str, width: int, op: str
) -> None:
    """The guard is ``low < x < high`` with both bounds rounded outward to the format; around
    each bound (and 0, -1, the format's largest value) it must agree with "trunc(x) fits"."""
    dtype = _FORMATS[element]
    low, high = (-1, 2**width) if op == "fptoui" else (-(2 ** (width - 1)) - 1, 2 ** (width - 1))
    lo, hi = _round(low, element, up=False), _round(high, element, up=True)
    least, most = (
        (0, 2**width - 1) if op == "fptoui" else (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
    )
    largest = float(np.finfo(dtype).max)
    probes = [p for v in (low, high, 0, -1, -0.5, largest, -largest) for p in _near(v, dtype)]
    for x in probes:
        admitted = (x > lo if math.isfinite(lo) else x >= -largest) and (
            x < hi if math.isfinite(hi) else x <= largest
        )
        assert admitted == (least <= math.trunc(x) <= most), (x, lo, hi)


_MODULE = """
module {
  llvm.func @f(%x: f32, %v: vector<4xf64>, %a: i32, %b: i32, %w: vector<8xi16>, %x2: i64) -> i32 {
    %0 = llvm.fptosi %x : f32 to i32
    %1 = llvm.fptoui %v : vector<4xf64> to vector<4xi32>
    %2 = llvm.shl %a, %b : i32
    %3 = llvm.lshr %w, %w : vector<8xi16>
    %4 = llvm.ashr exact %a, %b : i32
    %5 = llvm.sdiv %a, %b : i32
    %6 = llvm.urem %w, %w : vector<8xi16>
    %7 = llvm.add %a, %b overflow<nsw> : i32
    %8 = llvm.fptosi %x : f32 to i64
    %9 = llvm.mul %w, %w overflow<nsw, nuw> : vector<8xi16>
    %10 = llvm.sub %a, %b : i32
    %11 = llvm.zext nneg %a : i32 to i64
    %12 = llvm.or disjoint %a, %b : i32
    %13 = llvm.trunc %x2 overflow<nuw> : i64 to i32
    %14 = llvm.or %a, %b : i32
    llvm.return %5 : i32
  }
}
"""


def test_every_poison_producing_operation_is_guarded_and_the_module_still_parses() -> None:
    from mlir import ir

    text, sites = guarded_text(_MODULE)
    assert sites == 13, text  # all but the sub and the plain or (no flags: they may wrap)
    assert text.count("llvm.call @__poison_check_") == 13
    assert text.count('"llvm.intr.vector.reduce.or"') == 4  # the four vector operations
    assert "llvm.sext %w : vector<8xi16> to vector<8xi32>" in text  # nsw, at twice the width
    assert "llvm.zext %w : vector<8xi16> to vector<8xi32>" in text  # nuw
    with ir.Context():
        module = ir.Module.parse(text)
        assert module.operation.verify()
    assert guarded_text("module {\n}\n") == ("module {\n}\n", 0)


_EDGES = r"""
import sys, warnings
import numpy as np, ml_dtypes
import compiler
from compiler import jit

warnings.simplefilter("ignore")
target = sys.argv[1]
edges = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e10, -1e10, 2147483647.5, 2147483648.0,
                  -2147483648.75, -2147483649.0, -3.75, 2.5, 1e-300, 3e38, -7e4, 88.8, -104.0,
                  709.9, -745.5, 65504.0, 1e-8], "float64")
for dtype in ("float64", "float32", "float16", ml_dtypes.bfloat16):
    x = edges.astype(dtype)
    programs = {
        "int32": (lambda x: x.astype("int32"), lambda x: x.astype("int32")),
        "exp": (lambda x: compiler.xp.exp(x), np.exp),
        "tanh": (lambda x: compiler.xp.tanh(x), np.tanh),
        "log": (lambda x: compiler.xp.log(compiler.xp.abs(x)), lambda x: np.log(np.abs(x))),
        "narrow": (lambda x: x.astype(ml_dtypes.bfloat16), lambda x: x.astype(ml_dtypes.bfloat16)),
    }
    for name, (fn, reference) in programs.items():
        got = jit(fn)(x, target=target)
        assert got.dtype == reference(x).dtype, (name, dtype)
ids = np.array([0, 3, 1, 2], "int32")
table = np.arange(12, dtype="float32").reshape(3, 4)
got = jit(lambda t, i: compiler.ops.gather(t.T, i))(table, ids, target=target)
assert np.array_equal(got, table.T[ids]), got
print("ran to the end")
"""


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-blas-unfused", "cpu-vector"])
def test_no_lowering_computes_poison_on_edge_values(target: str) -> None:
    """The conversions, the polynomial exp/log/tanh (whose range reduction converts to integers
    and shifts), the bfloat16 rounding (shifts) and gathers (divisions by strides), on NaN,
    infinities, values past int32 and exp's thresholds, under ``+poison-checks``: no check
    fires. A float -> int32 conversion was an ``fptosi`` alone, poison past int32 (this CPU
    gave -2**31, NumPy's answer, by its choice of instruction)."""
    proc = subprocess.run(
        [sys.executable, "-c", _EDGES, f"{target}+poison-checks"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert MARKER not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0 and "ran to the end" in proc.stdout, proc.stderr[-2000:]


def test_a_float_to_int32_conversion_is_numpys_on_every_target() -> None:
    """NaN, infinities and values past int32 convert to -2**31 (NumPy's on x86-64), without
    the poison an ``fptosi`` alone computes there; in range, truncated toward zero."""
    from compiler import backends, jit

    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 2147483647.9, -2147483648.9, -3.7, 3.7])
    for dtype in ("float64", "float32"):
        values = x.astype(dtype)
        with np.errstate(invalid="ignore"):
            want = values.astype("int32")
        for target in backends.cpu_targets(include_aliases=False):
            got = jit(lambda v: v.astype("int32"))(values, target=target)
            np.testing.assert_array_equal(got, want, err_msg=f"{dtype} on {target}")


_RUN = r"""
import ctypes, sys
from mlir import execution_engine, ir
from compiler.lower.poison import guarded_text

op, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = "module {\n  llvm.func @f(%a: i32, %b: i32) -> i32 attributes {llvm.emit_c_interface} {\n"
text += f"    %0 = {op}\n    llvm.return %0 : i32\n  }}\n}}\n"
with ir.Context():
    engine = execution_engine.ExecutionEngine(ir.Module.parse(guarded_text(text)[0]), opt_level=0)
    values = [ctypes.c_int32(a), ctypes.c_int32(b), ctypes.c_int32(0)]
    pointers = [ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values]
    packed = (ctypes.c_void_p * 3)(*pointers)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("f"))(packed)
    print("result", values[2].value)
"""


@pytest.mark.parametrize(
    ("op", "a", "b", "poison"),
    [
        ("llvm.lshr exact %a, %b : i32", 4, 1, False),
        ("llvm.lshr exact %a, %b : i32", 5, 1, True),  # a set bit shifted out
        ("llvm.shl %a, %b overflow<nuw> : i32", 2**30, 1, False),
        ("llvm.shl %a, %b overflow<nuw> : i32", -(2**31), 1, True),
        ("llvm.shl %a, %b overflow<nsw> : i32", 2**30, 1, True),  # the sign changes
        ("llvm.sdiv exact %a, %b : i32", 7, 3, True),
        ("llvm.or disjoint %a, %b : i32", 3, 2, True),
        ("llvm.add %a, %b overflow<nuw> : i32", 2**31 - 1, 1, False),  # no unsigned wrap
        ("llvm.add %a, %b overflow<nsw> : i32", 2**31 - 1, 1, True),
        ("llvm.shl %a, %b : i32", 1, 32, True),
    ],
)
def test_a_check_fires_exactly_where_the_operation_is_poison(
    op: str, a: int, b: int, poison: bool
) -> None:
    """One guarded operation, JIT-compiled at -O0 and called: the check aborts, naming the
    operation, on the operands that make it poison, and lets the others through."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, op, str(a), str(b)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if poison:
        assert proc.returncode != 0 and MARKER in proc.stderr, (proc.stdout, proc.stderr[-500:])
        assert op.split(" ")[0] in proc.stderr
    else:
        assert proc.returncode == 0 and "result" in proc.stdout, proc.stderr[-2000:]
