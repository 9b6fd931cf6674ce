"""Metamorphic relations: a derived case whose answer is known from the original's.

Each relation is an oracle (``metamorphic:<name>``) that turns a case into derived cases plus how
their outputs must relate to the original's:

- ``equal``: bit-identical on the same backend (transpose and reshape round trips);
- ``close``: the derived output, judged against the *original* case's truth (selected where the
  relation picks a part), within the error model of the differential oracle. The bound is made of
  every reference's error against its own truth, for the original case (NumPy, JAX) and for the
  derived case (NumPy, JAX), plus the floor of ``tolerance``. Nothing that shares the definition
  under test widens it: the derived case's answers are never compared with the original's truth
  to make room, so a composite whose shared definition is wrong (every reference evaluates the
  same ``compiler.ops`` source) breaks the relation and is caught.

Structural relations (softmax and layer-norm shift, head permutation, batch split) run wherever
they fit; the round trips on a quarter of the cases, drawn from the case's own data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from strategies.model import Const, Program, ProgramBuilder, Ref

from ..case import Case
from ..run.references import perturbed_outputs
from ..run.task import Task
from . import tolerance
from .base import Derived, Finding, Observation, Oracle, register
from .differential import judge_jax, reference_outputs, yardstick


@dataclass
class Related:
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


def transpose_roundtrip(case: Case) -> list[Related]:
    shape = case.program.output_type.shape
    if len(shape) < 2:
        return []
    rank = len(shape)
    perm = tuple(range(1, rank)) + (0,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    program = _with_output_chain(
        case, [("permute_dims", {"axes": perm}), ("permute_dims", {"axes": inverse})]
    )
    return [Related("transpose-roundtrip", _derive(case, program), "equal")]


def reshape_roundtrip(case: Case) -> list[Related]:
    shape = case.program.output_type.shape
    if not shape or len(shape) == 1:
        return []
    program = _with_output_chain(
        case, [("reshape", {"shape": (-1,)}), ("reshape", {"shape": tuple(shape)})]
    )
    return [Related("reshape-roundtrip", _derive(case, program), "equal")]


def _derive(case: Case, program: Program, inputs: list[np.ndarray] | None = None) -> Case:
    # Two backends that differ in both fusion and matmul lowering: the bugs a relation exists
    # for (shared by every reference) show on any backend, and each derived run is a compile.
    backends = tuple(dict.fromkeys((case.backends[0], case.backends[-1])))
    return Case(
        program, list(case.inputs if inputs is None else inputs), backends, origin=case.origin
    )


def _shift_argument(case: Case, op: str, shift: dict[str, float], name: str) -> list[Related]:
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
        return [Related(name, _derive(case, derived), "close")]
    return []


def softmax_shift(case: Case) -> list[Related]:
    # Large enough that exp() overflows without the max-subtraction, in each dtype.
    return _shift_argument(case, "softmax", {"float32": 100.0, "float64": 800.0}, "softmax-shift")


def layer_norm_shift(case: Case) -> list[Related]:
    return _shift_argument(
        case, "layer_norm", {"float32": 8.0, "float64": 64.0}, "layer-norm-shift"
    )


def head_permutation(case: Case) -> list[Related]:
    """Permuting attention heads, with the matching weight blocks, leaves the output unchanged."""
    program = case.program
    for index, node in enumerate(program.nodes):
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
        # The permuted weights must feed this one place only: another use of them (another
        # argument of this op, another op, the output) would see the permutation.
        if any(
            node.args.count(r) != 1 or program.users(r) != [index] or program.output == r
            for r in refs
        ):
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
        return [Related("head-permutation", _derive(case, program, inputs), "close")]
    return []


def batch_split(case: Case) -> list[Related]:
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
            Related(
                f"batch-split[{i}]",
                _derive(case, builder.build(result)),
                "close",
                select=lambda arr, i=i: arr[i],
            )
        )
    return derived


class Relation(Oracle):
    """One metamorphic relation as an oracle."""

    def __init__(
        self, relation: str, derive: Callable[[Case], list[Related]], always: bool
    ) -> None:
        self.relation = relation
        self.name = f"metamorphic:{relation}"
        self.derive = derive
        self.always = always

    def related(self, case: Case) -> list[Related]:
        if case.invalid is not None:
            return []
        try:
            return self.derive(case)
        except (ValueError, TypeError, NotImplementedError, IndexError):
            return []  # the relation does not fit this program

    def fits(self, case: Case) -> bool:
        return bool(self.related(case))

    def wants(self, case: Case) -> bool:
        return self.fits(case) and (self.always or case.toggle(self.name, 0.25))

    def plan(self, obs: Observation) -> list[Derived]:
        if not obs.refs["numpy"].ok:
            return []
        return [Derived(r.relation, Task(r.case), {"related": r}) for r in self.related(obs.case)]

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        original = {r.backend: r for r in obs.results}
        findings: list[Finding] = []
        for item, outcome in derived:
            related: Related = item.info["related"]
            if outcome.status != "ok":
                continue  # the runner reports a derived task that crashed or hung
            own = obs.references(related.case) if related.mode == "close" else {}
            bad: dict[str, str] = {}
            for result in outcome.value.results:
                before = original.get(result.backend)
                if not result.ok or before is None or not before.ok:
                    continue
                reason = self._check(related, obs, result, before.output, own)
                if reason:
                    bad[result.backend] = reason
            if bad:
                detail = f"{related.relation}: " + next(iter(bad.values()))
                findings.append(
                    Finding("metamorphic", tuple(sorted(bad)), self.name, detail, obs.case)
                )
        return findings

    @staticmethod
    def _check(related: Related, obs: Observation, result, before, own) -> str:
        got, backend = np.asarray(result.output), result.backend
        if related.mode == "equal":
            from ..run.worker import same_bits

            # A NaN's sign and payload are no NumPy semantics: on cpu (-O2) a bfloat16 layer
            # norm's NaN was 0x7FC00000 in one row and 0xFFC00000 once transposed twice (a
            # clean-compiler finding); a zero's sign is the kernel's after a matmul.
            any_zero = not tolerance.signs_settled(related.case.program)
            return "" if same_bits(got, before, any_zero) else "output changed bits"
        refs = obs.refs
        expected = related.select(yardstick(refs))
        shape = np.shape(yardstick(refs))
        others = [related.select(o) for o in reference_outputs(refs, shape, backend)]
        errors = []
        local: list[np.ndarray] = []
        if own and own["numpy"].ok:
            own_truth = yardstick(own)
            with np.errstate(invalid="ignore", over="ignore"):
                # The perturbed runs of the derived case too: NumPy's own error there can be
                # small by luck (a float64 softmax shifted by 800 feeding a linear with weights
                # near 100: 300 ulps on cpu-loops and cpu-vector, NumPy's largest error a tenth
                # of the allowed; a clean-compiler session, seed 1302).
                own_shape = np.shape(own_truth)
                judge_jax(related.case, own)  # (a JAX answer wrong there measures nothing)
                outputs = reference_outputs(own, own_shape, backend)
                outputs += perturbed_outputs(own, own_shape)
                # Each is a correct evaluation of the derived program, so its non-finite values
                # are possible answers there: a shift that rounds a row's tiny spread away makes
                # (x - mean) exactly 0 and 0 * inf gain nan, where the original gives inf (a
                # float64 layer norm with an infinite gain; the README's 60 s session).
                local = [np.asarray(o, np.float64) for o in outputs]
                for output in outputs:
                    error = np.abs(np.asarray(output, np.float64) - own_truth)
                    # The shift's rounding (x + c) conditions every element alike; which element
                    # a reference happens to get right is luck, so each reference's largest
                    # error on the derived case bounds every element (a float64 layer norm of
                    # rows with a small spread, shifted by 64, was a clean-compiler finding).
                    finite = error[np.isfinite(error)]
                    worst = float(finite.max()) if finite.size else 0.0
                    errors.append(np.where(np.isfinite(error), worst, error))
        verdict = tolerance.compare(
            got,
            expected,
            others,
            tolerance.error_steps(related.case.program),
            tolerance.working_dtype(related.case.program),
            errors=errors,
            local=local,
            coupled=tolerance.couples(related.case.program),
        )
        return "" if verdict.ok else verdict.reason


for _name, _derive_fn, _always in (
    ("transpose-roundtrip", transpose_roundtrip, False),
    ("reshape-roundtrip", reshape_roundtrip, False),
    ("softmax-shift", softmax_shift, True),
    ("layer-norm-shift", layer_norm_shift, True),
    ("head-permutation", head_permutation, True),
    ("batch-split", batch_split, True),
):
    register(Relation(_name, _derive_fn, _always))

__all__ = ["Related", "Relation"]
