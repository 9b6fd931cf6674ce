"""Layout and data-movement ops against NumPy: basic indexing, reshape/transpose chains, astype,
gather, the causal mask; rank-0 values; output trees and argument trees; captured arrays."""

from __future__ import annotations

import dataclasses
import re
from typing import NamedTuple

import numpy as np
import pytest
from compiler_checks import (
    ALL_TARGETS,
    F32,
    F64,
    FUSED,
    I32,
    REAL_TARGETS,
    UNFUSED,
    assert_like_numpy,
    check,
    matmul_atol,
    rand,
    reference,
)

from compiler import jit, ops

# --------------------------------------------------------------------------------------------
# Basic indexing on a (6, 7, 8) array: slices with steps, negative indices, ints, None, Ellipsis

INDEXING = {
    "x[1:5:2, -3:, 2]": lambda x: x[1:5:2, -3:, 2],
    "x[..., None, 1:7:3]": lambda x: x[..., None, 1:7:3],
    "x[-1]": lambda x: x[-1],
    "x[None, :, 3, ::2]": lambda x: x[None, :, 3, ::2],
    "x[2:, ..., -2]": lambda x: x[2:, ..., -2],
    "x[::4, 1::3, 7]": lambda x: x[::4, 1::3, 7],
    "x[0, -1, 5]": lambda x: x[0, -1, 5],  # a rank-0 result
    "x[1:100, -100:2]": lambda x: x[1:100, -100:2],  # bounds clipped like Python slices
    "x[...]": lambda x: x[...],
    "x[None, ..., None]": lambda x: x[None, ..., None],
    "x[-6, 5:6, None, -1:]": lambda x: x[-6, 5:6, None, -1:],
    "x[np.int32(2), np.int64(1):]": lambda x: x[np.int32(2), np.int64(1) :],
    "x[1:][::2][:, 1:]": lambda x: x[1:][::2][:, 1:],  # slices of slices
    "x.T[1:, ::3]": lambda x: x.T[1:, ::3],
    "x[:, 3] + x[1, 2]": lambda x: x[:, 3] + x[1, 2],  # different slices broadcast together
    "iterate rows": lambda x: tuple(row[0] for row in x[:3]),
    "x[::-1]": lambda x: x[::-1],  # negative steps walk a dimension backwards
    "x[:, 5:0:-2, ::-3]": lambda x: x[:, 5:0:-2, ::-3],
    "x[-2::-4, 3, ::-1][None]": lambda x: x[-2::-4, 3, ::-1][None],
    "x[::-1][1::2] + 1": lambda x: x[::-1][1::2] + 1,
}
INDEXING_KERNELS = {name: jit(fn) for name, fn in INDEXING.items()}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing(rng, name):
    x = rand(rng, (6, 7, 8), F32)
    check(INDEXING_KERNELS[name], x)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_indexing_every_target(rng, target):
    x = rand(rng, (6, 7, 8), F64)
    check(INDEXING_KERNELS["x[1:5:2, -3:, 2]"], x, targets=[target])
    check(INDEXING_KERNELS["x[None, :, 3, ::2]"], x, targets=[target])
    check(INDEXING_KERNELS["x[:, 5:0:-2, ::-3]"], x, targets=[target])


@pytest.mark.parametrize("dtype", [F64, I32], ids=str)
def test_indexing_other_dtypes(rng, dtype):
    check(INDEXING_KERNELS["x[::4, 1::3, 7]"], rand(rng, (6, 7, 8), dtype, -9, 9))


# --------------------------------------------------------------------------------------------
# reshape (with -1), transpose, .T, .mT, permute_dims and chains of them on a (3, 4, 5) array

