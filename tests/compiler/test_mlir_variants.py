"""The ``mlir:<variant>`` backends (``compiler/mlir_variants/``): every catalog entry parses
with ``mlir-opt``, scripts apply, preconditions skip (and say why), names round-trip, and each
stage's command re-creates the stage's text from the previous stage's saved text."""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import pytest

from compiler import backends, jit, ops, pipelines
from compiler import mlir_variants as mv
from compiler.tools import require

MLIR_OPT = require("mlir-opt")
PORTABLE = "python -m compiler tools mlir-opt"


def sample(x, w, b):
    """Row softmax (max/sum reductions, keepdims reshapes), a matmul, a unit-dim broadcast,
    tanh, a transpose and a rank-0 sum: most entries' preconditions hold on it."""
    y = ops.softmax(x) @ w
    return np.tanh(y + b).T * np.sum(x)


def _args(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    shapes = ((3, 4), (4, 5), (1, 5))
    return tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)


def _opt(pipeline: str, text: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [MLIR_OPT, f"--pass-pipeline={pipeline}", "-"], input=text, capture_output=True,
        text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# The catalog


def test_catalog_shape() -> None:
    assert len(mv.CATALOG) >= 70
    for entry in mv.CATALOG.values():
        assert entry.stage in mv.STAGES
        assert entry.pipeline or entry.script is not None, entry.id
        assert mv.SEPARATOR not in entry.id and "+" not in entry.id
        for broken in entry.known_broken:
            assert (broken.features or broken.symptom) and broken.issue, entry.id
        for lowering in entry.after:
            assert mv.CATALOG[lowering].stage == "lower"
    # every upstream bug the research found excludes something by default
    issues = " ".join(b.issue for e in mv.CATALOG.values() for b in e.known_broken)
    bugs = (
        "#195360", "#221293", "#222275", "#218696", "#221141", "#131135", "#180312", "#189236",
        "#225247", "#187085", "#196604",
    )  # fmt: skip
    for bug in bugs:
        assert bug in issues
    assert "| to-affine-loops | lower |" in mv.catalog_markdown()


def test_every_pass_entry_parses_with_mlir_opt() -> None:
    """All pass fragments in one pipeline: mlir-opt knows every pass and option."""
    fragments = []
    for entry in mv.CATALOG.values():
        if entry.pipeline:
            fragments.append(entry.pipeline)
    proc = _opt(f"builtin.module({', '.join(fragments)})", "module {}\n")
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_every_script_applies_with_mlir_opt(rng) -> None:
    """Each transform script, generated for the sample module (tensor entries) or its
    bufferized form (buffer entries), runs in mlir-opt and leaves a valid module."""
    args = _args(rng)
    built = jit(sample).emit(*args)
    bufferized = jit(sample).compile(*args, target="mlir:").artifacts.stages["bufferized"]
    scripted = [e for e in mv.CATALOG.values() if e.script is not None]
    assert len(scripted) >= 9
    with tempfile.TemporaryDirectory() as folder:
        for entry in scripted:
            text = built if entry.stage == "tensor" else bufferized
            with open(os.path.join(folder, f"{entry.id}.transform.mlir"), "w") as handle:
                handle.write(entry.script(text, entry.id))
            proc = _opt(f"builtin.module({entry.fragment(entry.id)})", text, cwd=folder)
            assert proc.returncode == 0, f"{entry.id}: {proc.stderr[-2000:]}"


# --------------------------------------------------------------------------------------------
# Names


@pytest.mark.parametrize(
    "name",
    [
        "mlir:",
        "mlir:canonicalize",
        "mlir:fold-unit-extent-dims.fuse-elementwise.to-affine-loops.affine-loop-fusion",
        "mlir:known-broken:to-affine-loops.affine-super-vectorize",
        "mlir:tile-vectorize-masked.bufferize-bottom-up.buf-canonicalize-cse.to-loops.loops-licm",
    ],
)
def test_names_round_trip(name: str) -> None:
    parsed = mv.parse(name)
    assert parsed.variant.name == name
    assert mv.parse(parsed.variant.name) == parsed
    backend = backends.get(name)
    assert backend.name == name and backends.why_not(name) is None
    assert backends.get(name) is backend
    assert backend.target.opt_level == mv.DEFAULT_LEVEL
    entries = [s.name for s in backend.target.stages if isinstance(s, mv.EntryStage)]
    assert [e for e in entries if e != "vector-fixup"] == list(parsed.variant.entries)


def test_suffixes_like_our_targets() -> None:
    name = "mlir:generalize.to-loops"
    assert backends.get(f"{name}@O3").target.opt_level == 3
    assert backends.get(f"{name}+mlir-runtime").runtime == "mlir"
    # Either order is read; the name is NAME+mlir-runtime@O<n>, which both parsers read.
    assert backends.get(f"{name}@O2+mlir-runtime").name == f"{name}+mlir-runtime@O2"
    assert backends.get("cpu-loops@O2+mlir-runtime").name == "cpu-loops+mlir-runtime@O2"
    prefix = backends.get(f"{name}[:to-loops#1]").target
    assert prefix.stage_names() == ["generalize", "bufferized", "to-loops#1", "libm", "complete"]
    assert prefix.opt_level == 0
    assert backends.get(f"{name}[:module]").target.stage_names() == ["libm", "complete"]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("mlir:no-such-entry", "unknown catalog entries"),
        ("mlir:to-loops.canonicalize", "stage order"),
        ("mlir:to-loops.to-affine-loops", "at most one lower"),
        ("mlir:affine-loop-fusion", "runs after one of to-affine-loops"),
        ("mlir:to-loops.affine-scalrep", "runs after one of to-affine-loops"),
        ("mlir:cse.cse", "appears twice"),
        ("mlir:*", "draws a variant per case"),
        ("mlir:cse@O7", "optimization level"),
    ],
)
def test_bad_names_say_why(name: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        backends.get(name)
    assert why in (backends.why_not(name) or "")


def test_drop_keeps_the_variant_valid() -> None:
    variant = mv.parse("mlir:cse.to-affine-loops.affine-scalrep.affine-licm").variant
    assert variant.without(0).entries == ("to-affine-loops", "affine-scalrep", "affine-licm")
    assert variant.without(1).entries == ("cse",)  # the loops entries need their lowering
    assert mv.is_draw("mlir:*") and mv.is_draw("mlir:known-broken:*@O0")
    assert not mv.is_draw("mlir:cse")


# --------------------------------------------------------------------------------------------
# Preconditions


def test_features() -> None:
    text = "%0 = linalg.reduce ins(%a : tensor<3x1xf32>) ... arith.maximumf ... linalg.yield"
    found = mv.features(text)
    assert {"linalg.reduce", "unit-dim", "minmax-reduction"} <= found
    assert "rank0" in mv.features("memref<f32>") and "dynamic" in mv.features("memref<?xf64>")
    assert "affine-nonconst-bound" in mv.features("affine.for %i = 0 to %n {")
    assert "single-iter-loop" in mv.features("affine.for %i = 0 to 1 {")
    assert "affine-nonunit-step" in mv.features("affine.for %i = 0 to 8 step 4 {")
    assert "affine-nonunit-step" not in mv.features("affine.for %i = 0 to 8 {")
    # bfloat16 is a number too: a dynamic bf16 memref kept to-affine-loops away from its known
    # bug only once it counted (a known-good session met it on a bf16 cos).
    bf16 = mv.features("memref<?x1xbf16, strided<[1, 1], offset: ?>>")
    assert {"dynamic", "unit-dim"} <= bf16 and "rank0" in mv.features("tensor<bf16>")
    # a gather of one element (llvm PR #187085), not an extract_slice or a looping gather
    gather = "linalg.generic {iterator_types = []} %x = tensor.extract %t[%i] linalg.yield %x"
    assert "rank0-extract" in mv.features(gather)
    assert "rank0-extract" not in mv.features(gather.replace("extract ", "extract_slice "))
    looping = gather.replace("[]", '["parallel"]')
    assert "rank0-extract" not in mv.features(looping)


def test_preconditions_skip_and_say_why(rng) -> None:
    """An entry whose precondition fails passes its input through: the same text, a copy as
    its command, and the reason in the notes; the answer is the baseline's."""
    args = _args(rng)
    # detensorize needs a rank-0 tensor: absent from a plain matmul
    fn = jit(lambda a, w: a @ w)
    artifacts = fn.compile(*args[:2], target="mlir:cse.detensorize.to-affine-loops").artifacts
    stages = artifacts.stages
    assert stages["detensorize"] == stages["cse"]
    assert artifacts.commands["detensorize"].startswith("cp cse.mlir detensorize.mlir  #")
    assert "detensorize: needs one of rank0" in artifacts.notes["skipped"]
    assert artifacts.notes["applied"] == "cse,to-affine-loops"
    # a known-broken combination is skipped by default, and runs when asked
    name = "to-affine-loops.affine-loop-fusion"
    default = jit(sample).compile(*args, target=f"mlir:{name}").artifacts
    assert "affine-loop-fusion: known broken with memref.reshape" in default.notes["skipped"]
    assert default.stages["affine-loop-fusion"] == default.stages["to-affine-loops"]
    forced = jit(sample).compile(*args, target=f"mlir:known-broken:{name}").artifacts
    assert "skipped" not in forced.notes
    assert forced.stages["affine-loop-fusion"] != forced.stages["to-affine-loops"]
    # the vector fix-up runs only where vector ops remain
    skipped = jit(sample).compile(*args, target="mlir:vectorize-transpose").artifacts
    assert "vector." in skipped.stages["vectorize-transpose"]
    assert "vector." not in skipped.stages["vector-fixup"]


@pytest.mark.parametrize("rows", [1, 2])
def test_a_fusion_that_runs_a_reduction_twice_is_skipped(rows: int) -> None:
    """``x1 * mean(x0)`` of a (1,) x0: affine-loop-fusion ran the reduction twice (llvm PR
    #189236; a 10-minute campaign, seed 2202, found it). No input feature tells, so a trial run
    does: where the output updates an accumulator more often than the input did, the entry is
    skipped and says why; the known-broken variant still runs it (and is wrong)."""
    x0, x1 = np.array([3.0]), np.ones((rows, 1))
    program = jit(lambda a, b: b * a.mean())
    name = "optimize.to-affine-loops.affine-loop-fusion"
    compiled = program.compile(x0, x1, target=f"mlir:{name}")
    assert (
        "affine-loop-fusion: known broken (its output shows it)"
        in compiled.artifacts.notes["skipped"]
    )
    assert np.array_equal(compiled(x0, x1), x1 * 3.0)
    forced = program(x0, x1, target=f"mlir:known-broken:{name}")
    assert not np.array_equal(forced, x1 * 3.0)


def test_a_fold_that_makes_an_unlowerable_masked_write_is_skipped() -> None:
    """A float64 ``gelu`` of a (3, 1, 3): ``fold-memref-alias-ops`` folds a rank-reducing
    subview into the masked writes ``buf-tile-vectorize-masked`` made, whose maps then skip the
    unit dim, and the vector fix-up (convert-vector-to-scf) emits invalid IR (llvm PR #144893; a
    10-minute ``mlir:*`` session found it). A trial run sees such writes appear: the fold is
    skipped and says why, the answer is right; the known-broken variant still fails."""
    from compiler.errors import CompilerError
    from compiler.mlir_variants.scripts import masked_projected_write

    x = np.linspace(-3, 3, 9).reshape(3, 1, 3)
    program = jit(lambda a: ops.gelu(a))
    name = "fold-unit-extent-dims-slices.buf-tile-vectorize-masked.fold-memref-alias-ops"
    compiled = program.compile(x, target=f"mlir:{name}")
    assert "fold-memref-alias-ops: known broken" in compiled.artifacts.notes["skipped"]
    np.testing.assert_allclose(compiled(x), program(x, target="cpu-loops"), rtol=1e-13)
    with pytest.raises(CompilerError, match="inferred mask type"):
        program.compile(x, target=f"mlir:known-broken:{name}")
    write = (
        "vector.transfer_write %v, %m[%c0, %c0, %c0]{mask} {{in_bounds = [true, true], "
        "permutation_map = {map}}} : vector<4x4xf64>, memref<3x1x3xf64>"
    )
    skipping = "affine_map<(d0, d1, d2) -> (d0, d2)>"
    assert masked_projected_write("", write.format(mask=", %k", map=skipping))
    assert not masked_projected_write("", write.format(mask="", map=skipping))  # no mask
    for results, made in (("d0, d2", True), ("d1, d2", False)):  # minor identity: fine
        aliased = f"#map = affine_map<(d0, d1, d2) -> ({results})>\n" + write.format(
            mask=", %k", map="#map"
        )
        assert masked_projected_write("", aliased) == made
    made = write.format(mask=", %k", map=skipping)
    assert not masked_projected_write(made, made)  # there already: not this entry's doing


def test_whole_op_vectors_past_the_lane_limit_skip_the_entry() -> None:
    """An ``attend`` of T = 59 on ``mlir:buf-vectorize-children``: vectorized whole, its ops
    made vectors of thousands of lanes and LLVM's code generation ran past the harness's
    120 s (a 10-minute ``mlir:*`` session, seed 62, stored it as a hang). A trial run sees
    them: the entry is skipped and says why, and the compile takes seconds."""
    from compiler.mlir_variants.scripts import VECTOR_LANES_MAX, huge_vectors

    assert huge_vectors("", f"vector<1x{VECTOR_LANES_MAX + 1}xf32>")
    assert not huge_vectors("", f"vector<2x{VECTOR_LANES_MAX // 2}xi1> memref<4096xf32>")
    t, c = 59, 8
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((t, c), (c,), (c,), (c, 3 * c))]
    args += [np.zeros(3 * c, np.float32), rng.standard_normal((c, c)).astype(np.float32)]
    args += [np.zeros(c, np.float32)]
    program = jit(lambda *a: ops.attend(*a, heads=4))
    compiled = program.compile(*args, target="mlir:buf-vectorize-children")
    assert "buf-vectorize-children: known broken" in compiled.artifacts.notes["skipped"]
    assert "1024 lanes" in compiled.artifacts.notes["skipped"]
    np.testing.assert_allclose(compiled(*args), program(*args), rtol=1e-4, atol=2e-5)  # float32


