"""The IR the compiler builds: named linalg ops where they exist (matmul after a fill, transpose,
reduce), tensor.reshape and tensor.extract_slice for layout, explicit casts for promotions, an
index-based causal mask; matmuls survive fusion and become OpenBLAS gemm calls on cpu-blas."""

from __future__ import annotations

import re

import numpy as np
import pytest
from compiler_checks import F32, F64, I32, ops_in, rand, stages

from compiler import jit, ops


def _defining_line(text: str, value: str) -> str:
    match = re.search(rf"^\s*{re.escape(value)} = (.*)$", text, re.MULTILINE)
    assert match, f"{value} is not defined in\n{text}"
    return match.group(1)


def _matmul_inits(text: str, op: str) -> list[str]:
    """For every `op` (linalg.matmul / batch_matmul): the op defining its `outs` operand."""
    inits = []
    for line in text.splitlines():
        if re.search(rf"= {re.escape(op)} ", line):
            outs = re.search(r"outs\((%[\w.]+)", line)
            assert outs, line
            inits.append(_defining_line(text, outs.group(1)).split(" ")[0])
    return inits


# --------------------------------------------------------------------------------------------
# matmul


matmul = jit(lambda a, b: a @ b)
MATMUL_CASES = {
    "2-D": ((3, 4), (4, 5), "linalg.matmul"),
    "1-D @ 2-D": ((4,), (4, 5), "linalg.matmul"),
    "2-D @ 1-D": ((3, 4), (4,), "linalg.matmul"),
    "batched @ 2-D": ((2, 3, 4), (4, 5), "linalg.matmul"),
    "batched": ((2, 3, 4), (2, 4, 5), "linalg.batch_matmul"),
    "broadcast batch": ((2, 1, 3, 4), (6, 4, 5), "linalg.batch_matmul"),
}


@pytest.mark.parametrize("name", list(MATMUL_CASES))
def test_matmul_is_a_named_op_after_a_fill(rng, name):
    a_shape, b_shape, op = MATMUL_CASES[name]
    texts = stages(matmul, rand(rng, a_shape), rand(rng, b_shape), target="cpu-blas")
    for stage in ("module.printed", "optimized.printed"):  # built, and still there after fusion
        text = texts[stage]
        assert _matmul_inits(text, op) == ["linalg.fill"], f"{stage}:\n{text}"
        other = "linalg.batch_matmul" if op == "linalg.matmul" else "linalg.matmul"
        assert other not in text
    for stage in ("module", "optimized"):
        assert "tensor.collapse_shape" not in texts[stage]
        assert "tensor.expand_shape" not in texts[stage]


@pytest.mark.parametrize(
    "dtype, gemm, other", [(F32, "scipy_cblas_sgemm", "dgemm"), (F64, "scipy_cblas_dgemm", "sgemm")]
)
@pytest.mark.parametrize("target", ["cpu-blas", "cpu-blas-unfused"])
def test_blas_target_calls_gemm(rng, dtype, gemm, other, target):
    a, b = rand(rng, (3, 4), dtype), rand(rng, (4, 5), dtype)
    texts = stages(matmul, a, b, target=target)
    assert f"llvm.call @{gemm}(" in texts["lowered.printed"]
    assert other not in texts["lowered"]
    assert f"__blas_matmul_{'f32' if dtype == F32 else 'f64'}" in texts["blas"]


def test_blas_target_batched_calls_gemm(rng):
    texts = stages(matmul, rand(rng, (2, 3, 4)), rand(rng, (2, 4, 5)), target="cpu-blas")
    assert "call @__blas_batch_matmul_f32" in texts["blas"]
    assert "scipy_cblas_sgemm" in texts["lowered"]


def test_loop_target_and_int32_do_not_call_gemm(rng):
    texts = stages(matmul, rand(rng, (3, 4)), rand(rng, (4, 5)), target="cpu-loops")
    assert "cblas" not in texts["lowered"] and "blas" not in texts
    ints = stages(matmul, rand(rng, (3, 4), I32), rand(rng, (4, 5), I32), target="cpu-blas")
    assert "cblas" not in ints["lowered"]
    assert "linalg.matmul" in ints["module"]