LAYOUT = {
    "reshape(-1)": lambda x: x.reshape(-1),
    "reshape(5, -1)": lambda x: x.reshape(5, -1),
    "np.reshape(x, (2, -1, 3))": lambda x: np.reshape(x, (2, -1, 3)),
    "xp.reshape": lambda x: x.__array_namespace__().reshape(x, (6, 10)),
    "reshape(60)": lambda x: x.reshape(60),
    "reshape((4, 15)).T": lambda x: x.reshape((4, 15)).T,
    "x.T": lambda x: x.T,
    "transpose(2, 0, 1)": lambda x: x.transpose(2, 0, 1),
    "transpose((1, 0, 2))": lambda x: x.transpose((1, 0, 2)),
    "np.transpose(x)": lambda x: np.transpose(x),
    "np.transpose(x, (1, 2, 0))": lambda x: np.transpose(x, (1, 2, 0)),
    "np.permute_dims": lambda x: np.permute_dims(x, (2, 1, 0)),
    "xp.permute_dims": lambda x: x.__array_namespace__().permute_dims(x, (0, 2, 1)),
    "transpose(-1, 0, -2)": lambda x: x.transpose(-1, 0, -2),
    "x.mT": lambda x: x.mT,
    "x.T.reshape(-1, 4).T": lambda x: x.T.reshape(-1, 4).T,
    "reshape-slice-T": lambda x: x.reshape(60).reshape(6, 10)[1::2, ::3].T,
    "transpose-reshape-add": lambda x: x.transpose(1, 2, 0).reshape(4, 15) * 2 + x.reshape(4, 15),
    "x[None].reshape(1, 12, 5, 1)": lambda x: x[None].reshape(1, 12, 5, 1),
    # NumPy takes any negative entry as the unknown dimension, not only -1.
    "x.reshape(-2, 5) * 2": lambda x: x.reshape(-2, 5) * 2,
    "x.T.reshape(5, -7, 2).sum(1)": lambda x: x.T.reshape(5, -7, 2).sum(axis=1),
    "T.T": lambda x: x.T.T + x,
    "np.broadcast_to": lambda x: np.broadcast_to(x[:, :1], (2, 3, 4, 5)) - x,
}
LAYOUT_KERNELS = {name: jit(fn) for name, fn in LAYOUT.items()}


@pytest.mark.parametrize("name", list(LAYOUT))
def test_reshape_transpose(rng, name):
    x = rand(rng, (3, 4, 5), F32)
    check(LAYOUT_KERNELS[name], x)


@pytest.mark.parametrize("shape", [(-1, -1), (-2, -1), (3, -4, -1), (-5, 4, -5)])
def test_reshape_with_two_unknown_dimensions_is_numpys_value_error(shape):
    x = np.zeros((3, 4, 5), F32)
    with pytest.raises(ValueError, match="one unknown dimension") as numpy_error:
        x.reshape(shape)
    with pytest.raises(ValueError, match="one unknown dimension"):
        jit(lambda a: a.reshape(shape))(x)
    assert "unknown" in str(numpy_error.value)


@pytest.mark.parametrize("target", UNFUSED + ["cpu-blas", "cpu-vector"])
def test_reshape_transpose_other_targets(rng, target):
    x = rand(rng, (3, 4, 5), F32)
    for name in ("x.T.reshape(-1, 4).T", "transpose-reshape-add", "reshape-slice-T"):
        check(LAYOUT_KERNELS[name], x, targets=[target])


# --------------------------------------------------------------------------------------------
# astype among float32, float64, int32 (and bool)


@jit
def cast(x, *, dtype):
    xp = x.__array_namespace__()
    return x.astype(dtype), np.astype(x, dtype), xp.astype(x, dtype)


@pytest.mark.parametrize("target_dtype", [F32, F64, I32], ids=str)
@pytest.mark.parametrize("source_dtype", [F32, F64, I32], ids=str)
def test_astype(rng, source_dtype, target_dtype):
    if source_dtype == I32:
        # Large magnitudes round when they become float32 (2**24 + 1 is not a float32).
        x = rand(rng, (3, 4), I32, -1000, 1000)
        x.flat[:4] = [2**24 + 1, -(2**31), 2**31 - 1, -(2**24) - 3]
    else:
        x = rand(rng, (3, 4), source_dtype, -100.0, 100.0)  # float -> int truncates toward 0
        x.flat[:4] = [-2.7, 2.7, -0.5, 1e-30]
    check(cast, x, dtype=target_dtype)