def test_odd_bfloat16_vectors_skip_a_vectorizing_entry() -> None:
    """LLVM 22.1.8 aborts the process on bfloat16 vectors of 33 lanes (a 10-minute campaign,
    seed 2505: a bfloat16 layer_norm of 33 elements on ``mlir:buf-vectorize-children``). Every
    entry that leaves vector ops carries the note; a trial run of the script sees the vectors
    in its output, and the entry is skipped (checked without the JIT, which would abort)."""
    import ml_dtypes

    from compiler import driver
    from compiler.mlir_variants import variants

    assert all(
        any("soft promote" in b.issue for b in e.known_broken)
        for e in mv.CATALOG.values() if e.vector
    )  # fmt: skip
    x = np.linspace(-8, 0, 33).astype(ml_dtypes.bfloat16).reshape(1, 1, 33)
    g, b = np.array([-4.0], ml_dtypes.bfloat16), np.array([-2.75], ml_dtypes.bfloat16)
    _, graph, _ = jit(lambda x, g, b: ops.layer_norm(x, g, b)).trace(x, g, b)
    target = backends.get("mlir:buf-vectorize-children").target
    artifacts = variants.annotate(driver.compile_graph(graph, target, native=False), target.stages)
    assert (
        "buf-vectorize-children: known broken (its output shows it)" in artifacts.notes["skipped"]
    )
    before = artifacts.previous("buf-vectorize-children")
    assert artifacts.stages["buf-vectorize-children"] == artifacts.stages[before]


