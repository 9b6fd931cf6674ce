"""The ``cpu-vector`` target: its stages and their reproduce commands, the accuracy of its
polynomial exp/log/tanh, its memory policy, and programs whose extents exercise masking and
peeling (7, 9, 17, 33, 65 are not multiples of any vector width; 300 and 517 exceed the
one-vector reduction)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from compiler_checks import F32, F64, I32, check, isolated, rand, stages

from compiler import jit, ops, pipelines
from compiler.vector import memory, schedule, vecmath

TARGET = "cpu-vector"
STAGE_NAMES = [
    "module",
    "optimized",
    "vecmath",
    "inlined",
    "views",
    "rows-planned",
    "rows-fused",
    "vector-planned",
    "vectorized",
    "bufferized",
    "gathers",
    "temporaries",
    "deallocated",
    "blas",
    "libm",
    "lowered",
]
ODD = (7, 9, 17, 33, 65)


def _texts(fn, *args, **kwargs) -> dict[str, str]:
    return stages(jit(fn), *args, target=TARGET, **kwargs)


def _artifacts(fn, *args) -> dict:
    return jit(fn).compile(*args, target=TARGET).artifacts.to_dict()


def _gelu_gather_sum(x0, x1, x2):
    """The program of a crash report: a gather from a strided view (innermost stride 2)."""
    xp = x0.__array_namespace__()
    v3 = ops.gelu(xp.matmul(x0, x1))
    v7 = ops.gather(v3[:, 1::2, None], x2)
    return xp.sum(v7, axis=(-1,), keepdims=True)


# --------------------------------------------------------------------------------------------
# Stages and reproduce commands


def test_stage_names_and_layers() -> None:
    target = pipelines.resolve(TARGET)
    assert ["module", *target.stage_names()] == STAGE_NAMES
    python = {s.name for s in target.stages if s.layer == "project"}
    assert python == set(
        "vecmath views rows-planned vector-planned gathers temporaries blas libm".split()
    )
    assert "cpu-vector" in pipelines.TARGETS


def test_softmax_is_row_fused_and_fully_vectorized(rng) -> None:
    texts = _texts(ops.softmax, rand(rng, (7, 33)))
    assert [k for k in texts if "." not in k] == STAGE_NAMES
    assert schedule.SCHEDULE in texts["rows-planned"] and "vec.row" in texts["rows-planned"]
    assert "scf.forall" in texts["rows-fused"] and schedule.SCHEDULE not in texts["rows-fused"]
    assert len(schedule.not_vectorized(texts["vector-planned"])) >= 5  # every op tagged
    assert schedule.not_vectorized(texts["vectorized"]) == []  # ...and vectorized
    assert "vector.transfer_read" in texts["vectorized"]
    assert "math.exp" not in texts["inlined"]  # the polynomial, inlined
    lowered = texts["lowered"]
    assert "llvm.intr.exp" not in lowered and "@expf" not in lowered
    assert re.search(r"vector<16xf32>", lowered)
    assert "memref.get_global" in texts["temporaries"]


def _replay(artifacts: dict) -> dict[str, tuple[int, str, bool]]:
    """Run every stage's command on the previous stage's saved text (in a scratch folder):
    stage -> (exit code, stderr, same text as the compiler's)."""
    names = list(artifacts["stages"])
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for previous, name in zip(names, names[1:], strict=False):
            with open(os.path.join(folder, f"{previous}.mlir"), "w") as handle:
                handle.write(artifacts["stages"][previous])
            command = artifacts["commands"][name]
            if command.startswith("python "):  # this interpreter, wherever tests run
                command = shlex.quote(sys.executable) + command[len("python") :]
            proc = subprocess.run(
                command, shell=True, cwd=folder, capture_output=True,
                text=True, timeout=600,
            )  # fmt: skip
            path = os.path.join(folder, f"{name}.mlir")
            text = open(path).read() if os.path.exists(path) else ""
            results[name] = (
                proc.returncode,
                proc.stderr[-2000:],
                text.strip() == artifacts["stages"][name].strip(),
            )
    return results


@pytest.mark.slow
@pytest.mark.parametrize("program", ["softmax", "gather"])
def test_every_stage_reproduces_from_the_previous_text(rng, program) -> None:
    """mlir-opt (pass stages, the two schedules included) and ``python -m compiler opt``
    (Python stages) give the compiler's own text, stage after stage."""
    if program == "softmax":
        artifacts = isolated(_artifacts, ops.softmax, rand(rng, (7, 33)))
    else:  # the gathers stage rewrites something
        args = (rand(rng, (2, 3)), rand(rng, (3, 4)), rand(rng, (5,), I32, 0, 2))
        artifacts = isolated(_artifacts, _gelu_gather_sum, *args)
        assert artifacts["stages"]["gathers"] != artifacts["stages"]["bufferized"]
    commands = artifacts["commands"]
    assert "transform-interpreter" in commands["vectorized"]
    assert commands["vectorized"].startswith("python -m compiler tools mlir-opt")
    assert "--from-stage views --to-stage views" in commands["views"]
    for name, (code, stderr, same) in _replay(artifacts).items():
        assert code == 0, f"{name}: {stderr}"
        assert same, f"{name}: the command's output differs from the compiler's text"


@pytest.mark.parametrize("stage", ["module", "vecmath", "rows-planned", "vector-planned",
                                   "vectorized", "bufferized", "temporaries", "blas"])  # fmt: skip
def test_prefixes_complete_to_the_same_answer(rng, stage) -> None:
    """``cpu-vector[:stage]`` (attribution's variants) completes a module holding vectors,
    schedules not yet applied and globals."""
    args = (rand(rng, (9, 12)), rand(rng, (12, 36), low=-0.5, high=0.5), rand(rng, (36,)),
            rand(rng, (12, 12), low=-0.5, high=0.5), rand(rng, (12,)))  # fmt: skip
    check(jit(ops.attention), *args, 3, targets=[f"{TARGET}[:{stage}]"], rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------------
# Polynomial exp / log / tanh: accuracy against an extended-precision reference

LD = np.longdouble


def _inputs(name: str, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    info = np.finfo(dtype)
    tiny, sub = float(info.smallest_normal), float(info.smallest_subnormal)
    top = float(np.log(info.max))  # exp overflows above, 88.72 (f32) / 709.78 (f64)
    bottom = float(np.log(LD(sub)))  # exp underflows to 0 below
    n = 20_000
    if name == "exp":
        edges = [top, bottom, np.log(LD(tiny)), 0.0]
        parts = [rng.uniform(bottom - 2, top + 2, n), rng.uniform(-2, 2, n),
                 rng.uniform(-1e-6, 1e-6, n // 4), rng.uniform(bottom - 2, bottom + 40, n // 2),
                 rng.uniform(top - 3, top, n // 4)]  # fmt: skip
    elif name == "log":
        edges = [1.0, tiny, sub, float(info.max)]
        parts = [np.exp(rng.uniform(np.log(tiny), np.log(float(info.max)), n)),
                 rng.uniform(0.5, 2, n), 1 + rng.uniform(-1e-5, 1e-5, n // 4),
                 rng.uniform(0, tiny, n // 4), rng.uniform(0.7, 0.72, n // 4)]  # fmt: skip
    else:
        edges = [0.625, 0.5493, 9.0, 19.0, 22.0]
        parts = [rng.uniform(-25, 25, n), rng.uniform(-1, 1, n), rng.uniform(-1e-4, 1e-4, n // 4),
                 rng.uniform(0.6, 0.65, n // 4), rng.uniform(-0.65, -0.6, n // 4),
                 rng.uniform(-tiny, tiny, n // 8)]  # fmt: skip
    near = []
    for edge in edges:
        x = np.asarray(edge, dtype)
        for _ in range(4):
            near += [x, -x]
            x = np.nextafter(x, np.asarray(np.inf, dtype))
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, tiny, -tiny, float(info.max),
                -float(info.max), 1.0, -1.0]  # fmt: skip
    x = np.concatenate([np.asarray(p, np.float64).ravel() for p in parts] + [near, specials])
    return x.astype(dtype)


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    """long double (64-bit mantissa) for f64, float64 for f32: the reference's own error is
    2^-11 (resp. 2^-29) of a unit in the last place of the result."""
    wide = x.astype(LD if x.dtype == F64 else np.float64)
    with np.errstate(all="ignore"):
        return getattr(np, name)(wide)


def _compiled(name: str, x: np.ndarray) -> np.ndarray:
    return jit(getattr(np, name))(x, target=TARGET)


def ulp_errors(got: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(errors in units in the last place where the correctly rounded result is finite,
    mask of special results that differ: NaN vs not, inf, zero's sign, finite vs inf)."""
    with np.errstate(all="ignore"):
        rounded = ref.astype(got.dtype)
    finite = np.isfinite(rounded)
    spacing = np.spacing(np.abs(rounded[finite])).astype(ref.dtype)
    with np.errstate(all="ignore"):
        errors = np.abs(got[finite].astype(ref.dtype) - ref[finite]) / spacing
    errors = np.where(np.isfinite(got[finite]), errors, np.inf)
    same_special = (np.isnan(rounded) & np.isnan(got)) | (
        (rounded == got) & (np.signbit(rounded) == np.signbit(got))
    )
    zero = finite & (rounded == 0)
    bad = (~finite & ~same_special) | (zero & ~same_special)
    return errors.astype(np.float64), bad


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "tanh"])
def test_polynomial_accuracy(name, dtype) -> None:
    """Every finite result within ULP_BOUND, every special value exact (NaN, +-inf, -0, the
    overflow and underflow boundaries, subnormal inputs and results)."""
    with np.errstate(all="ignore"):
        x = _inputs(name, dtype, np.random.default_rng(12))
    got = isolated(_compiled, name, x)
    assert got.dtype == dtype and got.shape == x.shape
    reference = _reference(name, x)
    errors, bad = ulp_errors(got, reference)
    with np.errstate(all="ignore"):
        where = x[np.isfinite(reference.astype(dtype))][int(np.argmax(errors))]
    assert errors.max() <= vecmath.ULP_BOUND, f"{name} {dtype}: {errors.max():.3f} ulp at {where!r}"
    assert not bad.any(), f"{name} {dtype}: special values differ at x={x[bad][:8]!r}"


def test_special_values_exactly() -> None:
    for dtype in (F32, F64):
        x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
        with np.errstate(all="ignore"):
            for name in ("exp", "log", "tanh"):
                got, want = isolated(_compiled, name, x), getattr(np, name)(x)
                np.testing.assert_array_equal(got, want)
                assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), name


# --------------------------------------------------------------------------------------------
# Programs against NumPy, with odd extents


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("n", ODD)
def test_softmax_layer_norm_gelu(rng, n, dtype) -> None:
    x = rand(rng, (5, n), dtype, -4, 4)
    rtol = 1e-5 if dtype == F32 else 1e-12
    check(jit(ops.softmax), x, targets=[TARGET], rtol=rtol)
    gain, bias = rand(rng, (n,), dtype), rand(rng, (n,), dtype)
    check(jit(ops.layer_norm), x, gain, bias, targets=[TARGET], rtol=rtol, atol=1e-5)
    check(jit(ops.gelu), x, targets=[TARGET], rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("t, c, h", [(7, 12, 3), (9, 16, 2), (17, 33, 3), (33, 8, 1)])
def test_attention(rng, t, c, h, dtype) -> None:
    x = rand(rng, (t, c), dtype)
    weights = (rand(rng, (c, 3 * c), dtype, -0.5, 0.5), rand(rng, (3 * c,), dtype),
               rand(rng, (c, c), dtype, -0.5, 0.5), rand(rng, (c,), dtype))  # fmt: skip
    tol = 1e-5 if dtype == F32 else 1e-12
    check(jit(ops.attention), x, *weights, h, targets=[TARGET], rtol=tol, atol=tol)


REDUCTIONS = {
    "sum": lambda x: x.sum(axis=-1),
    "max0": lambda x: x.max(axis=0),
    "mean-keep": lambda x: x - x.mean(axis=-1, keepdims=True),
    "var": lambda x: x.var(axis=-1),
    "min-all": lambda x: x.min(),
}


@pytest.mark.parametrize("n", [*ODD, 300, 517])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(rng, name, n) -> None:
    x = rand(rng, (3, n), F64)
    check(jit(REDUCTIONS[name]), x, targets=[TARGET], atol=1e-12 * n)


@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=str)
@pytest.mark.parametrize("m, k, n", [(7, 9, 8), (1, 1, 1), (17, 33, 65), (9, 5, 17)])
def test_matmul_and_epilogue(rng, m, k, n, dtype) -> None:
    a, b, bias = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype), rand(rng, (n,), dtype)
    atol = 0 if dtype == I32 else 1e-5 * k
    check(jit(lambda a, b, c: np.maximum(a @ b + c, 0) * 2), a, b, bias, targets=[TARGET],
          rtol=1e-5, atol=atol)  # fmt: skip
    check(jit(lambda a, b: (a @ b).T), a, b, targets=[TARGET], rtol=1e-5, atol=atol)


ELEMENTWISE = {
    "where-less": lambda x, y: np.where(x < y, x * y, y - x),
    "int": lambda x, y: np.maximum(x.astype(np.int32) * 3 - y.astype(np.int32), -2),
    "bool": lambda x, y: np.where(x > 0, y.T <= 0.5, x < y),
    "bool-arith": lambda x, y: np.where(x > y, x, 1.0) + (x >= y.T),
    "cast-transpose": lambda x, y: x.T.astype(np.float32) + y.T,
    "slice-negative-step": lambda x, y: x[::-2, 1:] * y[::2, ::-1][:, 1:],
    "broadcast": lambda x, y: x[:, None, :] * y[None, :, :].sum(axis=1, keepdims=True),
    "sin-sqrt": lambda x, y: np.sin(x) + np.sqrt(np.abs(y)),
    # math.absi on an n-D vector is left unconverted by convert-math-to-llvm in this MLIR
    "abs-int": lambda x, y: np.abs(x.astype(np.int32) * 3 - 1) + np.abs(y.T).astype(np.int32),
    # libm functions with no LLVM intrinsic: convert-math-to-libm unrolls their vectors into
    # vector.extract / vector.insert, which a second convert-vector-to-llvm lowers
    "libm-lanes": lambda x, y: np.arcsinh(x) * np.cbrt(y.T).astype(np.float32),
    "intrinsics": lambda x, y: np.exp2(x) - np.log2(np.abs(y)) + np.tan(x) * np.cosh(y.T),
    # the libm stage's lane-by-lane helpers (convert-math-to-llvm would cancel near zero)
    "expm1-log1p": lambda x, y: np.expm1(x * 1e-9) + np.log1p(np.abs(y.T) * 1e-9),
}


@pytest.mark.parametrize("n", ODD)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise(rng, name, n) -> None:
    x, y = rand(rng, (n, n), F64), rand(rng, (n, n), F64)
    check(jit(ELEMENTWISE[name]), x, y, targets=[TARGET])


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 17)])
def test_int_abs_of_any_rank(rng, shape) -> None:
    """Found by the fuzzer (a pass failure in ``lowered``): abs of an int32 (1, 1, 1) array."""
    check(jit(np.abs), rand(rng, shape, I32, -9, 9), targets=[TARGET, f"{TARGET}@O0"])


def test_gather_from_strided_view_compiles() -> None:
    """Found as a crash ("LLVM Translation failed for operation:
    builtin.unrealized_conversion_cast"): the vectorized gather read a strided view (innermost
    stride 2) that convert-vector-to-llvm cannot lower; the ``gathers`` stage rewrites it."""
    x0, x1 = np.ones((2, 3), F32), np.ones((3, 4), F32)
    check(jit(_gelu_gather_sum), x0, x1, np.zeros(5, I32), targets=[TARGET], rtol=1e-6)
    texts = _texts(_gelu_gather_sum, x0, x1, np.zeros(5, I32))
    assert "vector.gather" in texts["bufferized"] and "strided<[4, 2, 2]" in texts["bufferized"]
    assert re.search(r"vector\.gather %\S+\[%\S+\] \[%\S+\].*: memref<\?xf64>", texts["gathers"])
    assert "unrealized_conversion_cast" not in texts["lowered"]


GATHER_VIEWS = {
    "cols": lambda t, i: ops.gather(t[:, 1:3], i),  # innermost stride 1, rows apart: was wrong
    "cols-step": lambda t, i: ops.gather(t[:, ::2], i),
    "rows-step": lambda t, i: ops.gather(t[::2, 1:], i),
    "reversed": lambda t, i: ops.gather(t[::-1, ::-2], i),
    "row-step": lambda t, i: ops.gather(t[1, ::3], i),
    "column": lambda t, i: ops.gather(t[:, 2], i),
    "unit-inner": lambda t, i: ops.gather(t[:, 1::2, None], i),
    "unit-middle": lambda t, i: ops.gather(t[:, None, 1:4], i),
    "temporary": lambda t, i: ops.gather((t * 2)[:, 2:5], i) + 1,
    # One element of stride 28: a unit extent, but convert-vector-to-llvm wants a unit stride
    # (a fuzz session's internal error: LLVM translation met an unrealized_conversion_cast).
    "one-strided": lambda t, i: ops.gather(t[2::4, -1], i * 0),
}


@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=str)
@pytest.mark.parametrize("name", list(GATHER_VIEWS))
def test_gather_from_views(rng, name, dtype) -> None:
    """The vectorizer's gather indices are linear over the view's shape; on a strided buffer
    they must go through its strides (silently wrong elements before the ``gathers`` stage)."""
    table, ids = rand(rng, (6, 7), dtype, -9, 9), rand(rng, (9,), I32, 0, 3)
    check(jit(GATHER_VIEWS[name]), table, ids, targets=[TARGET], rtol=1e-6)


@pytest.mark.parametrize("name", ["cols", "reversed", "unit-middle", "temporary", "one-strided"])
def test_the_copying_gathers_fixup_reads_each_view_right(rng, name) -> None:
    """``+copied-gathers`` (triage's second way to complete a prefix: each strided view a
    gather reads is copied first) gives NumPy's answer on the whole target and on a prefix
    completed after vectorization, where it replaces ``strided_gathers``."""
    table, ids = rand(rng, (6, 7), F32, -9, 9), rand(rng, (9,), I32, 0, 3)
    variants = [f"{TARGET}+copied-gathers", f"{TARGET}[:vectorized]+copied-gathers"]
    check(jit(GATHER_VIEWS[name]), table, ids, targets=variants, rtol=1e-6)
    fixed = {
        target: jit(GATHER_VIEWS[name]).compile(table, ids, target=target).artifacts.stages
        for target in (f"{TARGET}[:vectorized]", variants[1])
    }
    plain, copied = (texts["complete-gathers"] for texts in fixed.values())
    # Where the strided fix-up reads a view's buffer at physical offsets (a reversed view is
    # copied before any gather reads it), the copying one copies the view, and frees the copy.
    assert ("memref.reinterpret_cast" in plain) == (name != "reversed"), plain
    if name != "reversed":
        assert "memref.reinterpret_cast" not in copied and "memref.dealloc" in copied, copied


def test_a_python_stage_that_raises_is_a_compiler_error_naming_its_line(monkeypatch) -> None:
    """An exception inside a Python stage is a compiler bug: a CompilerError naming the stage,
    the exception and the line that raised, with the stage's input. A stray IndexError had
    reached the user as it was, and the harness read it as a rejection of a valid program."""
    from compiler import driver
    from compiler.errors import CompilerError
    from compiler.vector import gathers

    def broken(module) -> int:
        return [][0]

    monkeypatch.setattr(gathers, "strided_gathers", broken)
    table, ids = np.ones((6, 7), F32), np.zeros(3, I32)
    with driver.fresh(), pytest.raises(CompilerError) as raised:
        jit(GATHER_VIEWS["cols-step"], target=TARGET)(table, ids)
    error = raised.value
    assert error.stage == "gathers" and error.pipeline == "", error
    assert error.message.startswith("IndexError: list index out of range (at tests/"), error
    assert "test_vector.py" in error.message and "in broken)" in error.message, error
    assert "vector.gather" in error.module_text  # the stage's input: the bufferized module


@pytest.mark.parametrize(
    "dtype, table, ids",
    [
        ("bfloat16", (1, 3), (5, 6)),  # a clean session's (seed 50): bf16 vectors are padded
        (I32, (1, 17), (5, 6)),  # 16 lanes and a masked tail
        (F64, (1, 17), (1, 1)),
        (F32, (2, 33), (2, 3, 2)),
    ],
    ids=str,
)
def test_gather_by_ids_of_rank_two_or_more(rng, dtype, table, ids) -> None:
    """A gather whose ids have rank 2 or more reads a table of fewer dims than its loops;
    masked, MLIR's vectorizer gave that read a mask of the loop rank and the compile failed
    (``unmasked-nd-extract``, tests/upstream). Its vector sizes now divide the row, and the op
    is still vectorized."""
    import ml_dtypes

    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    values = (np.arange(np.prod(table)) % 7 - 3).reshape(table).astype(dtype)
    rows = rng.integers(0, table[0], ids).astype(I32)
    check(jit(ops.gather), values, rows, targets=[TARGET, f"{TARGET}@O0"], rtol=0)
    texts = stages(jit(ops.gather), values, rows, target=TARGET)
    assert "linalg.generic" not in texts["vectorized"], texts["vectorized"][-1500:]


def test_gpt2_block_small(rng) -> None:
    from compiler import model

    config = model.GPT2Config(layers=2, heads=3, width=24, context=16, vocab=40)
    params = model.init_params(config, seed=0, jitter=0.1)
    ids = np.array([3, 17, 5, 29, 11, 2, 38], np.int32)
    want = model.forward_numpy(params, config, ids)
    got = isolated(model.forward, params, config, ids, target=TARGET)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(want))))


# --------------------------------------------------------------------------------------------
# Memory: static temporaries become globals within a budget


def _temporaries(text: str) -> str:
    """The ``temporaries`` stage on ``text`` (``test.use`` keeps buffers alive)."""
    from mlir import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        memory.temporaries(module)
        return str(module)


def test_globals_are_capped() -> None:
    small, big = "memref<256xf32>", "memref<2048x1024xf32>"  # 1 KiB, 8 MiB
    text = f"""
    func.func @kernel(%a: memref<8xf32>) {{
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : {small}
      %b = memref.alloc() : {big}
      scf.for %i = %c0 to %c4 step %c1 {{
        %r = memref.alloc() : memref<16xf64>
        "test.use"(%r, %s, %b) : (memref<16xf64>, {small}, {big}) -> ()
      }}
      return
    }}"""
    out = _temporaries(text)
    assert out.count("memref.global") == 2  # the small one and the hoisted loop buffer
    assert f"memref.alloc() : {big}" in out  # above GLOBAL_MAX_BYTES: stays an allocation
    assert "scf.for" in out and "memref.alloc() : memref<16xf64>" not in out


def test_global_budget_per_module() -> None:
    count = memory.GLOBAL_BUDGET_BYTES // memory.GLOBAL_MAX_BYTES + 2
    rows = memory.GLOBAL_MAX_BYTES // 4 // 1024
    allocs = "\n".join(f"%m{i} = memref.alloc() : memref<{rows}x1024xf32>" for i in range(count))
    uses = ", ".join(f"%m{i}" for i in range(count))
    types = ", ".join([f"memref<{rows}x1024xf32>"] * count)
    out = _temporaries(
        f'func.func @kernel() {{\n{allocs}\n"test.use"({uses}) : ({types}) -> ()\nreturn\n}}'
    )
    assert out.count("memref.global") == memory.GLOBAL_BUDGET_BYTES // memory.GLOBAL_MAX_BYTES
    assert out.count("memref.alloc()") == count - out.count("memref.global")


BF16_PROGRAMS = {
    "elementwise": lambda a: (a - 1.0) * a,
    "row-sum": lambda a: (a * a).sum(axis=-1),
}


@pytest.mark.parametrize("n", [9, 17, 33])
@pytest.mark.parametrize("name", list(BF16_PROGRAMS))
def test_bfloat16_vectors_have_power_of_two_sizes(rng, name, n) -> None:
    """LLVM 22.1.8 aborts on bfloat16 vector arithmetic of 9-15, 17, 33... lanes where the CPU
    has BF16 conversions (``tests/upstream/test_llvm_22_1_8.py``; found by the fuzzer on an
    AVX512-BF16 machine): the planner rounds a bfloat16 op's vector sizes up to powers of two,
    masked past the extent (workaround ``bf16-power-of-two-vectors``)."""
    import ml_dtypes
    from mlir import ir

    from compiler import driver, workarounds
    from compiler.pipelines import resolve

    x = rand(rng, (3, n), F32).astype(ml_dtypes.bfloat16)
    fn = jit(BF16_PROGRAMS[name])
    _, graph, _ = fn.trace(x)

    def bf16_plans() -> list[list[int]]:
        """The vector sizes the planner gives the ops that touch bfloat16 (but max/min
        reductions, which are never masked: their chunks divide the row)."""
        text = driver.compile_graph(graph, resolve(TARGET), native=False).stages["rows-fused"]
        with ir.Context():
            module = ir.Module.parse(text)
            ops = [op for op in schedule.structured_ops(module) if schedule._touches_bf16(op)]
            return [schedule.plan(op)[1] for op in ops if schedule.plan(op) is not None]

    plans = bf16_plans()
    assert plans and all(v & (v - 1) == 0 for sizes in plans for v in sizes), plans
    # It compiles (an abort on BF16 CPUs without the workaround) and computes NumPy's answer,
    # within bfloat16's rounding (NumPy rounds a bfloat16 sum at every addition).
    check(fn, x, targets=[TARGET, f"{TARGET}@O0"], rtol=0.05, atol=0.05)
    if n <= 16:  # within one vector of the widest type: the natural plan takes the extent
        with workarounds.disabled("bf16-power-of-two-vectors"):
            assert any(n in sizes for sizes in bf16_plans())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("n", [3, 9, 257, 300])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_reductions_are_never_masked(name, n, dtype) -> None:
    """MLIR 22.1.8 gives a masked ``vector.reduction <maximumf>`` the neutral -1.4e-45 instead
    of -inf (llvm PR #222275): a float32 max of 300 negative numbers was -1e-45, a softmax of
    such a row NaN. The planner cuts max/min rows into chunks that divide them (workaround
    ``unmasked-minmax``), of a power of two where bfloat16 is touched."""
    import ml_dtypes
    from mlir import ir

    from compiler import driver
    from compiler.pipelines import resolve

    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    sign = -1.0 if name == "max" else 1.0
    x = (sign * (np.arange(2 * n) % n + 1.5)).reshape(2, n).astype(numpy_dtype)
    fn = jit(lambda a: getattr(a, name)(axis=-1))
    _, graph, _ = fn.trace(x)
    text = driver.compile_graph(graph, resolve(TARGET), native=False).stages["rows-fused"]
    with ir.Context():
        module = ir.Module.parse(text)
        reductions = [op for op in schedule.structured_ops(module) if schedule._minmax(op)]
        assert reductions
        for op in reductions:
            tiles, vectors = schedule.plan(op)
            assert n % vectors[-1] == 0 and (tiles[-1] == 0 or tiles[-1] == vectors[-1])
            if dtype == "bfloat16":
                assert all(v & (v - 1) == 0 for v in vectors), vectors
    want = getattr(x, name)(axis=-1)
    for target in (TARGET, f"{TARGET}@O0"):
        np.testing.assert_array_equal(isolated(fn, x, target=target), want)


def test_softmax_of_a_long_very_negative_row_is_finite() -> None:
    x = np.full((2, 300), -200.0, np.float32)
    x[:, 0] = -199.0
    check(jit(ops.softmax), x, targets=[TARGET])