@jit
def bool_casts(x):
    return (x > 0).astype(np.float32), (x < 0).astype(np.int32), x.astype(bool)


@pytest.mark.parametrize("dtype", [F32, I32], ids=str)
def test_astype_bool(rng, dtype):
    x = rand(rng, (3, 4), dtype, -3, 3)
    if dtype == F32:
        x[0, :3] = [0.0, -0.0, np.nan]
    check(bool_casts, x)


@jit
def bool_arguments(c, d, x):
    return (
        c,
        c.astype(np.float32) + x,
        d.astype(np.int32),
        np.where(c, d, c),  # a select of booleans
        np.where(d, x, -x),
    )


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-loops-unfused"])
def test_boolean_arguments(rng, target):
    c, d, x = rand(rng, (3, 4), np.bool_), rand(rng, (4,), np.bool_), rand(rng, (3, 4))
    check(bool_arguments, c, d, x, targets=[target])


# --------------------------------------------------------------------------------------------
# gather and the causal mask


@jit
def gather_kernel(table, ids):
    return ops.gather(table, ids) * 2 + 1


@pytest.mark.parametrize(
    "table_shape, ids_shape",
    [((7, 5), (3, 4)), ((7, 5), (6,)), ((7, 2, 3), (4,)), ((7,), (5,))],
    ids=str,
)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_gather(rng, dtype, table_shape, ids_shape):
    table = rand(rng, table_shape, dtype)
    ids = rand(rng, ids_shape, I32, 0, table_shape[0])
    ids.flat[:2] = [0, table_shape[0] - 1]  # both ends of the table
    check(gather_kernel, table, ids, targets=[*FUSED, "cpu-loops-unfused"])


def test_gather_rank0_ids(rng):
    table = rand(rng, (7, 5), F32)
    check(gather_kernel, table, np.array(3, np.int32))


@jit
def masked(x):
    xp = x.__array_namespace__()
    mask = ops.causal_mask(x.shape[-1], x.dtype, xp)
    return x + mask, mask


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_causal_mask(rng, dtype):
    x = rand(rng, (2, 5, 5), dtype)  # a batch of 2 (5, 5) score matrices
    got = check(masked, x, targets=REAL_TARGETS)
    assert np.all(got[1][np.tril_indices(5)] == 0) and np.all(got[1][np.triu_indices(5, 1)] < -1e9)


# --------------------------------------------------------------------------------------------
# Rank-0 inputs and outputs


@jit
def rank0(s, x):
    return s * x, np.exp(s), x.sum(), x[1, 2] + s, (s * 2).reshape(1, 1)


@pytest.mark.parametrize(
    "scalar",
    [np.float32(1.5), np.array(2.5, np.float32), np.array(-0.5, np.float64), np.int32(3)],
    ids=["np.float32", "0-d float32", "0-d float64", "np.int32"],
)
def test_rank0_inputs_and_outputs(rng, scalar):
    # A 0-d array or NumPy scalar is a strong operand: 0-d float64 * float32 array is float64.
    check(rank0, scalar, rand(rng, (3, 4), F32))


@jit
def rank0_only(x):
    total = x.sum()
    return (
        total, total * total, x[0, 0].reshape(()), x[:1, :1].reshape(-1), total[None],
        total[...], total.reshape(1, 1), total.T, np.exp(total) + x,
    )  # fmt: skip


def test_rank0_outputs_from_arrays(rng):
    check(rank0_only, rand(rng, (3, 4), F64), targets=["cpu-loops", "cpu-loops-unfused"])


# --------------------------------------------------------------------------------------------
# Output trees


class Pair(NamedTuple):
    left: object
    right: object


@jit
def output_tree(x, y):
    return {
        "sum": x + y,
        "pair": (x.T, y.max()),
        "list": [x * 2, {"nested": y - 1}],
        "named": Pair(np.exp(x), y),
    }


