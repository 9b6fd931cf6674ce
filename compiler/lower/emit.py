"""Graph -> MLIR on tensors: named ``linalg`` ops where they exist, ``linalg.generic`` elsewhere.

The module is emitted as text and parsed (and so verified) by MLIR. Named ops stay named:
matmul is ``linalg.fill`` + ``linalg.matmul``/``linalg.batch_matmul``, reshapes are
``tensor.reshape`` with a constant shape operand (elementwise fusion would fold a
collapse/expand_shape into the matmul and erase what the BLAS substitution looks for), and every
dtype promotion is an explicit ``arith`` cast inside a generic. The body of an elementwise generic
is its primitive's scalar lowering (``compiler.primitives``); a reduction's combiner is the
scalar lowering of the elementwise primitive that combines.

Two ABIs:

- ``memref`` (our kernels): ``func.func @kernel(inputs..., outputs..., errors...)`` on memrefs
  with ``llvm.emit_c_interface``; inputs enter through ``bufferization.to_tensor`` and results
  leave through ``bufferization.materialize_in_destination``.
- ``tensor`` (the input contract of other MLIR compilers, e.g. IREE): ``func.func @main(inputs...)
  -> (outputs..., errors...)`` on tensors.

Booleans cross both as ``i8`` (NumPy's bool layout). Each ``gather`` adds a rank-0 ``i32`` error
output that is nonzero when an id was out of range.

float16 and bfloat16 are stored as ``f16``/``bf16`` and computed as NumPy (and ml_dtypes) compute
them: every arithmetic body extends its operands to ``f32``, computes, and truncates the result
once; sums accumulate in ``f32`` and round at the end (NumPy's float16 pairwise sum and matmul
loops do); a float16 matmul is ``linalg.matmul`` of ``f16`` operands into an ``f32`` accumulator,
then one truncation (so the BLAS stage, ``f32``/``f64`` only, never takes it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import workarounds
from ..dtypes import BOOL, COMPUTE, INT32, element, is_low_precision, storage
from ..frontend.graph import Graph, Node, topological
from ..primitives import ScalarCall
from ..primitives.scalar import narrow

KERNEL = "kernel"
TENSOR_ENTRY = "main"
ABIS = ("memref", "tensor")


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{storage(dtype)}>"


def memref_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"memref<{''.join(f'{d}x' for d in shape)}{storage(dtype)}>"


def scalar_literal(value: object, dtype: np.dtype) -> str:
    """An exact ``arith.constant`` literal (floats as bit patterns: inf and NaN survive)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return "1" if value else "0"  # an i1 literal
    if dtype.kind in "iu":
        return str(int(value))
    with np.errstate(over="ignore"):  # -1e10 in float16 is -inf, as NumPy converts it
        bits = np.array(value, dtype).view(f"u{dtype.itemsize}")
    return f"0x{int(bits):0{2 * dtype.itemsize}X}"


def _map(dims: int, exprs: list[str]) -> str:
    names = ", ".join(f"d{i}" for i in range(dims))
    return f"affine_map<({names}) -> ({', '.join(exprs)})>"


def _identity_map(rank: int) -> str:
    return _map(rank, [f"d{i}" for i in range(rank)])


def _broadcast_map(operand: tuple[int, ...], result: tuple[int, ...]) -> str:
    """Operand dims aligned right; a size-1 dim that is broadcast reads index 0."""
    lead = len(result) - len(operand)
    exprs = []
    for j, extent in enumerate(operand):
        i = lead + j
        exprs.append("0" if extent == 1 and result[i] != 1 else f"d{i}")
    return _map(len(result), exprs)


def _tensor_of(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elt}>"


def _iterators(kinds: list[str]) -> str:
    return "[" + ", ".join(f'"{k}"' for k in kinds) + "]"


