"""Layer attribution, checked with one bug planted per layer in a scratch copy of the compiler:
each finding must name the layer the bug was planted in (and a crash inside MLIR the pass, with a
reduced module that still crashes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planted_reproducer import last_line_with

from harness.selftest import Mutation

_ATTRIBUTE = """
import json, sys
import numpy as np
from harness.case import Case
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import Program

spec = json.loads(sys.argv[1])
program = Program.from_dict(spec["program"])
rng = np.random.default_rng(0)
inputs = [
    (rng.integers(-3, 4, i.shape) if i.dtype == "int32" else rng.standard_normal(i.shape) * 2)
    .astype(i.dtype)
    for i in program.inputs
]
for k, given in spec.get("inputs", {}).items():
    dtype = inputs[int(k)].dtype
    if isinstance(given, dict):  # {"bits": [...]}: NaN payloads JSON cannot hold
        inputs[int(k)] = np.asarray(given["bits"], f"u{dtype.itemsize}").view(dtype)
    else:
        inputs[int(k)] = np.asarray(given, dtype)
case = Case(program, inputs, tuple(spec["backends"])).with_layouts(spec.get("layouts", ()))
with Runner(None, use_jax=False) as runner:
    judgement = runner.evaluate(case)
    findings = judgement.findings
    result = {"findings": [[f.kind, f.oracle, list(f.backends)] for f in findings]}
    if findings:
        attribution = Attributor(runner, budget_seconds=60).attribute(case, findings[0])
        result["attribution"] = attribution.to_dict()
print(json.dumps(result))
"""


def _program(build) -> dict:
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    return build(b).to_dict()


def _ellipsis_index(b):
    return b.build(b.node("index", b.input((3, 4), "float32"), key=(Ellipsis, 1)))


def _transpose(b):
    return b.build(b.node("transpose", b.input((3, 4), "float32")))


def _sum_axis1(b):
    return b.build(b.node("sum", b.input((3, 4), "float32"), axis=1))


def _broadcast_add(b):
    return b.build(b.node("add", b.input((3, 1), "float32"), b.input((4,), "float32")))


def _strided_matmul(b):
    x = b.input((3, 6), "float32")
    w = b.input((4, 5), "float32")
    left = b.node("index", x, key=(slice(None), slice(1, 5)))
    return b.build(b.node("matmul", left, w))


def _subtract(b):
    return b.build(b.node("subtract", b.input((3, 4), "float32"), b.input((3, 4), "float32")))


def _bfloat16_row_max(b):
    return b.build(b.node("max", b.input((2, 3), "bfloat16"), axis=1))


def _float32_matmul(b):
    return b.build(b.node("matmul", b.input((3, 4), "float32"), b.input((4, 2), "float32")))


def _gather_past_the_table(b):
    """A gather whose ids (given in ``_INPUTS``) hold the table's row count: it must raise."""
    return b.build(b.node("gather", b.input((4, 3), "float32"), b.input((2,), "int32", bound=4)))


def _gather_from_an_offset_view(b):
    """A gather from ``x[1:, 1::2]``: a strided view past its buffer's first element, which
    cpu-vector's gathers fix-up reads at physical offsets (ids given in ``_INPUTS``)."""
    table = b.node("index", b.input((6, 8), "float32"), key=(slice(1, None), slice(1, None, 2)))
    return b.build(b.node("gather", table, b.input((1, 4), "int32", bound=5)))


def _log1p(b):
    return b.build(b.node("log1p", b.input((3, 4), "float64")))


def _expm1_rows(b):
    """A float32 expm1 of rows cpu-vector vectorizes (the libm stage's lane-by-lane helper)."""
    return b.build(b.node("expm1", b.input((4, 37), "float32")))


def _cbrt_rows(b):
    """A float64 cbrt cpu-vector vectorizes: libm's, called lane by lane."""
    return b.build(b.node("cbrt", b.input((4, 37), "float64")))


def _bf16_subnormal_compare(b):
    """``(x > sin(x)).astype(bfloat16)``: 0 for a subnormal x, unless sin(x) is flushed."""
    x = b.input((2, 1), "bfloat16")
    return b.build(b.node("astype", b.node("greater", x, b.node("sin", x)), dtype="bfloat16"))