def test_tuple_dict_list_namedtuple_outputs(rng):
    x, y = rand(rng, (3, 4)), rand(rng, (4,))
    got = output_tree(x, y, target="cpu-loops")
    want = reference(output_tree, x, y)
    assert isinstance(got, dict) and set(got) == set(want)
    assert isinstance(got["pair"], tuple) and isinstance(got["list"], list)
    assert isinstance(got["named"], Pair) and isinstance(got["list"][1], dict)
    assert_like_numpy(got, want)


@jit
def single_in_tuple(x):
    return (x + 1,)


def test_one_element_tuple_output(rng):
    x = rand(rng, (3, 4))
    got = single_in_tuple(x, target="cpu-loops")
    assert isinstance(got, tuple) and len(got) == 1
    assert_like_numpy(got, (x + 1,))


# --------------------------------------------------------------------------------------------
# Argument trees: dataclasses, NamedTuples, dicts, lists, with static leaves


@dataclasses.dataclass
class Linear:
    weight: np.ndarray
    bias: np.ndarray
    scale: float = 1.0  # a static leaf


class Batch(NamedTuple):
    inputs: np.ndarray
    offsets: np.ndarray


@jit
def tree_fn(layer, batch, extra, seq):
    hidden = (batch.inputs @ layer.weight + layer.bias) * layer.scale
    return hidden + batch.offsets[:, None] - extra["shift"] * seq[0] + seq[1][0]


def test_argument_trees(rng):
    layer = Linear(rand(rng, (4, 5)), rand(rng, (5,)), scale=0.5)
    batch = Batch(rand(rng, (3, 4)), rand(rng, (3,), F64))
    extra = {"shift": rand(rng, (5,)), "unused_static": "text"}
    seq = [2.0, [rand(rng, (3, 5))]]  # a static Python float and a nested list
    atol = matmul_atol(batch.inputs, layer.weight, F32)
    check(tree_fn, layer, batch, extra, seq, targets=FUSED, atol=atol)


# --------------------------------------------------------------------------------------------
# Captured NumPy arrays are kernel arguments, read at every call


def test_captured_arrays_are_read_at_call_time(rng):
    weight = rand(rng, (4, 5))
    bias = rand(rng, (5,), F64)

    @jit
    def layer(x):
        # (NumPy-only expressions such as `bias * 2` would run once, at trace time.)
        return x @ weight + bias

    x = rand(rng, (3, 4))
    atol = matmul_atol(x, weight, F32)
    assert_like_numpy(layer(x, target="cpu-loops"), x @ weight + bias, atol=atol)
    weight[...] = rand(rng, (4, 5))  # mutated in place between calls
    bias += 1.0
    assert_like_numpy(layer(x, target="cpu-loops"), x @ weight + bias, atol=atol)
    assert layer.traces == 1  # the new values did not need a new trace
    compiled = layer.compile(x, target="cpu-loops")
    assert len(compiled.inputs) == 3  # x, and the two captured arrays
    header = compiled.stages["module"].split("{", 2)[1]
    assert header.count("memref<4x5xf32>") == 1 and header.count("memref<5xf64>") == 1
    # Not baked in: the only dense constants are the integer shapes of tensor.reshape.
    for constant in re.findall(r"dense<([^>]*)>", compiled.stages["module"]):
        assert re.fullmatch(r"\[?[0-9, ]*\]?", constant), constant
    assert_like_numpy(compiled(x), x @ weight + bias, atol=atol)


def test_captured_array_used_twice_and_through_numpy_operators(rng):
    table = rand(rng, (3, 4))

    @jit
    def f(x):
        return table + x, x * table.T.T, table @ x.T  # ndarray op Tensor dispatches to us

    x = rand(rng, (3, 4))
    got = f(x, target="cpu-loops")
    table *= -1.0
    got_after = f(x, target="cpu-loops")
    assert_like_numpy(got_after, reference(f, x), atol=1e-5)
    assert not np.allclose(got[0], got_after[0])