def test_a_gather_from_a_strided_slice_skips_a_vectorizing_entry() -> None:
    """``convert-vector-to-llvm`` leaves a ``vector.gather`` from a memref whose innermost
    stride is not 1 unconverted, and LLVM translation then fails ("Failure while creating the
    ExecutionEngine"): a CI run's known-good ``mlir:*`` session (seed 3, Hypothesis 6.170) met
    ``gather(x[..., 1:12:2], ids)`` on ``mlir:vectorize-children``, whose vectorize_nd_extract
    gathers from the strided slice. A trial run sees the gather in the entry's output: the
    entry is skipped and says why, and the answer is NumPy's."""
    from compiler.mlir_variants.scripts import strided_gather

    gather = "%g = vector.gather {base}[%c0] [%i], %m, %p : {type}, vector<2xindex>"
    sliced = "%s = tensor.extract_slice %x[{at}] [{sizes}] [{steps}] : tensor<3x4xf64> to t\n"

    def slice_then_gather(at: str, sizes: str, steps: str, reshaped: bool = False) -> bool:
        text = sliced.format(at=at, sizes=sizes, steps=steps)
        if reshaped:  # the gather reads the slice's buffer through a reshape
            text += "%r = tensor.collapse_shape %s [[0, 1]] : tensor<2x4xf64> into t\n"
        return strided_gather("", text + gather.format(base="%r" if reshaped else "%s", type="t"))

    assert slice_then_gather("0, 1", "3, 1", "1, 2")  # x[:, 1::2]: inner stride 2
    # x[:, 2:3]: inner stride 1, rows 4 apart; linear indices read the wrong elements
    assert slice_then_gather("0, 2", "3, 1", "1, 1")
    assert slice_then_gather("0, 0", "2, 2", "1, 1", reshaped=True)  # x[:2, :2], reshaped
    assert not slice_then_gather("1, 0", "2, 4", "1, 1", reshaped=True)  # x[1:3]: whole rows
    assert not slice_then_gather("2, 1", "1, 3", "1, 1")  # x[2, 1:]: one row
    assert not slice_then_gather("0, 2", "1, 1", "1, 1")  # one element
    assert slice_then_gather("%i, 0", "%n, 4", "1, 1")  # sizes not known: not trusted
    memref = "memref<{shape}xf64, strided<[{strides}], offset: 1>>"
    for shape, strides, broken in (
        ("2", "2", True), ("2", "1", False), ("3x1", "3, 1", True), ("3x1", "1, 1", False),
        ("3x4", "4, 1", False), ("3x4", "8, 1", True), ("1x4", "9, 1", False),
        ("?x4", "4, 1", True), ("3x4", "?, 1", True),
    ):  # fmt: skip
        layout = memref.format(shape=shape, strides=strides)
        assert strided_gather("", gather.format(base="%v", type=layout)) == broken, layout
    assert all(
        any("innermost stride" in b.issue for b in e.known_broken)
        for e in mv.CATALOG.values() if e.vector
    )  # fmt: skip
    x = np.array([[[-2.0, -2.0]], [[2.0, 2.0]]])
    ids = np.array([0, 1], np.int32)
    program = jit(lambda x, ids: ops.gather(x[..., 1:12:2], ids))
    compiled = program.compile(x, ids, target="mlir:vectorize-children")
    assert "vectorize-children: known broken" in compiled.artifacts.notes["skipped"]
    np.testing.assert_array_equal(compiled(x, ids), x[..., 1:12:2][ids])
    # A held-out plant's session: the column x[..., 2:6] of a (3, 3), its rows 3 apart.
    x = np.arange(9, dtype=np.float32).reshape(3, 3) / 8
    ids = np.array([2, 0, 1, 1, 2], np.int32)
    program = jit(lambda x, ids: ops.gather(x[..., 2:6], ids))
    compiled = program.compile(x, ids, target="mlir:tile-vectorize-static")
    assert "tile-vectorize-static: known broken" in compiled.artifacts.notes["skipped"]
    np.testing.assert_array_equal(compiled(x, ids), x[..., 2:6][ids])