def _int32_maximum_float64(b):
    """``np.maximum(x, y)`` of an int32 x and a float64 y: NaN where y is a signaling NaN."""
    return b.build(b.node("maximum", b.input((2, 3), "int32"), b.input((3,), "float64")))


def _float32_to_int32(b):
    return b.build(b.node("astype", b.input((2, 3), "float32"), dtype="int32"))


#: Inputs a plant needs exactly (input index -> values), the rest drawn.
_INPUTS = {
    "builder-run-time-check": {1: [1, 4]},
    "llvm:codegen": {0: [[2.046875], [9.183549615799121e-41]]},
    "builder-poison": {0: [[-3.75, 2.5, -0.5], [7.0, -100.25, 1.0]]},
    "llvm:codegen-optimized": {1: {"bits": [0x7FF0000000000001, 0x7FF8000000000001, 0]}},
    "triage": {0: [[-2147483648.0, 2.5, -0.5], [7.0, -100.25, 1.0]]},
    "driver": {0: [[1.62, 0.637, 9.18e-41], [2.0, -3.45, 9.2e-41]]},
    "gathers-fixup": {1: [[0, 3, 4, 1]]},
    "libm-stage": {0: [[0.5, 2.0, 7.0, 1.5], [3.0, 0.25, 9.0, 4.0], [6.0, 8.0, 0.75, 5.0]]},
    "frontend-identity": {0: [[-3e9, -4e9, -5e9], [1.0, 2.0, 3.0]]},
}
#: Input layouts a plant needs (``Case.with_layouts``).
_LAYOUTS = {"layouts": ["fortran", "c"]}
#: CPUs where LLVM's fptrunc to bfloat flushes subnormals (``bf16-rounding-in-integers``).
_BF16_CONVERSIONS = ("avx512bf16", "avxneconvert")


def _bf16_row_min(b):
    return b.build(b.node("min", b.input((2, 3), "bfloat16"), axis=-1))


def _rank_reducing_slice(b):
    key = (Ellipsis, None, slice(None, None, 3), -2, slice(None, 1, 1))
    return b.build(b.node("index", b.input((1, 2, 1), "int32"), key=key))


_SWAPPED_ARGUMENTS = Mutation(
    "swapped-arguments",
    "runtime.py",
    "        buffers = arrays + outputs + errors\n",
    "        buffers = arrays[::-1] + outputs + errors\n",
    "the kernel's arguments passed in reverse order",
)

#: Reads memory nobody wrote: without poisoned memory its attribution followed the allocator
#: (a variant that happened to get a zeroed page "passed", and the runtime was blamed).
_UNFILLED_ACCUMULATOR = Mutation(
    "matmul-without-zero-fill",
    "lower/emit.py",
    'init = self.filled(node.shape, dtype, 0)\n        name = self.fresh("mm")',
    'init = self.empty(node.shape, dtype)\n        name = self.fresh("mm")',
    "matmul accumulates into an uninitialized buffer",
)

