"""Instrumented kernels (``compiler.runtime.instrumented``): the memory compiled code gets holds
0xFF bytes, so a read before a write gives NaN or -1 in every run, and gemm calls are counted.
Correct programs answer bit-identically either way; a kernel keeps the mode it was made in."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from compiler_checks import rand

import compiler
from compiler import driver, jit
from compiler.runtime import (
    INSTRUMENT_ENV,
    blas_calls,
    instrumented,
    instrumenting,
    live_blocks,
    make_engine,
    output_buffers,
    poison_globals,
)

#: Reads four bytes of a fresh malloc and of an undefined global, writes both to ``out``.
_READS_BEFORE_WRITING = """
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.mlir.global private @scratch() {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<2 x array<3 x f32>> {
    %0 = llvm.mlir.undef : !llvm.array<2 x array<3 x f32>>
    llvm.return %0 : !llvm.array<2 x array<3 x f32>>
  }
  llvm.func @read(%out: !llvm.ptr) {
    %size = llvm.mlir.constant(64 : i64) : i64
    %p = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    %v = llvm.load %p : !llvm.ptr -> i32
    llvm.store %v, %out : i32, !llvm.ptr
    llvm.call @free(%p) : (!llvm.ptr) -> ()
    %g = llvm.mlir.addressof @scratch : !llvm.ptr
    %w = llvm.load %g : !llvm.ptr -> f32
    %second = llvm.getelementptr %out[1] : (!llvm.ptr) -> !llvm.ptr, i32
    llvm.store %w, %second : f32, !llvm.ptr
    llvm.return
  }
}
"""  # noqa: E501


def _read_before_writing(poison: bool) -> tuple[int, float]:
    from mlir import ir

    with ir.Context():
        text = poison_globals(_READS_BEFORE_WRITING) if poison else _READS_BEFORE_WRITING
        engine = make_engine(ir.Module.parse(text), 0, poison)
        out = np.zeros(2, np.int32)
        pointer = ctypes.c_void_p(out.ctypes.data)
        packed = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(pointer), ctypes.c_void_p))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("read"))(packed)
    return int(out[0]), float(out[1:].view(np.float32)[0])


def test_poisoned_allocations_and_globals_read_as_nan_and_minus_one():
    integer, real = _read_before_writing(poison=True)
    assert integer == -1
    assert np.isnan(real)
    # Unpoisoned, the undefined global is a zeroed page of the JIT's image.
    assert _read_before_writing(poison=False)[1] == 0.0


#: Allocates two blocks, frees one of them and a NULL pointer.
_LEAVES_ONE_BLOCK = """
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @run() {
    %size = llvm.mlir.constant(64 : i64) : i64
    %a = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    %b = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    %null = llvm.mlir.zero : !llvm.ptr
    llvm.call @free(%null) : (!llvm.ptr) -> ()
    llvm.return
  }
}
"""


def test_instrumented_kernels_count_the_blocks_they_leave_allocated():
    """``live_blocks`` rises by what an instrumented call allocated and did not free (a NULL
    free counts for nothing); a kernel that is not instrumented is not counted."""
    from mlir import ir

    for instrument, grows in ((True, 1), (False, 0)):
        with ir.Context():
            engine = make_engine(ir.Module.parse(_LEAVES_ONE_BLOCK), 0, instrument)
            run = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("run"))
            before = live_blocks()
            run((ctypes.c_void_p * 0)())
            assert live_blocks() - before == grows


def test_poison_globals_initializes_only_undefined_globals():
    """An undefined global becomes its poison followed by a guard, listed by the module's
    ``GUARDS_FUNCTION``; a global with a value is left alone (a second pass changes nothing)."""
    from mlir import ir

    from compiler.runtime import GUARD_BYTES, GUARDS_FUNCTION

    text = poison_globals(_READS_BEFORE_WRITING)
    struct = f"!llvm.struct<(array<2 x array<3 x f32>>, array<{GUARD_BYTES} x i8>)>"
    assert f"@scratch() {{addr_space = 0 : i32, alignment = 64 : i64}} : {struct}" in text
    assert "llvm.mlir.constant(dense<0xFFFFFFFF> : tensor<2x3xf32>)" in text
    assert f"dense<-91> : tensor<{GUARD_BYTES}xi8>" in text
    assert f"llvm.func @{GUARDS_FUNCTION}(%out: !llvm.ptr)" in text
    assert poison_globals(text) == text
    with ir.Context():
        ir.Module.parse(text)
    other = _READS_BEFORE_WRITING.replace("array<3 x f32>", "array<3 x i16>")
    assert "dense<-1> : tensor<2x3xi16>" in poison_globals(other)
    assert poison_globals(_LEAVES_ONE_BLOCK) == _LEAVES_ONE_BLOCK


@pytest.mark.parametrize("shape", [(2, 3), (), (1,)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "bfloat16"])
def test_output_buffers_are_poisoned_in_every_dtype_and_rank(dtype, shape):
    from compiler.dtypes import BFLOAT16

    np_dtype = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.ones(shape, np_dtype)
    compiled = jit(lambda a: a).compile(x, target="cpu-loops")
    buffers = output_buffers(compiled.artifacts.native.signature, True)
    assert all((b.reshape(-1).view(np.uint8) == 0xFF).all() for b in buffers)
    assert buffers[0].shape == shape and buffers[0].dtype == np_dtype
    with instrumented():
        again = jit(lambda a: a[..., None]).compile(x, target="cpu-loops")
    np.testing.assert_array_equal(again(x), x[..., None])


def test_the_mode_comes_from_the_block_else_the_environment(monkeypatch):
    monkeypatch.delenv(INSTRUMENT_ENV, raising=False)
    assert not instrumenting()
    with instrumented():
        assert instrumenting()
        with instrumented(False):
            assert not instrumenting()
        assert instrumenting()
    monkeypatch.setenv(INSTRUMENT_ENV, "1")
    assert instrumenting()
    with instrumented(False):
        assert not instrumenting()
    monkeypatch.setenv(INSTRUMENT_ENV, "0")
    assert not instrumenting()


TARGETS = ["cpu-loops@O0", "cpu-blas", "cpu-loops-unfused@O0", "cpu-vector@O0", "cpu-vector"]


def _program(a, b):
    h = np.tanh(a @ b) * 0.5
    return h - h.max(axis=-1, keepdims=True), (a > 0).astype(np.int32) - 1


@pytest.mark.parametrize("target", TARGETS)
def test_correct_programs_answer_bit_identically_on_poisoned_memory(rng, target):
    a, b = rand(rng, (5, 7)), rand(rng, (7, 6))
    plain = jit(_program).compile(a, b, target=target)
    with instrumented():
        poisoned_kernel = jit(_program).compile(a, b, target=target)
    assert poisoned_kernel.artifacts.native is not plain.artifacts.native  # its own kernel
    assert poisoned_kernel.artifacts.native.instrumented and not plain.artifacts.native.instrumented
    assert poisoned_kernel.stages == plain.stages  # the stages are the production ones
    for first, second in zip(plain(a, b), poisoned_kernel(a, b), strict=True):
        np.testing.assert_array_equal(first, second)


def test_linked_kernels_keep_the_mode_they_were_made_in(rng):
    driver.clear_caches()
    a, b = rand(rng, (3, 4)), rand(rng, (4, 4))
    with instrumented():
        f = jit(_program)
        assert f.prepare(a, b, targets=TARGETS[:4]) >= 2
        compiled = [f.compile(a, b, target=t) for t in TARGETS[:4]]
    assert all(c.artifacts.native.instrumented for c in compiled)
    # Unpoisoned, the same targets compile kernels of their own.
    again = jit(_program).compile(a, b, target=TARGETS[0])
    assert not again.artifacts.native.instrumented
    np.testing.assert_array_equal(again(a, b)[0], compiled[0](a, b)[0])


def test_a_read_of_an_unfilled_accumulator_is_nan_on_every_target(rng, monkeypatch):
    """The class this exists for: a matmul accumulating into memory nobody zeroed (the
    selftest's matmul-without-zero-fill) gives NaN, not whatever the page held."""
    from compiler.lower import emit

    original = emit._Emitter.filled

    def unfilled(self, shape, dtype, value):
        return self.empty(shape, dtype) if value == 0 else original(self, shape, dtype, value)

    monkeypatch.setattr(emit._Emitter, "filled", unfilled)
    a, b = rand(rng, (3, 4)), rand(rng, (4, 2))
    with driver.fresh(), instrumented():
        for target in ("cpu-loops@O0", "cpu-vector@O0", "cpu-vector"):
            result = jit(lambda x, y: x @ y).compile(a, b, target=target)(a, b)
            assert np.isnan(result).all(), target
    driver.clear_caches()  # no kernel of the planted bug outlives the test
    compiler.clear_cache()


def _calls(compiled, *args) -> int:
    before = blas_calls()
    compiled(*args)
    return blas_calls() - before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_instrumented_kernels_count_their_gemm_calls(rng, dtype):
    a, b = rand(rng, (4, 5), dtype), rand(rng, (5, 3), dtype)
    batched, other = rand(rng, (3, 4, 5), dtype), rand(rng, (3, 5, 2), dtype)
    with instrumented():
        matmul = jit(lambda x, y: x @ y).compile(a, b, target="cpu-blas")
        batch = jit(lambda x, y: x @ y).compile(batched, other, target="cpu-blas")
        loops = jit(lambda x, y: x @ y).compile(a, b, target="cpu-loops")
        # Every other column of a: no unit stride, the helper's loop-nest fallback.
        strided = jit(lambda x, y: x[:, ::2] @ y[:3]).compile(a, b, target="cpu-blas")
    assert _calls(matmul, a, b) == 1
    assert _calls(batch, batched, other) == 3  # one a batch
    assert _calls(loops, a, b) == 0
    assert _calls(strided, a, b) == 0
    np.testing.assert_allclose(strided(a, b), a[:, ::2] @ b[:3], rtol=1e-5)
    plain = jit(lambda x, y: x @ y).compile(a, b, target="cpu-blas")  # not instrumented
    assert _calls(plain, a, b) == 0
    np.testing.assert_array_equal(plain(a, b), matmul(a, b))


#: Allocates 16 bytes (``malloc``, or ``aligned_alloc`` of 128 when %aligned is not 0), stores a
#: byte at %at bytes from its start, writes its address to %out and frees it.
_STORES_AT = """
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @run(%at: i64, %aligned: i64, %out: !llvm.ptr) {
    %size = llvm.mlir.constant(16 : i64) : i64
    %alignment = llvm.mlir.constant(128 : i64) : i64
    %zero = llvm.mlir.constant(0 : i64) : i64
    %use_aligned = llvm.icmp "ne" %aligned, %zero : i64
    llvm.cond_br %use_aligned, ^aligned, ^plain
  ^aligned:
    %a = llvm.call @aligned_alloc(%alignment, %size) : (i64, i64) -> !llvm.ptr
    llvm.br ^store(%a : !llvm.ptr)
  ^plain:
    %m = llvm.call @malloc(%size) : (i64) -> !llvm.ptr
    llvm.br ^store(%m : !llvm.ptr)
  ^store(%p: !llvm.ptr):
    %q = llvm.getelementptr %p[%at] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %v = llvm.mlir.constant(7 : i8) : i8
    llvm.store %v, %q : i8, !llvm.ptr
    %address = llvm.ptrtoint %p : !llvm.ptr to i64
    llvm.store %address, %out : i64, !llvm.ptr
    llvm.call @free(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
}
"""


@pytest.mark.parametrize("aligned", [False, True])
def test_heap_blocks_of_instrumented_kernels_are_guarded(aligned):
    """A store into the ``GUARD_BYTES`` after a block, or just before it, is counted when the
    block is freed (``heap_overruns``); stores inside are not; ``aligned_alloc`` keeps its
    alignment; a kernel that is not instrumented is not counted."""
    from mlir import ir

    from compiler.runtime import GUARD_BYTES, heap_overruns

    inside, outside = (0, 15), (16, 16 + GUARD_BYTES - 1, -1, -40)
    for instrument in (True, False):
        with ir.Context():
            engine = make_engine(ir.Module.parse(_STORES_AT), 0, instrument)
            run = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("run"))
            for at in inside + (outside if instrument else ()):
                values = [ctypes.c_int64(at), ctypes.c_int64(int(aligned)), ctypes.c_int64(0)]
                out = ctypes.c_void_p(ctypes.addressof(values[2]))
                pointers = [ctypes.pointer(v) for v in values[:2]] + [ctypes.pointer(out)]
                packed = (ctypes.c_void_p * 3)(*[ctypes.cast(p, ctypes.c_void_p) for p in pointers])
                before, live = heap_overruns(), live_blocks()
                run(packed)
                assert heap_overruns() - before == (at in outside), at
                assert live_blocks() == live
                if aligned:
                    assert values[2].value % 128 == 0