def test_a_reduction_fused_once_is_not_a_duplicate() -> None:
    """The symptom check counts accumulator updates per run: fusing a reduction's init into
    it, or a row reduction into its rows, keeps the count (2 rows x 3 = 6)."""
    from compiler.mlir_variants.scripts import duplicated_reduction, reduction_updates

    before = """
    affine.for %arg2 = 0 to 2 {
      affine.store %cst, %alloc[%arg2] : memref<2xf32>
    }
    affine.for %arg2 = 0 to 2 {
      affine.for %arg3 = 0 to 3 {
        %1 = affine.load %alloc[%arg2] : memref<2xf32>
        affine.store %2, %alloc[%arg2] : memref<2xf32>
      }
    }"""
    after = """
    affine.for %arg2 = 0 to 2 {
      affine.store %cst, %alloc[%arg2] : memref<2xf32>
      affine.for %arg3 = 0 to 3 {
        %1 = affine.load %alloc[%arg2] : memref<2xf32>
        affine.store %2, %alloc[%arg2] : memref<2xf32>
      }
    }"""
    assert reduction_updates(before) == reduction_updates(after) == {"%alloc": 6}
    assert not duplicated_reduction(before, after)
    twice = after.replace("0 to 2 {", "0 to 4 {")  # the same update under a longer loop
    assert duplicated_reduction(before, twice)