def test_stage_names(rng):
    x = rand(rng, (3, 4))
    f = jit(lambda x: x @ x.T)
    expected = {
        "cpu-loops": ["module", "optimized", "bufferized", "libm", "lowered"],
        "cpu-blas": ["module", "optimized", "bufferized", "blas", "libm", "lowered"],
        "cpu-loops-unfused": ["module", "bufferized", "libm", "lowered"],
        "cpu-blas-unfused": ["module", "bufferized", "blas", "libm", "lowered"],
    }
    for target, names in expected.items():
        texts = stages(f, x, target=target)
        assert [k for k in texts if "." not in k] == names, target
        assert "llvm.func @kernel" in texts["lowered.printed"]
        assert "tensor<" not in texts["bufferized"].split("func.func @kernel")[1]
        if "optimized" not in names:  # .optimized is the built module on unfused targets
            assert texts["optimized.printed"] == texts["module.printed"]


# --------------------------------------------------------------------------------------------
# transpose, reduce, reshape, extract_slice


def test_transpose_is_linalg_transpose(rng):
    f = jit(lambda x: (x.T, np.transpose(x, (1, 0, 2)), x.mT))
    text = stages(f, rand(rng, (3, 4, 5)))["module.printed"]
    assert len(re.findall(r"linalg.transpose", text)) == 3
    assert "permutation = [2, 1, 0]" in text and "permutation = [1, 0, 2]" in text
    assert "permutation = [0, 2, 1]" in text


def test_reductions_are_linalg_reduce(rng):
    f = jit(lambda x: (x.sum(axis=1), np.max(x, axis=(0, 2)), x.min(), x.mean(axis=-1)))
    text = stages(f, rand(rng, (3, 4, 5)))["module.printed"]
    assert text.count("linalg.reduce") == 4
    assert "dimensions = [1]" in text and "dimensions = [0, 2]" in text
    assert "dimensions = [0, 1, 2]" in text and "dimensions = [2]" in text
    assert "arith.maximumf" in text and "arith.minimumf" in text


def test_user_reshapes_are_tensor_reshape(rng):
    f = jit(
        lambda x: (
            x.reshape(-1),
            x.reshape(5, 12).T.reshape(6, 10),
            x[None],
            x.sum(axis=1, keepdims=True),
            x[:, 1],
        )
    )
    texts = stages(f, rand(rng, (3, 4, 5)))
    for stage in ("module", "module.printed"):
        text = texts[stage]
        assert "tensor.reshape" in text
        assert "tensor.collapse_shape" not in text and "tensor.expand_shape" not in text
    shapes = re.findall(r"-> tensor<([\dx]+)xf32>", texts["module"])
    for shape in ("60", "5x12", "6x10", "1x3x4x5", "3x1x5"):
        assert shape in shapes, shape


def test_slices_are_extract_slice(rng):
    f = jit(lambda x: x[1:5:2, -3:, 2])
    text = stages(f, rand(rng, (6, 7, 8)))["module.printed"]
    ops_seen = ops_in(text)
    assert "tensor.extract_slice" in ops_seen
    compact = re.sub(r"\s", "", text)
    assert "[1,4,2][2,3,1][2,1,1]" in compact  # offsets, sizes, strides


# --------------------------------------------------------------------------------------------
# casts, the causal mask, gather


def test_astype_casts_are_explicit(rng):
    f = jit(lambda x, i: (x.astype(np.float32), x.astype(np.int32), i.astype(np.float64)))
    text = stages(f, rand(rng, (3, 4), F64), rand(rng, (3, 4), I32, -5, 5))["module.printed"]
    assert "arith.truncf" in text and "arith.fptosi" in text and "arith.sitofp" in text


def test_causal_mask_is_an_index_generic(rng):
    @jit
    def masked(x):
        return x + ops.causal_mask(x.shape[-1], x.dtype, x.__array_namespace__())

    texts = stages(masked, rand(rng, (2, 5, 5)))
    text = texts["module.printed"]
    assert "linalg.index 0" in text and "linalg.index 1" in text and "arith.cmpi" in text
    assert "linalg.generic" in text
    header = re.search(r"func.func @kernel\(([^)]*)\)", text).group(1)
    assert header.count("memref<") == 2  # x and the output: the mask is no host array
    assert "dense<" not in text  # and no constant array either
    assert "memref.global" not in texts["lowered"]


def test_gather_has_an_error_output(rng):
    f = jit(lambda table, ids: ops.gather(table, ids))
    text = stages(f, rand(rng, (7, 5)), rand(rng, (3, 4), I32, 0, 7))["module.printed"]
    header = re.search(r"func.func @kernel\(([^)]*)\)", text).group(1)
    assert "memref<i32>" in header  # the out-of-range flag
    assert "tensor.extract" in text
