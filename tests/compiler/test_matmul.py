"""matmul against NumPy: 2-D, batched, broadcast batch dimensions and 1-D operands, on the loop
and the BLAS targets; operands that are transposed, sliced or strided inside the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_checks import F32, F64, I32, MATMUL_TARGETS, UNFUSED, check, matmul_atol, rand

from compiler import jit

# Every combination of 1-D / 2-D / batched operands, all dimensions distinct (M=3, K=4, N=5).
SHAPES = [
    ((3, 4), (4, 5)),  # 2-D @ 2-D
    ((4,), (4, 5)),  # 1-D @ 2-D
    ((3, 4), (4,)),  # 2-D @ 1-D
    ((4,), (4,)),  # 1-D @ 1-D: a 0-d result
    ((2, 3, 4), (4, 5)),  # batched @ 2-D
    ((3, 4), (2, 4, 5)),  # 2-D @ batched
    ((2, 3, 4), (2, 4, 5)),  # batched @ batched
    ((6, 1, 3, 4), (2, 4, 5)),  # broadcast batch dimensions -> (6, 2, 3, 5)
    ((1, 3, 4), (2, 4, 5)),  # a size-1 batch broadcast
    ((2, 1, 3, 4), (1, 6, 4, 5)),  # both sides broadcast -> (2, 6, 3, 5)
    ((4,), (2, 4, 5)),  # 1-D @ batched
    ((2, 3, 4), (4,)),  # batched @ 1-D
    ((7, 2, 3, 4), (4, 5)),  # rank 4 @ 2-D
    ((3, 1), (1, 5)),  # K = 1: an outer product
    ((1, 4), (4, 5)),  # M = 1
    ((3, 4), (4, 1)),  # N = 1
]
SHAPE_IDS = [f"{a}@{b}" for a, b in SHAPES]


@jit
def matmul_forms(a, b):
    xp = a.__array_namespace__()
    return a @ b, np.matmul(a, b), xp.matmul(a, b)


@pytest.mark.parametrize("target", MATMUL_TARGETS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES, ids=SHAPE_IDS)
def test_matmul_shapes(rng, a_shape, b_shape, dtype, target):
    a, b = rand(rng, a_shape, dtype), rand(rng, b_shape, dtype)
    check(matmul_forms, a, b, targets=[target], atol=matmul_atol(a, b, dtype))


@pytest.mark.parametrize("target", UNFUSED)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES[::3], ids=SHAPE_IDS[::3])
def test_matmul_shapes_unfused(rng, a_shape, b_shape, target):
    a, b = rand(rng, a_shape, F32), rand(rng, b_shape, F32)
    check(matmul_forms, a, b, targets=[target], atol=matmul_atol(a, b, F32))


@pytest.mark.parametrize("a_shape, b_shape", [SHAPES[0], SHAPES[1], SHAPES[7]], ids=str)
def test_matmul_int32(rng, a_shape, b_shape):
    # int32 @ int32 is int32 (exact); the BLAS target must fall back to loops for it.
    a, b = rand(rng, a_shape, I32, -9, 10), rand(rng, b_shape, I32, -9, 10)
    check(matmul_forms, a, b, targets=MATMUL_TARGETS)


@pytest.mark.parametrize(
    "a_dtype, b_dtype", [(F32, F64), (I32, F32), (F64, I32)], ids=["f32@f64", "i32@f32", "f64@i32"]
)
def test_matmul_mixed_dtypes(rng, a_dtype, b_dtype):
    a, b = rand(rng, (2, 3, 4), a_dtype, -5, 5), rand(rng, (4, 5), b_dtype, -5, 5)
    want = check(matmul_forms, a, b, targets=MATMUL_TARGETS, atol=matmul_atol(a, b, F64))
    assert want[0].dtype == F64


# Operands the BLAS substitution has to read through strides and offsets.
LAYOUTS = {
    "a.T @ b": (lambda a, b: a.T @ b, (4, 3), (4, 5)),
    "a @ b.T": (lambda a, b: a @ b.T, (3, 4), (5, 4)),
    "a.T @ b.T": (lambda a, b: a.T @ b.T, (4, 3), (5, 4)),
    "row offset": (lambda a, b: a[1:] @ b, (4, 4), (4, 5)),
    "column window": (lambda a, b: a[:, 1:5] @ b[2:], (3, 6), (6, 5)),
    "row step": (lambda a, b: a[::2] @ b, (6, 4), (4, 5)),
    "column step": (lambda a, b: a[:, ::2] @ b, (3, 8), (4, 5)),
    "both strided": (lambda a, b: a[1::2, ::2] @ b[::2, 1:], (7, 8), (8, 6)),
    "sliced result": (lambda a, b: (a @ b)[1:, ::2], (3, 4), (4, 5)),
    "epilogue": (lambda a, b: np.exp(a @ b) * 2.0 + b[0], (3, 4), (4, 5)),
    "prologue": (lambda a, b: np.tanh(a) @ (b * b), (3, 4), (4, 5)),
    "chain": (lambda a, b: a @ b @ b.T @ a.T, (3, 4), (4, 5)),
    "batch transposed": (lambda a, b: np.transpose(a, (1, 0, 2)) @ b, (3, 2, 4), (2, 4, 5)),
    "batch mT": (lambda a, b: a @ b.mT, (2, 3, 4), (2, 5, 4)),
    "batch slice": (lambda a, b: a[:, 1:] @ b[1:], (2, 4, 4), (3, 4, 5)),
    "vector row": (lambda a, b: a[2] @ b, (3, 4), (4, 5)),
    "vector column": (lambda a, b: a @ b[:, 3], (3, 4), (4, 5)),
    "big": (lambda a, b: a @ b, (33, 65), (65, 17)),
    "big batched @ 2-D": (lambda a, b: a @ b, (2, 70, 130), (130, 90)),
    "big transposed window": (lambda a, b: a[5:, 3:].T @ b[2:], (70, 40), (67, 30)),
    "K=1 column slice": (lambda a, b: a[:, 2:3] @ b[2:3], (3, 4), (4, 5)),
    "N=1 column slice": (lambda a, b: a @ b[:, 1:2], (3, 4), (4, 5)),
    "M=1 row slice": (lambda a, b: a[1:2] @ b, (3, 4), (4, 5)),
    "transposed row step": (lambda a, b: a[::2].T @ b, (7, 3), (4, 5)),
    "result used thrice": (lambda a, b: ((a @ b), (a @ b).T, (a @ b) + 1), (3, 4), (4, 5)),
}
LAYOUT_KERNELS = {name: jit(fn) for name, (fn, _, _) in LAYOUTS.items()}


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_matmul_operand_layouts(rng, name, dtype):
    _, a_shape, b_shape = LAYOUTS[name]
    a, b = rand(rng, a_shape, dtype), rand(rng, b_shape, dtype)
    size = max(a.shape[-1], b.shape[-1])
    bound = np.abs(a).max() * np.abs(b).max() * size
    atol = 4 * size * float(np.finfo(dtype).eps) * max(bound, 1.0) ** (2 if name == "chain" else 1)
    check(LAYOUT_KERNELS[name], a, b, targets=MATMUL_TARGETS, atol=atol, rtol=1e-5)


def test_matmul_with_captured_weight(rng):
    weight = rand(rng, (4, 5), F64)
    kernel = jit(lambda x: (x @ weight, weight.T @ x.T))
    x = rand(rng, (3, 4), F32)
    check(kernel, x, targets=MATMUL_TARGETS, atol=matmul_atol(x, weight, F64))