def test_answers_match_numpy(rng) -> None:
    args = _args(rng)
    expected = sample(*args)
    for name in (
        "mlir:",
        "mlir:generalize.fuse-elementwise.tile-fuse.to-parallel-loops.scf-parallel-loop-tiling",
        "mlir:tile-vectorize-static.bufferize-fuzzer-seed.promote-buffers-to-stack",
        "mlir:specialize.buf-vectorize-children.to-affine-loops.affine-loop-unroll",
    ):
        out = jit(sample).compile(*args, target=name)(*args)
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6, err_msg=name)


# --------------------------------------------------------------------------------------------
# Reproduce commands


def _replay(artifacts: dict) -> dict[str, tuple[int, str, bool]]:
    """Run every stage's command on the previous stage's saved text in a scratch folder (the
    portable tool prefix replaced by the tool's path, to save a Python start per command)."""
    names = list(artifacts["stages"])
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for previous, name in zip(names, names[1:], strict=False):
            with open(os.path.join(folder, f"{previous}.mlir"), "w") as handle:
                handle.write(artifacts["stages"][previous])
            command = artifacts["commands"][name]
            assert "/tmp" not in command and "site-packages" not in command
            proc = subprocess.run(
                command.replace(PORTABLE, MLIR_OPT), shell=True, cwd=folder,
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            path = os.path.join(folder, f"{name}.mlir")
            text = open(path).read() if os.path.exists(path) else ""
            same = text.strip() == artifacts["stages"][name].strip()
            results[name] = (proc.returncode, proc.stderr[-2000:], same)
    return results


@pytest.mark.parametrize(
    "name",
    [
        "mlir:fold-unit-extent-dims.tile-vectorize-static.bufferize-bottom-up.to-affine-loops"
        ".affine-scalrep.affine-loop-tile",
        "mlir:tile-fuse-vectorize.block-pack-matmul.buf-tile-vectorize-masked.to-parallel-loops"
        ".scf-parallel-loop-fusion",
        "mlir:known-broken:detensorize.to-affine-loops.affine-loop-fusion.int-range-optimizations",
    ],
)
def test_commands_recreate_every_stage(rng, name: str) -> None:
    args = _args(rng)
    artifacts = jit(sample).compile(*args, target=name).artifacts
    data = artifacts.to_dict()
    assert list(data["commands"]) == [*list(data["stages"])[1:], pipelines.LLVM]
    for stage, (code, stderr, same) in _replay(data).items():
        assert code == 0, f"{stage}: {stderr}"
        assert same, f"{stage}: the command's output differs from the compiler's text"
    scripts = [e for e in mv.parse(name).variant.entries if mv.CATALOG[e].script is not None]
    written = [s for s, c in data["commands"].items() if "TRANSFORM_LIBRARY" in c]
    assert set(written) <= set(scripts) and bool(written) == bool(scripts)


def test_a_script_stage_runs_standalone_for_crash_pinning(rng) -> None:
    """Crash pinning reruns a stage as one mlir-opt run on one file: a script stage nests its
    library in the input and runs only the interpreter."""
    args = _args(rng)
    name = "mlir:tile-vectorize-static"
    artifacts = jit(sample).compile(*args, target=name).artifacts
    stage = backends.get(name).target.stage("tile-vectorize-static")
    pipeline, text = stage.standalone(artifacts.stages["module"])
    assert "preload-library" not in pipeline and "transform-interpreter" in pipeline
    proc = _opt(pipeline, text)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "vector.transfer_read" in proc.stdout
    plain = backends.get(name).target.stage("bufferized")
    assert not hasattr(plain, "standalone")