#: ``kernel(x: memref<4xf32>, out: memref<4xf32>)``: out = x, then the store of each mode.
_COPIES = """
memref.global "private" @scratch : memref<4xf32> = uninitialized
func.func @kernel(%x: memref<4xf32>, %out: memref<4xf32>) attributes {llvm.emit_c_interface} {
  memref.copy %x, %out : memref<4xf32> to memref<4xf32>
  %scratch = memref.get_global @scratch : memref<4xf32>
  %long = memref.reinterpret_cast %scratch to offset: [0], sizes: [5], strides: [1]
    : memref<4xf32> to memref<5xf32>
  %c = arith.constant 2.0 : f32
  %i = arith.constant INDEX : index
  STORE
  return
}
"""
_STORES = {
    "none": ("0", ""),
    "past-the-end": ("4", "memref.store %c, %wide[%i] : memref<5xf32>"),
    "before-the-start": ("-1", "memref.store %c, %out[%i] : memref<4xf32>"),
    "into-the-input": ("3", "memref.store %c, %x[%i] : memref<4xf32>"),
    "past-a-static-buffer": ("4", "memref.store %c, %long[%i] : memref<5xf32>"),
}


@pytest.mark.parametrize("mode", sorted(_STORES))
def test_instrumented_kernels_see_stores_outside_their_outputs_and_into_inputs(mode):
    """A kernel gets guarded copies of its inputs and guarded outputs: a store past an output's
    end or before its start is an ``overrun`` line of ``memory_faults``, one into an input an
    ``input-written`` line, and the caller's array is never changed; an undefined global (a
    static temporary) is followed by a guard too (``poison_globals``). Not instrumented: the
    same answers, nothing checked."""
    from types import SimpleNamespace

    from mlir import ir, passmanager

    from compiler.lower.emit import KernelSignature
    from compiler.runtime import Kernel, fault_mark, memory_faults, poison_globals

    index, store = _STORES[mode]
    wide = "%wide = memref.reinterpret_cast %out to offset: [0], sizes: [5], strides: [1]"
    text = _COPIES.replace("INDEX", index).replace(
        "STORE", f"{wide} : memref<4xf32> to " f"memref<5xf32>\n  {store}"
    )
    node = SimpleNamespace(shape=(4,), dtype=np.dtype("float32"))
    signature = KernelSignature([node], [node], 0)
    x = np.arange(4, dtype=np.float32)
    expected = {
        "none": [],
        "past-the-end": ["overrun: output 0 (float32[4], 16 bytes) written up to 4 byte(s) past "
                         "its end"],
        "before-the-start": ["overrun: output 0 (float32[4], 16 bytes) written 4 byte(s) before "
                             "its start"],
        "into-the-input": ["input-written: input 0 (float32[4], 16 bytes): 1 of 4 element(s) "
                           "changed"],
        "past-a-static-buffer": ["overrun: static temporary 0 (a global) written up to 4 "
                                 "byte(s) past its end"],
    }[mode]  # fmt: skip
    # Not instrumented, a store outside the buffers would corrupt the caller's heap: only the
    # store into the input is made so, and it lands in the caller's array.
    for instrument in (True, False) if mode in ("none", "into-the-input") else (True,):
        with ir.Context():
            module = ir.Module.parse(text)
            passmanager.PassManager.parse(
                "builtin.module(finalize-memref-to-llvm, convert-arith-to-llvm, "
                "convert-func-to-llvm, reconcile-unrealized-casts)"
            ).run(module.operation)
            if instrument:
                module = ir.Module.parse(poison_globals(str(module)))
            kernel = Kernel(module, signature, 0, instrument=instrument)
            given = x.copy()
            mark = fault_mark()
            (out,), _ = kernel([given])
            assert memory_faults(mark) == (expected if instrument else [])
            (out,), _ = kernel([x.copy()])  # a guard is set again after the call that changed it
            assert memory_faults(mark) == (expected * 2 if instrument else [])
        np.testing.assert_array_equal(out, x)
        written = mode == "into-the-input" and not instrument
        np.testing.assert_array_equal(given, [0, 1, 2, 2] if written else x)
