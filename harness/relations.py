"""Metamorphic relations: a derived case whose answer is known from the original's.

Each relation turns a case into derived cases plus how their outputs must relate to the
original's: ``equal`` (bit-identical on the same backend: transpose and reshape round trips) or
``close`` (within the error model of the original's float64 truth, with the derived case's NumPy
evaluation as the reference that measures the rounding the transformation itself introduced:
softmax and layer norm shift invariance, head permutation, batched matmul = per-batch matmuls).
The relations catch bugs that every reference shares, because the references evaluate the same
``compiler.ops`` source (a softmax without its max-subtraction, say).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from strategies.program import Const, Program, ProgramBuilder, Ref

from .case import Case


@dataclass
class Derived:
    """A derived case and how its output relates to the original's."""

    relation: str
    case: Case
    mode: str  # "equal" | "close"
    select: Callable[[np.ndarray], np.ndarray] = field(default=lambda a: a)


def _with_output_chain(case: Case, chain: list[tuple[str, dict]]) -> Program:
    builder = ProgramBuilder.from_program(case.program)
    ref = case.program.output
    for op, attrs in chain:
        ref = builder.node(op, ref, **attrs)
    return builder.build(ref)


def transpose_roundtrip(case: Case) -> list[Derived]:
    shape = case.program.output_type.shape
    if len(shape) < 2:
        return []
    rank = len(shape)
    perm = tuple(range(1, rank)) + (0,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    program = _with_output_chain(
        case, [("permute_dims", {"axes": perm}), ("permute_dims", {"axes": inverse})]
    )
    return [Derived("transpose-roundtrip", _derive(case, program), "equal")]


def reshape_roundtrip(case: Case) -> list[Derived]:
    shape = case.program.output_type.shape
    if not shape or len(shape) == 1:
        return []
    program = _with_output_chain(
        case, [("reshape", {"shape": (-1,)}), ("reshape", {"shape": tuple(shape)})]
    )
    return [Derived("reshape-roundtrip", _derive(case, program), "equal")]


def _derive(case: Case, program: Program, inputs: list[np.ndarray] | None = None) -> Case:
    # Two backends that differ in both fusion and matmul lowering: the bugs a relation exists
    # for (shared by every reference) show on any backend, and each derived run is a compile.
    backends = tuple(dict.fromkeys((case.backends[0], case.backends[-1])))
    return Case(
        program, list(case.inputs if inputs is None else inputs), backends, origin=case.origin
    )


def _shift_argument(case: Case, op: str, shift: dict[str, float], name: str) -> list[Derived]:
    """Replace ``op``'s first argument a by a + c (c a scalar of the same dtype)."""
    program = case.program
    for index, node in enumerate(program.nodes):
        if node.op != op or (op == "softmax" and node.attrs.get("axis", -1) not in (-1,)):
            continue
        arg = node.args[0]
        arg_type = program.type_of(arg)
        if arg_type.dtype not in shift:
            continue
        builder = ProgramBuilder()
        for inp in program.inputs:
            builder.input(inp.shape, inp.dtype, bound=inp.bound)
        mapping: dict[int, Ref] = {}

        def remap(a):
            if isinstance(a, Ref) and a.kind == "node":
                return mapping[a.index]
            return a

        for j, other in enumerate(program.nodes):
            args = [remap(a) for a in other.args]
            if j == index:
                shifted = builder.node("add", args[0], Const(float(shift[arg_type.dtype])))
                args[0] = shifted
            mapping[j] = builder.node(other.op, *args, **dict(other.attrs))
        derived = builder.build(remap(program.output))
        return [Derived(name, _derive(case, derived), "close")]
    return []


def softmax_shift(case: Case) -> list[Derived]:
    # Large enough that exp() overflows without the max-subtraction, in each dtype.
    return _shift_argument(case, "softmax", {"float32": 100.0, "float64": 800.0}, "softmax-shift")


def layer_norm_shift(case: Case) -> list[Derived]:
    return _shift_argument(
        case, "layer_norm", {"float32": 8.0, "float64": 64.0}, "layer-norm-shift"
    )


def head_permutation(case: Case) -> list[Derived]:
    """Permuting attention heads, with the matching weight blocks, leaves the output unchanged."""
    program = case.program
    for node in program.nodes:
        if node.op not in ("attention", "attend"):
            continue
        heads = int(node.attrs["heads"])
        if heads < 2:
            continue
        offset = 0 if node.op == "attention" else 2
        refs = node.args[offset + 1 : offset + 4]  # qkv_weight, qkv_bias, out_weight
        if not all(isinstance(r, Ref) and r.kind == "input" for r in refs):
            continue
        if len({r.index for r in refs}) != 3:
            continue
        width = program.type_of(node.args[0]).shape[-1]
        depth = width // heads
        order = np.roll(np.arange(heads), 1)
        columns = np.concatenate([np.arange(h * depth, (h + 1) * depth) for h in order])
        qkv_columns = np.concatenate([part * width + columns for part in range(3)])
        inputs = list(case.inputs)
        qkv_w, qkv_b, out_w = (r.index for r in refs)
        inputs[qkv_w] = np.ascontiguousarray(inputs[qkv_w][:, qkv_columns])
        inputs[qkv_b] = np.ascontiguousarray(inputs[qkv_b][qkv_columns])
        inputs[out_w] = np.ascontiguousarray(inputs[out_w][columns, :])
        return [Derived("head-permutation", _derive(case, program, inputs), "close")]
    return []


def batch_split(case: Case) -> list[Derived]:
    """The output of a batched matmul, batch by batch, equals the matmul of the batch slices."""
    program = case.program
    out = program.output
    if out.kind != "node":
        return []
    node = program.nodes[out.index]
    if node.op != "matmul":
        return []
    a, b = (program.type_of(r) for r in node.args)
    if len(a.shape) < 3 or a.shape[:-2] != b.shape[:-2] or not a.shape[0] > 1:
        return []
    derived = []
    for i in sorted({0, a.shape[0] - 1}):
        builder = ProgramBuilder.from_program(program)
        left = builder.node("index", node.args[0], key=(i,))
        right = builder.node("index", node.args[1], key=(i,))
        result = builder.node("matmul", left, right)
        derived.append(
            Derived(
                f"batch-split[{i}]",
                _derive(case, builder.build(result)),
                "close",
                select=lambda arr, i=i: arr[i],
            )
        )
    return derived


RELATIONS: dict[str, Callable[[Case], list[Derived]]] = {
    "transpose-roundtrip": transpose_roundtrip,
    "reshape-roundtrip": reshape_roundtrip,
    "softmax-shift": softmax_shift,
    "layer-norm-shift": layer_norm_shift,
    "head-permutation": head_permutation,
    "batch-split": batch_split,
}
# Always applied where they fit (cheap to qualify, and each guards a bug no reference sees).
STRUCTURAL = ("softmax-shift", "layer-norm-shift", "head-permutation", "batch-split")


def derive(case: Case, names: tuple[str, ...]) -> list[Derived]:
    derived: list[Derived] = []
    for name in names:
        try:
            derived.extend(RELATIONS[name](case))
        except (ValueError, TypeError):
            continue  # the relation does not fit this program
    return derived