PLANTS = {
    "llvm:codegen": (
        Mutation(
            "bf16-rounding-by-fptrunc",
            "workarounds.py",
            "    return name not in state()\n",
            '    return name not in state() and name != "bf16-rounding-in-integers"\n',
            "float32 rounded to bfloat16 by fptrunc, which LLVM selects as vcvtneps2bf16",
        ),
        _bf16_subnormal_compare,
        ["cpu-loops"],
        "llvm:codegen",
    ),
    # Right at -O0 (optnone), wrong at -O3, and wrong without LLVM's IR passes when code
    # generation is optimized (+optimized-codegen): LLVM's code generation, on any x86-64 CPU.
    "llvm:codegen-optimized": (
        Mutation(
            "nan-operands-not-selected",
            "workarounds.py",
            "    return name not in state()\n",
            '    return name not in state() and name != "nan-operands-selected"\n',
            "NumPy's maximum as llvm.maximum alone, which X86 code generation gets wrong for a "
            "signaling NaN beside an integer converted",
        ),
        _int32_maximum_float64,
        ["cpu-loops"],
        "llvm:codegen",
    ),
    # A failure only the kernels JIT-compiled together show (one LLVM module per level for a
    # task's backends, driver.jit_together): blamed on the runtime, whose variant JITs alone.
    "driver": (
        Mutation(
            "linked-jit-keeps-bf16-conversions",
            "driver.py",
            "            without_bf16_conversions(module, *(text for _, (text, _) in items))\n",
            "",
            "the linked JIT compiles bfloat16 kernels with the host's bfloat16 conversions",
        ),
        _bf16_row_min,
        ["cpu-vector", "cpu-blas"],  # (kernels as shipped: linked at -O3)
        "driver",
    ),
    # Poison the CPU decides: an fptoui of a negative float is -3 on a generic x86-64 (a
    # 64-bit conversion, truncated) and 0xFFFFFFFF with AVX-512's vcvttss2usi. It was blamed on
    # LLVM's code generation; the poison checks find it computed by the module as built.
    "builder-poison": (
        Mutation(
            "float-to-int32-unsigned",
            "primitives/scalar.py",
            'f"{truncated} = arith.fptosi {safe} : {src} to i32"',
            'f"{truncated} = arith.fptoui {safe} : {src} to i32"',
            "float -> int32 converted as unsigned (poison for negative values)",
        ),
        _float32_to_int32,
        ["cpu-loops"],
        "builder",
    ),
    # A triage variant wrong where the backend it varies is right (a share of session cases
    # runs one): its own code, not the program's (the float -2**31 converts to int32 defined).
    "triage": (
        Mutation(
            "poison-fptosi-low-bound-inclusive",
            "lower/poison.py",
            "else (-(2 ** (width - 1)) - 1, 2 ** (width - 1))",
            "else (-(2 ** (width - 1)), 2 ** (width - 1))",
            "+poison-checks takes the least int32 itself for out of range",
        ),
        _float32_to_int32,
        ["cpu-loops@O0", "cpu-loops+poison-checks@O0"],
        "triage",
    ),
    "frontend": (
        Mutation(
            "reduction-wrong-axis",
            "frontend/lang.py",
            "    axes = normalize_axes(axis, x.ndim, name)\n",
            "    axes = tuple(sorted(x.ndim - 1 - a for a in normalize_axes(axis, x.ndim, name)))"
            "\n",
            "reductions mirror their axes",
        ),
        _sum_axis1,
        ["cpu-loops"],
        "frontend",
    ),
    # A primitive's rule plans a slice one dimension short: the module built from that graph
    # does not verify, and the graph, interpreted by NumPy, does not even run (blamed on the
    # builder: "the module as built does not verify").
    "frontend-rule": (
        Mutation(
            "ellipsis-counted-as-index",
            "primitives/rules.py",
            "consuming = sum(item is not None and item is not Ellipsis for item in items)",
            "consuming = sum(item is not None for item in items)",
            "static indexing counts the Ellipsis among the indices that consume a dimension",
        ),
        _ellipsis_index,
        ["cpu-loops"],
        "frontend",
    ),
    # ...while a right graph whose module does not verify stays the builder's.
    "builder-verifier": (
        Mutation(
            "transpose-permutation-reversed",
            "lower/emit.py",
            'perm = ", ".join(str(p) for p in node.attrs["perm"])',
            'perm = ", ".join(str(p) for p in reversed(node.attrs["perm"]))',
            "linalg.transpose is written with its permutation reversed",
        ),
        _transpose,
        ["cpu-loops"],
        "builder",
    ),
    "builder": (
        Mutation(
            "wrong-broadcast-map",
            "lower/emit.py",
            "    lead = len(result) - len(operand)\n",
            "    lead = 0\n",
            "broadcast operands aligned left",
        ),
        _broadcast_add,
        ["cpu-loops"],
        "builder",
    ),
    "blas": (
        Mutation(
            "wrong-blas-leading-dimension",
            "lower/blas.py",
            "%{p}_ldr = arith.select %{p}_r1, %{p}_cols, {s0} : index",
            "%{p}_ldr = arith.select %{p}_r1, %{p}_cols, %{p}_cols : index",
            "gemm gets the column count as leading dimension",
        ),
        _strided_matmul,
        ["cpu-blas"],
        "blas",
    ),
    "builder-uninitialized": (_UNFILLED_ACCUMULATOR, _float32_matmul, ["cpu-loops"], "builder"),
    # cpu-vector's temporaries are static globals, not allocations.
    "builder-uninitialized-vector": (
        _UNFILLED_ACCUMULATOR,
        _float32_matmul,
        ["cpu-vector@O0"],
        "builder",
    ),
    # A wrong error path taken when the kernel runs (not while tracing) is found like a wrong
    # answer: the graph interpreted by NumPy raises as it should.
    "builder-run-time-check": (
        Mutation(
            "gather-accepts-the-row-count",
            "lower/emit.py",
            '"%high = arith.cmpi sge, %a0, %rows : i32"',
            '"%high = arith.cmpi sgt, %a0, %rows : i32"',
            "a gather lets an id equal to the table's row count through",
        ),
        _gather_past_the_table,
        ["cpu-loops"],
        "builder",
    ),
    "runtime": (
        _SWAPPED_ARGUMENTS,
        _subtract,
        ["cpu-loops"],
        "runtime",
    ),
    "runtime@O0": (  # a default session's backends carry a level
        _SWAPPED_ARGUMENTS,
        _subtract,
        ["cpu-loops@O0"],
        "runtime",
    ),
    # A fix-up that completes every prefix (cpu-vector's gathers) fails first at the stage
    # whose gathers it mishandles: the copying fix-up (+copied-gathers) tells them apart (the
    # vectorizer, mlir-pass:transform-interpreter, was blamed).
    "gathers-fixup": (
        Mutation(
            "gather-view-offset-dropped",
            "vector/gathers.py",
            "start = known(offset, meta_offset)",
            "start = 0",
            "the gathers fix-up reads a strided view from its buffer's start, not its offset",
        ),
        _gather_from_an_offset_view,
        ["cpu-vector@O0"],
        "gathers",
    ),
    # The libm stage completes every prefix too (convert-math-to-llvm would write exp(x) - 1):
    # a planted one was blamed on the builder; the plain one (+plain-libm) tells them apart,
    # for scalars at the module as built, and for the vectors only cpu-vector's helper takes.
    "libm-stage": (
        Mutation(
            "log1p-calls-log",
            "lower/libm.py",
            'FUNCTIONS = {"expm1": ("expm1f", "expm1"), "log1p": ("log1pf", "log1p")}',
            'FUNCTIONS = {"expm1": ("expm1f", "expm1"), "log1p": ("log1pf", "log")}',
            "the libm stage calls log for a float64 log1p",
        ),
        _log1p,
        ["cpu-loops@O0"],
        "libm",
    ),
    "libm-stage-vectors": (
        Mutation(
            "expm1-lanes-dropped",
            "lower/libm.py",
            '        accumulated = f"%a{n}"',
            '        accumulated = "%acc"',
            "the libm stage's vector helper inserts each lane into the zero vector: only the "
            "last lane is kept",
        ),
        _expm1_rows,
        ["cpu-vector@O0"],
        "libm",
    ),
    # A pipeline that runs without error but leaves ops LLVM's translation does not take (the
    # second convert-vector-to-llvm, after convert-math-to-libm's lane-by-lane calls, dropped):
    # no pass fails, and the engine's error names nothing; it was "a Python exception at
    # compiler/runtime.py in make_engine".
    "pipeline-leaves-ops": (
        Mutation(
            "libm-lanes-left-as-vector-ops",
            "pipelines.py",
            '"convert-vector-to-llvm, convert-arith-to-llvm, convert-ub-to-llvm, '
            'convert-index-to-llvm, "',
            '"convert-arith-to-llvm, convert-ub-to-llvm, convert-index-to-llvm, "',
            "cpu-vector's lowering converts vector ops before convert-math-to-libm makes more",
        ),
        _cbrt_rows,
        ["cpu-vector@O0"],
        "pipeline:lowered",
    ),
    # The output buffers (the other way in, MLIR's runtime helpers, allocates its own: when it
    # shared ``output_buffers``, a runtime that gave two outputs of one type one buffer was
    # blamed on the built module).
    "runtime-outputs": (
        Mutation(
            "outputs-column-major",
            "runtime.py",
            "outputs.append(_inside(slab, tuple(node.shape), dtype))",
            "outputs.append(_inside(slab, tuple(node.shape)[::-1], dtype).T)",
            "(instrumented, as the worker's) output buffers in column-major order: the kernel "
            "writes rows into columns",
        ),
        _subtract,
        ["cpu-loops@O0"],
        "runtime",
    ),
    # A reduction's identity is the graph's (the frontend chooses it): the graph interpreter
    # starts from it too, so a wrong one is the frontend's, not the built module's.
    "frontend-identity": (
        Mutation(
            "bf16-reduction-int-identity",
            "frontend/lang.py",
            '"identity": float_identity if is_float(out.dtype) else int_identity,',
            '"identity": float_identity if out.dtype.kind == "f" else int_identity,',
            "a bfloat16 max starts from int32's least value (bfloat16's kind is not 'f')",
        ),
        _bfloat16_row_max,
        ["cpu-loops@O0"],
        "frontend",
    ),
    # Arrays in another memory layout (here a Fortran-ordered operand) handed to the kernel as
    # if C-contiguous: every variant compiles and calls alike, so every stage "failed" and the
    # built module was blamed; the same values C-contiguous pass.
    "layouts": (
        Mutation(
            "inputs-only-aligned",
            "api.py",
            'array = np.require(np.asarray(value), requirements="C")',
            'array = np.require(np.asarray(value), requirements="A")',
            "arrays in another layout are passed as they are, read as C-contiguous",
        ),
        _subtract,
        ["cpu-loops@O0"],
        "layouts",
    ),
    # The JIT crashes at the call: every variant would crash alike. A gemm call needs OpenBLAS
    # on every CPU (a bfloat16 add did not, where AVX-512 BF16 converts without a library call).
    "runtime-symbols": (
        Mutation(
            "no-runtime-libraries",
            "runtime.py",
            "for path in runtime_libraries()]",
            "for path in ()]",
            "engines load no runtime library (OpenBLAS's gemm among them)",
        ),
        _float32_matmul,
        ["cpu-blas"],
        "runtime",
    ),
    # A Python stage that fails (here: its output does not verify) has no mlir-opt replay: it
    # was once sent to one, which "did not fail", and the layer was unknown.
    "blas-stage-fails": (
        Mutation(
            "blas-declares-no-helper",
            "lower/blas.py",
            "    used = sorted({elt for _, _, elt in targets})\n",
            "    used = sorted({elt for _, _, elt in targets})[1:]\n",
            "the gemm helper is called but never declared",
        ),
        _float32_matmul,
        ["cpu-blas"],
        "blas",
    ),
    "mlir-pass": (
        Mutation(
            "rank-reducing-slices",
            "lower/emit.py",
            'f"to {tensor_type(sizes, node.dtype)}"\n'
            "        )\n"
            "        if sizes == node.shape:\n"
            "            return name\n"
            "        return self._reshape(name, sizes, node.shape, node.dtype)\n",
            'f"to {tensor_type(node.shape, node.dtype)}"\n' "        )\n" "        return name\n",
            "the subview-crash workaround disabled: slices are rank-reducing again",
        ),
        _rank_reducing_slice,
        ["cpu-loops"],
        "mlir-pass:expand-strided-metadata",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("layer", sorted(PLANTS))
def test_each_planted_layer_is_named(layer: str, tmp_path: Path) -> None:
    from harness.triage.llvm_crash import host_features

    bf16 = layer in ("llvm:codegen", "driver")
    if bf16 and not set(_BF16_CONVERSIONS) & set(host_features()):
        pytest.skip("LLVM rounds float32 to bfloat16 correctly on CPUs without BF16 conversions")
    if layer == "builder-poison" and "avx512f" not in host_features():
        pytest.skip("without AVX-512 this CPU's fptoui of a negative float gives NumPy's answer")
    mutation, build, backends, expected = PLANTS[layer]
    spec = json.dumps(
        {
            "program": _program(build), "backends": backends, "inputs": _INPUTS.get(layer, {}),
            "layouts": _LAYOUTS.get(layer, []),
        }  # fmt: skip
    )
    result = json.loads(last_line_with(mutation, tmp_path, _ATTRIBUTE, spec, timeout=600))
    assert result["findings"], f"the planted {layer} bug was not found"
    attribution = result["attribution"]
    assert attribution["layer"] == expected, attribution
    if layer == "pipeline-leaves-ops":
        mlir = attribution["mlir"]
        assert "vector.extract" in attribution["detail"], attribution
        assert mlir["command"].startswith("mlir-opt --pass-pipeline="), mlir
        assert "compiler/pipelines.py" in attribution["detail"], attribution
    if layer == "blas-stage-fails":
        mlir = attribution["mlir"]
        assert mlir["failing_stage"] == "blas" and "linalg.matmul" in mlir["stage_input"], mlir
        assert (
            "does not reference a valid" in mlir["error"]
            and "--from-stage blas --to-stage blas" in mlir["command"]
        )
        assert "compiler/lower/blas.py" in attribution["detail"], attribution
    if layer == "builder-verifier":
        assert attribution["detail"] == "the module as built does not verify", attribution
        assert attribution["evidence"]["graph-numpy (differential)"] == "passes", attribution
    if layer == "triage":
        assert "compiler/lower/poison.py" in attribution["detail"], attribution
        assert attribution["evidence"] == {"cpu-loops@O0": "passes"}, attribution
    if layer == "frontend-rule":
        assert "interpreted by NumPy (no MLIR), is wrong too" in attribution["detail"]
        assert attribution["evidence"]["graph-numpy (differential)"] == "fails", attribution
    if layer == "llvm:codegen-optimized":
        evidence = attribution["evidence"]
        assert evidence["cpu-loops@O0"] == "passes", evidence
        assert evidence["cpu-loops+optimized-codegen@O0"] == "fails", evidence
        assert "LLVM's code generation" in attribution["detail"], attribution
    if layer == "builder-poison":
        assert "llvm.fptoui" in attribution["detail"], attribution
        evidence = attribution["evidence"]
        assert evidence["cpu-loops+generic-cpu@O0"] == "passes", evidence
        assert evidence["cpu-loops+poison-checks@O0"].startswith("poison-check:"), evidence
        assert evidence["cpu-loops[:module]+poison-checks@O0"] == "fails", evidence
    if expected.startswith("mlir-pass:"):
        mlir = attribution["mlir"]
        reduced = mlir["reduced_module"]
        assert len([line for line in reduced.splitlines() if line.strip()]) <= 10, reduced
        assert mlir["command"].startswith("mlir-opt --pass-pipeline=")
        assert "expand-strided-metadata" in mlir["command"]


def test_a_relation_broken_by_the_graph_interpreter_is_not_called_a_frontend_bug() -> None:
    """The interpreter failing a relation may mean the relation does not hold for the program
    (a head permutation of a weight read elsewhere once did): layer ``relation``, not
    ``frontend``; any other oracle keeps ``frontend``."""
    from harness.oracles.base import Finding
    from harness.triage.attribution import _interpreter_fails
    from harness.triage.export import OWNERS

    relation = Finding("metamorphic", ("cpu-loops",), "metamorphic:head-permutation", "d", None)
    differential = Finding("mismatch", ("cpu-loops",), "differential", "d", None)
    assert _interpreter_fails(relation)[0] == "relation" and "relation" in OWNERS
    assert _interpreter_fails(differential)[0] == "frontend"


_RELATION_ATTRIBUTE = """
import json
import numpy as np
from harness.case import Case
from harness.run.runner import Runner
from harness.triage.attribution import Attributor
from strategies.model import ProgramBuilder

b = ProgramBuilder()
x, g, beta = b.input((4, 16), "float32"), b.input((16,), "float32"), b.input((16,), "float32")
program = b.build(b.node("layer_norm", x, g, beta))
rng = np.random.default_rng(0)
inputs = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((4, 16), (16,), (16,))]
case = Case(program, inputs, ("cpu-loops",))
with Runner(None, use_jax=False) as runner:
    findings = runner.evaluate(case, ("metamorphic:layer-norm-shift",)).findings
    relation = [f for f in findings if f.oracle.startswith("metamorphic:")]
    result = {"oracles": sorted(f.oracle for f in findings)}
    if relation:
        result["attribution"] = Attributor(runner, budget_seconds=60).attribute(
            case, relation[0]
        ).to_dict()
print(json.dumps(result))
"""


@pytest.mark.slow
def test_a_relation_the_graph_breaks_by_being_wrong_is_a_frontend_bug(tmp_path: Path) -> None:
    """A one-pass variance planted in the frontend (the trace rewrites a mean of squared
    deviations as E[x^2] - E[x]^2) breaks the layer-norm shift relation on the graph interpreter
    too. On values centred on zero it is right; on the relation's shifted values (x + 8) the
    differential oracle rejects the graph: the finding is the frontend's, not the relation's (a
    60 s session with such a plant had named it ``relation``)."""
    old = '    if name == "mean":\n        if out.dtype == FLOAT16:\n'
    mutation = Mutation(
        "one-pass-variance",
        "frontend/lang.py",
        old,
        "    squared = x.node.args[0] if x.node.op == 'elementwise' else None\n"
        "    if name == 'mean' and len(x.node.args) == 2 and x.node.args[1] is squared:\n"
        "        if squared.op == 'elementwise' and squared.attrs['prim'].name == 'subtract':\n"
        "            y = Tensor(squared.args[0])\n"
        "            mean = reduce('mean', y, axes, keepdims)\n"
        "            return reduce('mean', y * y, axes, keepdims) - mean * mean\n" + old,
        "a mean of squared deviations as E[x^2] - E[x]^2",
    )
    result = json.loads(last_line_with(mutation, tmp_path, _RELATION_ATTRIBUTE, timeout=600))
    assert "metamorphic:layer-norm-shift" in result["oracles"], result
    attribution = result["attribution"]
    assert attribution["layer"] == "frontend", attribution
    assert attribution["evidence"]["graph-numpy (differential)"] == "fails", attribution


def test_unresolved_jit_symbols_are_read_from_the_workers_stderr() -> None:
    from harness.triage.attribution import unresolved_symbols

    text = "JIT session error: Symbols not found: [ __truncsfbf2 ]\nkilled by SIGSEGV"
    assert unresolved_symbols(text) == ["__truncsfbf2"]
    both = "JIT session error: Symbols not found: [ __truncsfbf2, __extendhfsf2 ]"
    assert unresolved_symbols(both + "\n" + both) == ["__truncsfbf2", "__extendhfsf2"]
    assert unresolved_symbols("killed by SIGSEGV [stage cpu-loops run]") == []


def test_a_python_stage_is_owned_by_the_file_that_implements_it() -> None:
    """A finding whose layer is one of cpu-vector's Python stages names the file to read (it
    said "unknown: attribution did not conclude"); MLIR pipeline stages are not Python's."""
    from harness.triage.export import OWNERS, owner

    assert owner("views") == "this project: compiler/vector/fusion.py (the views stage)"
    assert "compiler/vector/gathers.py" in owner("complete-gathers")
    assert owner("blas") == OWNERS["blas"]
    assert owner("vectorized") == "unknown: attribution did not conclude"
    # Every layer named above the pipelines (the @jit layer's findings: "unknown" in exports
    # until now) and by the configurations' check has its owner.
    from harness.triage.attribution import _ABOVE_PIPELINES, _CACHES

    for layer in {layer for layer, _ in _ABOVE_PIPELINES.values()} | set(_CACHES):
        assert not owner(layer).startswith("unknown"), layer


def test_gpu_findings_are_attributed_to_the_gpu_lowering() -> None:
    """Both GPU backends declare the layer their failures live in (``gpu``: this project's GPU
    lowering, owned in the export), not "not one of our pipelines"."""
    from harness.triage.attribution import _declared_layer
    from harness.triage.export import owner

    assert _declared_layer("gpu-emulated") == _declared_layer("gpu-nvptx") == "gpu"
    assert "compiler/gpu/pipeline.py" in owner("gpu")


def test_a_python_exception_in_the_compiler_names_its_file_and_line() -> None:
    """An internal error (a Python exception no stage turned into a CompilerError) says where in
    compiler/ it was raised, and is attributed there, not bisected over MLIR stages that all
    fail alike (a planted driver bug was reported as the builder's)."""
    import numpy as np

    from harness.case import Case
    from harness.oracles.base import Finding
    from harness.run.worker import failure
    from harness.triage.attribution import Attributor
    from strategies.model import ProgramBuilder

    try:
        from compiler.persist import key

        key(None, None, None, None)  # type: ignore[arg-type]
    except Exception as error:  # noqa: BLE001 - any exception raised inside compiler/
        raised = error
    result = failure("cpu-loops@O0", raised)
    assert result.status == "internal-error"
    assert "(at compiler/persist.py:" in result.message and " in key)" in result.message
    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((2,), "float32"))), [np.ones(2, np.float32)])
    finding = Finding("internal-error", ("cpu-loops@O0",), "error-path", result.message, case)
    found = Attributor(None).attribute(case, finding)
    assert found.layer == "internal" and "compiler/persist.py:" in found.detail