@dataclass
class KernelSignature:
    """What the kernel takes and returns, in ABI order."""

    inputs: list[Node]
    outputs: list[Node]
    error_outputs: int

    def key(self) -> tuple:
        """What calling the native code depends on, as a cache key (``repr`` walked every
        node's whole graph: 20% of a fuzz worker's time)."""
        return (
            tuple((n.shape, str(n.dtype)) for n in self.inputs),
            tuple((n.shape, str(n.dtype)) for n in self.outputs),
            self.error_outputs,
        )


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.counter = 0
        self.error_values: list[str] = []

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def line(self, line: str) -> None:
        self.lines.append("    " + line)

    def value(self, node: Node) -> str:
        return self.names[id(node)]

    # -- helpers ------------------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> str:
        name = self.fresh("e")
        self.line(f"{name} = tensor.empty() : {tensor_type(shape, dtype)}")
        return name

    def filled(self, shape: tuple[int, ...], dtype: np.dtype, value: object) -> str:
        scalar = self.fresh("c")
        self.line(f"{scalar} = arith.constant {scalar_literal(value, dtype)} : {element(dtype)}")
        init = self.empty(shape, dtype)
        name = self.fresh("f")
        ty = tensor_type(shape, dtype)
        self.line(
            f"{name} = linalg.fill ins({scalar} : {element(dtype)}) outs({init} : {ty}) -> {ty}"
        )
        return name

    def generic(
        self,
        operands: list[tuple[str, tuple[int, ...], str]],  # (value, shape, element type)
        shape: tuple[int, ...],
        out_elt: str,
        body: list[str],
        result: str,
        iterators: list[str] | None = None,
        maps: list[str] | None = None,
        init: str | None = None,
    ) -> str:
        """A ``linalg.generic``; ``body`` sees block args %a0.. and %out, yields ``result``."""
        rank = len(shape)
        out_ty = _tensor_of(shape, out_elt)
        if init is None:
            init = self.fresh("e")
            self.line(f"{init} = tensor.empty() : {out_ty}")
        if maps is None:
            maps = [_broadcast_map(s, shape) for _, s, _ in operands] + [_identity_map(rank)]
        types = [_tensor_of(s, e) for _, s, e in operands]
        iterators = iterators or ["parallel"] * rank
        name = self.fresh("g")
        ins = ""
        if operands:
            values = ", ".join(v for v, _, _ in operands)
            ins = f"ins({values} : {', '.join(types)}) "
        self.line(
            f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = {_iterators(iterators)}}} {ins}outs({init} : {out_ty}) {{"
        )
        args = ", ".join(
            [f"%a{i}: {e}" for i, (_, _, e) in enumerate(operands)] + [f"%out: {out_elt}"]
        )
        self.lines.append(f"    ^bb0({args}):")
        for line in body:
            self.line("  " + line)
        self.line(f"  linalg.yield {result} : {out_elt}")
        self.line(f"}} -> {out_ty}")
        return name

    # -- nodes --------------------------------------------------------------------------------
    def node(self, node: Node) -> None:
        handler = getattr(self, "op_" + node.op)
        self.names[id(node)] = handler(node)

    def op_const(self, node: Node) -> str:
        return ""  # constants are materialized inside the generic that uses them

    def op_elementwise(self, node: Node) -> str:
        operands: list[tuple[str, tuple[int, ...], str]] = []
        scalars: list[str] = []
        constants: list[object] = []
        body: list[str] = []
        for arg in node.args:
            if arg.op == "const":
                name = self.fresh("k")
                value = arg.attrs["value"]
                body.append(
                    f"{name} = arith.constant {scalar_literal(value, arg.dtype)} "
                    f": {element(arg.dtype)}"
                )
                scalars.append(name)
                constants.append(value)
                continue
            block_arg = f"%a{len(operands)}"
            operands.append((self.value(arg), arg.shape, storage(arg.dtype)))
            if arg.dtype == BOOL:
                bit = self.fresh("bit")
                body.append(f"{bit} = arith.trunci {block_arg} : i8 to i1")
                block_arg = bit
            scalars.append(block_arg)
            constants.append(None)
        arg_dtypes = [a.dtype for a in node.args]
        dtype = node.dtype
        # float16/bfloat16 arithmetic in f32, rounded once (casts, selects and copies move
        # values as they are: the cast rule handles the 16-bit formats itself).
        widen = node.prim.kind not in ("cast", "copy", "select") and any(
            is_low_precision(d) for d in [*arg_dtypes, dtype]
        )
        if widen:
            for i, arg_dtype in enumerate(arg_dtypes):
                if is_low_precision(arg_dtype):
                    wide = self.fresh("w")
                    body.append(
                        f"{wide} = arith.extf {scalars[i]} : {element(arg_dtype)} to "
                        f"{element(COMPUTE)}"
                    )
                    scalars[i], arg_dtypes[i] = wide, COMPUTE
            if is_low_precision(dtype):
                dtype = COMPUTE
        call = ScalarCall(
            scalars, arg_dtypes, constants, dtype, self.fresh("r"), self.fresh, node.dtype
        )
        body.extend(node.prim.scalar(call))
        result = call.result
        if dtype != node.dtype:
            narrowed = self.fresh("n")
            body.extend(narrow(result, dtype, node.dtype, narrowed, self.fresh))
            result = narrowed
        if node.dtype == BOOL:
            stored = self.fresh("byte")
            body.append(f"{stored} = arith.extui {result} : i1 to i8")
            result = stored
        return self.generic(operands, node.shape, storage(node.dtype), body, result)

    def op_reduce(self, node: Node) -> str:
        (source,) = node.args
        dtype = COMPUTE if is_low_precision(node.dtype) else node.dtype  # the accumulator
        acc = self.filled(node.shape, dtype, node.attrs["identity"])
        name = self.fresh("red")
        elt, in_elt = element(dtype), element(source.dtype)
        first = ["%in"]
        if in_elt != elt:
            first = ["%inw"]
        call = ScalarCall(
            [*first, "%acc"], [dtype, dtype], [None, None], dtype, "%c", self.fresh, reduction=True
        )
        combine = node.prim.scalar(call)
        axes = ", ".join(map(str, node.attrs["axes"]))
        self.line(
            f"{name} = linalg.reduce ins({self.value(source)} : "
            f"{tensor_type(source.shape, source.dtype)}) outs({acc} : "
            f"{tensor_type(node.shape, dtype)}) dimensions = [{axes}]"
        )
        self.line(f"  (%in: {in_elt}, %acc: {elt}) {{")
        if in_elt != elt:
            self.line(f"    %inw = arith.extf %in : {in_elt} to {elt}")
        for line in combine:
            self.line(f"    {line}")
        self.line(f"    linalg.yield {call.result} : {elt}")
        self.line("  }")
        return self._narrowed(name, node.shape, dtype, node.dtype)

    def _narrowed(self, value: str, shape: tuple[int, ...], wide, dtype) -> str:
        """``value`` (computed in ``wide``) rounded to ``dtype`` by one truncating generic."""
        if wide == dtype:
            return value
        body = narrow("%a0", wide, dtype, "%t", self.fresh)
        return self.generic([(value, shape, storage(wide))], shape, storage(dtype), body, "%t")

    def _matmul(self, node: Node, op: str) -> str:
        lhs, rhs = node.args
        dtype = COMPUTE if is_low_precision(node.dtype) else node.dtype  # the accumulator
        init = self.filled(node.shape, dtype, 0)
        name = self.fresh("mm")
        out_ty = tensor_type(node.shape, dtype)
        self.line(
            f"{name} = {op} ins({self.value(lhs)}, {self.value(rhs)} : "
            f"{tensor_type(lhs.shape, lhs.dtype)}, {tensor_type(rhs.shape, rhs.dtype)}) "
            f"outs({init} : {out_ty}) -> {out_ty}"
        )
        return self._narrowed(name, node.shape, dtype, node.dtype)

    def op_matmul(self, node: Node) -> str:
        return self._matmul(node, "linalg.matmul")

    def op_batch_matmul(self, node: Node) -> str:
        return self._matmul(node, "linalg.batch_matmul")

    def op_reshape(self, node: Node) -> str:
        (source,) = node.args
        return self._reshape(self.value(source), source.shape, node.shape, node.dtype)

    def _reshape(self, value: str, old: tuple[int, ...], new: tuple[int, ...], dtype) -> str:
        """``tensor.reshape`` with a constant shape operand (see the module docstring)."""
        shape = self.fresh("shape")
        dims = ", ".join(str(d) for d in new)
        self.line(
            f"{shape} = arith.constant dense<[{dims}]> : tensor<{len(new)}xindex>"
            if new
            else f"{shape} = arith.constant dense<> : tensor<0xindex>"
        )
        name = self.fresh("rs")
        self.line(
            f"{name} = tensor.reshape {value}({shape}) : "
            f"({tensor_type(old, dtype)}, tensor<{len(new)}xindex>) -> {tensor_type(new, dtype)}"
        )
        return name

    def op_transpose(self, node: Node) -> str:
        (source,) = node.args
        init = self.empty(node.shape, node.dtype)
        name = self.fresh("tr")
        perm = ", ".join(str(p) for p in node.attrs["perm"])
        self.line(
            f"{name} = linalg.transpose ins({self.value(source)} : "
            f"{tensor_type(source.shape, source.dtype)}) outs({init} : "
            f"{tensor_type(node.shape, node.dtype)}) permutation = [{perm}]"
        )
        return name

    def op_slice(self, node: Node) -> str:
        (source,) = node.args
        name = self.fresh("sl")
        a = node.attrs

        def fmt(values: tuple[int, ...]) -> str:
            return "[" + ", ".join(str(v) for v in values) + "]"

        # Never rank-reducing (workaround "subview-rank-reduction", compiler/workarounds.py):
        # with a non-unit step on a size-1 dim MLIR cannot tell which dims an integer index
        # dropped, and asserts (SubViewOp::getDroppedDims; found by the harness). The dims an
        # integer index removes go away in a tensor.reshape instead.
        if not workarounds.enabled("subview-rank-reduction"):
            return self._rank_reducing_slice(node)
        sizes = tuple(a["sizes"])
        if any(s < 0 for s in a["strides"]):
            # tensor.extract_slice has no negative strides: take the same elements in increasing
            # order, then a generic reads them backwards (index n - 1 - d), NumPy's negative step.
            offsets = [
                o + (n - 1) * s if s < 0 else o
                for o, n, s in zip(a["offsets"], sizes, a["strides"], strict=True)
            ]
            forward = self.fresh("sl")
            self.line(
                f"{forward} = tensor.extract_slice {self.value(source)}{fmt(tuple(offsets))}"
                f"{fmt(sizes)}{fmt(tuple(abs(s) for s in a['strides']))} : "
                f"{tensor_type(source.shape, source.dtype)} to {tensor_type(sizes, node.dtype)}"
            )
            exprs = [
                f"{n - 1} - d{i}" if s < 0 else f"d{i}"
                for i, (n, s) in enumerate(zip(sizes, a["strides"], strict=True))
            ]
            elt = storage(node.dtype)
            maps = [_map(len(sizes), exprs), _identity_map(len(sizes))]
            name = self.generic([(forward, sizes, elt)], sizes, elt, [], "%a0", maps=maps)
            if sizes == node.shape:
                return name
            return self._reshape(name, sizes, node.shape, node.dtype)
        self.line(
            f"{name} = tensor.extract_slice {self.value(source)}{fmt(a['offsets'])}"
            f"{fmt(sizes)}{fmt(a['strides'])} : {tensor_type(source.shape, source.dtype)} "
            f"to {tensor_type(sizes, node.dtype)}"
        )
        if sizes == node.shape:
            return name
        return self._reshape(name, sizes, node.shape, node.dtype)

    def _rank_reducing_slice(self, node: Node) -> str:
        """The slice as one rank-reducing ``tensor.extract_slice`` (then, for negative steps, a
        generic reading it backwards): the natural form, emitted only with the
        ``subview-rank-reduction`` workaround off, where it brings the upstream crash back."""
        (source,) = node.args
        a = node.attrs
        sizes, strides = tuple(a["sizes"]), tuple(a["strides"])
        shape = tuple(node.shape)
        # The dims an integer index dropped have size 1: match the kept ones in order (which
        # of several size-1 dims is kept does not change an element).
        kept: list[int] = []
        for i, extent in enumerate(sizes):
            if len(kept) < len(shape) and extent == shape[len(kept)]:
                kept.append(i)
        assert len(kept) == len(shape), (sizes, shape)
        offsets = [
            o + (n - 1) * s if s < 0 else o
            for o, n, s in zip(a["offsets"], sizes, strides, strict=True)
        ]
        steps = [abs(s) for s in strides]
        name = self.fresh("sl")
        self.line(
            f"{name} = tensor.extract_slice {self.value(source)}[{', '.join(map(str, offsets))}]"
            f"[{', '.join(map(str, sizes))}][{', '.join(map(str, steps))}] : "
            f"{tensor_type(source.shape, source.dtype)} to {tensor_type(shape, node.dtype)}"
        )
        if all(s > 0 for s in strides):
            return name
        exprs = [
            f"{sizes[i] - 1} - d{k}" if strides[i] < 0 else f"d{k}" for k, i in enumerate(kept)
        ]
        elt = storage(node.dtype)
        maps = [_map(len(shape), exprs), _identity_map(len(shape))]
        return self.generic([(name, shape, elt)], shape, elt, [], "%a0", maps=maps)

    def op_mask(self, node: Node) -> str:
        elt = element(node.dtype)
        body = [
            "%row = linalg.index 0 : index",
            "%col = linalg.index 1 : index",
            "%visible = arith.cmpi ule, %col, %row : index",
            f"%zero = arith.constant {scalar_literal(0.0, node.dtype)} : {elt}",
            f"%masked = arith.constant {scalar_literal(node.attrs['value'], node.dtype)} : {elt}",
            f"%m = arith.select %visible, %zero, %masked : {elt}",
        ]
        return self.generic([], node.shape, elt, body, "%m")

    def op_gather(self, node: Node) -> str:
        table, ids = node.args
        rows = table.shape[0]
        rank = len(node.shape)
        id_rank = len(ids.shape)
        # Out-of-range flag per id, reduced to one rank-0 error output checked after the call.
        flag_body = [
            "%zero = arith.constant 0 : i32",
            f"%rows = arith.constant {rows} : i32",
            "%low = arith.cmpi slt, %a0, %zero : i32",
            "%high = arith.cmpi sge, %a0, %rows : i32",
            "%bad = arith.ori %low, %high : i1",
            "%flag = arith.extui %bad : i1 to i32",
        ]
        flags = self.generic(
            [(self.value(ids), ids.shape, "i32")], ids.shape, "i32", flag_body, "%flag"
        )
        error = self.filled((), INT32, 0)
        reduced = self.fresh("err")
        self.line(
            f"{reduced} = linalg.reduce ins({flags} : {tensor_type(ids.shape, INT32)}) "
            f"outs({error} : tensor<i32>) dimensions = [{', '.join(map(str, range(id_rank)))}]"
        )
        self.line("  (%in: i32, %acc: i32) {")
        self.line("    %c = arith.maxsi %in, %acc : i32")
        self.line("    linalg.yield %c : i32")
        self.line("  }")
        self.error_values.append(reduced)
        # The lookup itself clamps, so a bad id never reads outside the table.
        elt = storage(node.dtype)
        indices = ["%row"] + [f"%i{j}" for j in range(id_rank, rank)]
        body = [
            "%index = arith.index_cast %a0 : i32 to index",
            "%first = arith.constant 0 : index",
            f"%last = arith.constant {rows - 1} : index",
            "%low = arith.maxsi %index, %first : index",
            "%row = arith.minsi %low, %last : index",
        ]
        body += [f"%i{j} = linalg.index {j} : index" for j in range(id_rank, rank)]
        body.append(
            f"%v = tensor.extract {self.value(table)}[{', '.join(indices)}] : "
            f"{tensor_type(table.shape, table.dtype)}"
        )
        maps = [_map(rank, [f"d{j}" for j in range(id_rank)]), _identity_map(rank)]
        return self.generic(
            [(self.value(ids), ids.shape, "i32")], node.shape, elt, body, "%v", maps=maps
        )


def build(graph: Graph, abi: str = "memref") -> tuple[str, KernelSignature]:
    """MLIR text of the kernel computing ``graph.outputs`` from ``graph.inputs``."""
    if abi not in ABIS:
        raise ValueError(f"unknown ABI {abi!r}; choose from {ABIS}")
    em = _Emitter()
    params = []
    for node in graph.inputs:
        arg = f"%arg{node.attrs['index']}"
        if abi == "tensor":
            params.append(f"{arg}: {tensor_type(node.shape, node.dtype)}")
            em.names[id(node)] = arg
            continue
        params.append(f"{arg}: {memref_type(node.shape, node.dtype)}")
        name = em.fresh("in")
        em.line(
            f"{name} = bufferization.to_tensor {arg} restrict : "
            f"{memref_type(node.shape, node.dtype)} to {tensor_type(node.shape, node.dtype)}"
        )
        em.names[id(node)] = name
    for node in topological(graph.outputs):
        if node.op != "input":
            em.node(node)
    results = [(em.value(node), node.shape, node.dtype) for node in graph.outputs]
    results += [(value, (), INT32) for value in em.error_values]
    if abi == "tensor":
        values = ", ".join(v for v, _, _ in results)
        types = ", ".join(tensor_type(s, d) for _, s, d in results)
        em.line(f"return {values} : {types}")
        header = f"  func.func @{TENSOR_ENTRY}({', '.join(params)}) -> ({types}) {{"
    else:
        outputs = [f"%out{i}" for i in range(len(graph.outputs))]
        outputs += [f"%err{i}" for i in range(len(em.error_values))]
        # Workaround "one-restrict-output" (compiler/workarounds.py): only the last result may
        # be computed in its output buffer; the others are copied out. Two results of one
        # filled init were otherwise copied out of a buffer already overwritten.
        anchored = len(outputs) - 1 if workarounds.enabled("one-restrict-output") else None
        for k, (out, (value, shape, dtype)) in enumerate(zip(outputs, results, strict=True)):
            params.append(f"{out}: {memref_type(shape, dtype)}")
            restrict = "restrict " if anchored in (None, k) else ""
            em.line(
                f"bufferization.materialize_in_destination {value} in {restrict}writable {out} : "
                f"({tensor_type(shape, dtype)}, {memref_type(shape, dtype)}) -> ()"
            )
        em.line("return")
        # Workaround "libm-calls-kept" (compiler/workarounds.py): LLVM may not rewrite a libm
        # call into another function (pow(8.0, x) -> exp2(3.0 * x) rounds 3.0 * x first).
        kept = ', passthrough = ["no-builtins"]' if workarounds.enabled("libm-calls-kept") else ""
        header = (
            f"  func.func @{KERNEL}({', '.join(params)}) attributes "
            f"{{llvm.emit_c_interface{kept}}} {{"
        )
    text = "module {\n" + header + "\n" + "\n".join(em.lines) + "\n  }\n}\n"
    return text, KernelSignature(list(graph.inputs), list(graph.outputs), len(em.error_values))


__all__ = [
    "ABIS",
    "KERNEL",
    "TENSOR_ENTRY",
    "KernelSignature",
    "build",
    "memref_type",
    "tensor_type",
]
