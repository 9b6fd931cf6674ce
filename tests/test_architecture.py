"""The architecture's promises, checked: one-way layers, and "a new op, backend or oracle is one
registration" (a toy primitive and a toy backend, registered outside the packages, are generated,
compiled, evaluated by every reference and judged by the oracles)."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return found


def test_layers_import_only_downwards() -> None:
    compiler_imports = _imports("compiler")
    assert not {m for m in compiler_imports if m.split(".")[0] in ("strategies", "harness")}
    strategies_imports = _imports("strategies")
    assert not {m for m in strategies_imports if m.split(".")[0] == "harness"}
    # strategies reads the compiler's primitive table and nothing else of the compiler.
    of_compiler = {m for m in strategies_imports if m.split(".")[0] == "compiler"}
    assert all(
        m.startswith("compiler.primitives") or m == "compiler" for m in of_compiler
    ), of_compiler


def test_strategies_load_without_the_rest_of_the_compiler() -> None:
    import subprocess

    code = (
        "import sys, strategies; "
        "loaded = sorted(m for m in sys.modules if m.startswith('compiler.')); "
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    loaded = set(out.stdout.strip().split(","))
    allowed = {"compiler.primitives", "compiler.dtypes", "compiler.errors", "compiler.ops"}
    assert {m.rsplit(".", 1)[0] if m.count(".") > 1 else m for m in loaded} <= allowed, loaded


@pytest.fixture(scope="module")
def toys():
    """The toy extension, loaded here and (through HARNESS_PLUGINS) in every worker."""
    sys.path.insert(0, str(ROOT / "tests"))
    previous = os.environ.get("HARNESS_PLUGINS")
    os.environ["HARNESS_PLUGINS"] = "toys.extension"
    import toys.extension  # noqa: F401 - registers arccos and the toy-numpy backend

    yield
    from compiler import backends, primitives

    primitives.unregister("arccos")
    backends.unregister("toy-numpy")
    if previous is None:
        os.environ.pop("HARNESS_PLUGINS", None)
    else:
        os.environ["HARNESS_PLUGINS"] = previous
    sys.modules.pop("toys.extension", None)


def test_a_registered_primitive_and_backend_are_fuzzed(toys) -> None:
    import compiler
    from harness.case import Case
    from harness.run.runner import Runner
    from harness.session.progress import summary_table  # noqa: F401 - the CLI sees it too
    from strategies import programs, samples

    assert "arccos" in compiler.xp.__dir__() or callable(compiler.xp.arccos)
    assert "toy-numpy" in compiler.targets()
    drawn = []

    @settings(
        max_examples=12, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(samples(programs(ops=["arccos", "add", "sum"], max_nodes=3, dtypes=["float64"])))
    def collect(sample) -> None:
        drawn.append(sample)

    collect()
    with_toy = [s for s in drawn if "arccos" in s.program.ops]
    assert with_toy, "the generator draws the new primitive"
    with Runner(None, use_jax=True) as runner:
        for sample in with_toy[:4]:
            case = Case(sample.program, list(sample.inputs), ("cpu-loops", "toy-numpy"))
            judgement = runner.evaluate(case)
            assert not judgement.findings, [f.detail for f in judgement.findings]
            assert set(judgement.errors) == {"cpu-loops", "toy-numpy"}
        cells = runner.stats.cells
    assert any(k.startswith("op:arccos|") and k.endswith("|toy-numpy") for k in cells), cells
    # The compiled kernel uses the primitive's own lowering.
    x = np.linspace(-1, 1, 6)
    module = compiler.jit(lambda a: compiler.xp.arccos(a)).emit(x)
    assert "math.acos" in module


@pytest.mark.parametrize(
    "name, call",
    [
        ("reshape", lambda x: x.reshape(3, 2)),
        ("transpose", lambda x: x.T),
        ("permute_dims", lambda x: np.transpose(x, (1, 0))),
        ("index", lambda x: x[1:, ::2]),
    ],
)
def test_the_frontend_types_layout_ops_with_the_tables_rule(monkeypatch, name, call) -> None:
    """One table: tracing takes each op's result type from its registered rule (layout ops
    used to compute their shapes beside the table, so a broken rule misled only the generator)."""
    import dataclasses

    import compiler
    from compiler import primitives

    def planted(operands, attrs):
        raise LookupError(f"planted rule of {name}")

    monkeypatch.setitem(
        primitives.PRIMITIVES, name, dataclasses.replace(primitives.get(name), infer=planted)
    )
    with pytest.raises(LookupError, match="planted"):
        compiler.jit(call).trace(np.ones((2, 3), np.float32))


def test_every_table_entry_evaluates_what_it_prints() -> None:
    """One definition per primitive: its evaluation runs its printed text, in each spelling, so
    a reproducer printed from the table calls the compiler as the failing case did (a table
    whose evaluation said ``np.greater_equal`` while it printed ``>=`` gave a reproducer that
    passed on the very bug it was written for)."""
    import compiler
    from compiler import primitives

    for prim in primitives.PRIMITIVES.values():
        if prim.name == "arccos":  # the toy extension's, when loaded
            continue
        for spelling in primitives.SPELLINGS:
            evaluate, render = prim.spelled(spelling)
            assert evaluate.render is render, (prim.name, spelling)
        if prim.call:  # an operator or attribute; NumPy's spelling calls the function
            assert callable(getattr(np, prim.call)), prim.name
            assert prim.spelled("numpy")[1](["a", "b"][: prim.arity], {}).startswith(
                f"xp.{prim.call}("
            )
    methods = {p.name for p in primitives.PRIMITIVES.values() if p.method is not None}
    assert {"matmul", "sum", "reshape", "permute_dims", "astype", "abs"} <= methods
    x = np.arange(6.0).reshape(2, 3)
    for name, attrs, expected in [
        ("sum", {"axis": 0, "keepdims": True}, x.sum(axis=0, keepdims=True)),
        ("reshape", {"shape": (3, 2)}, x.reshape(3, 2)),
        ("reshape", {"shape": (6,)}, x.reshape(6)),
        ("permute_dims", {"axes": (1, 0)}, x.T),
        ("astype", {"dtype": "int32"}, x.astype(np.int32)),
    ]:
        evaluate, render = primitives.get(name).spelled("methods")
        assert render(["x"], attrs).startswith("x."), render(["x"], attrs)
        got = evaluate(np, [x], attrs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert primitives.get("matmul").spelled("methods")[1](["a", "b"], {}) == "a @ b"
    # NumPy's three forms of a method's sequence argument, each its own frontend path (a
    # frontend that took x.transpose((1, 0)) for an error survived a mutation run; one that
    # took x.transpose([1, 0, 2]) for one axis, a held-out plant, every session).
    y = np.arange(24.0).reshape(2, 3, 4)
    for name, attrs, text, expected in [
        ("reshape", {"shape": (3, 8)}, "y.reshape([3, 8])", y.reshape(3, 8)),
        ("reshape", {"shape": (4, 6)}, "y.reshape((4, 6))", y.reshape(4, 6)),
        ("reshape", {"shape": (24,)}, "y.reshape(24)", y.reshape(24)),
        # ...and through the traced value's metadata (len, .shape, .ndim, .size), which the
        # other spellings never read: a len() of the last axis survived 60 s sessions.
        ("reshape", {"shape": (-1,)}, "y.reshape([y.size])", y.reshape(-1)),
        ("reshape", {"shape": (2, -1)}, "y.reshape((2, y.size // 2))", y.reshape(2, -1)),
        ("sum", {"axis": -1}, "y.sum(axis=y.ndim - 1)", y.sum(axis=-1)),
        ("max", {"axis": (0, -1)}, "y.max(axis=(0, y.ndim - 1))", y.max(axis=(0, -1))),
        ("max", {"axis": -2}, "y.max(axis=-2)", y.max(axis=-2)),
        (
            "index",
            {"key": (slice(1, None), slice(None, None, 2), slice(None, 2))},
            "y[1:len(y), :y.shape[1]:2, :2]",
            y[1:, ::2, :2],
        ),
        ("index", {"key": (None, slice(1, None))}, "y[None, 1:]", y[None, 1:]),
        ("permute_dims", {"axes": (1, 0, 2)}, "y.transpose((1, 0, 2))", y.transpose(1, 0, 2)),
        ("permute_dims", {"axes": (2, 0, 1)}, "y.transpose([2, 0, 1])", y.transpose(2, 0, 1)),
        ("permute_dims", {"axes": (1, 2, 0)}, "y.transpose(1, 2, 0)", y.transpose(1, 2, 0)),
        ("permute_dims", {"axes": (0, 2, 1)}, "y.mT", y.transpose(0, 2, 1)),
        ("permute_dims", {"axes": (1, 0)}, "y.transpose([1, 0])", None),
        # NumPy's default axes written out, a form the frontend unwraps (a method that took
        # x.transpose(None) for a one-axis permutation, a held-out plant, went unseen).
        ("transpose", {"none": True}, "y.transpose(None)", y.T),
        ("transpose", {"none": False}, "y.transpose()", y.T),
    ]:
        evaluate, render = primitives.get(name).spelled("methods")
        assert render(["y"], attrs) == text
        z = y if expected is not None else y[0]
        expected = z.transpose(1, 0) if expected is None else expected
        np.testing.assert_array_equal(evaluate(np, [z], attrs), expected)
        traced = compiler.jit(lambda v, _e=evaluate, _a=attrs: _e(np, [v], _a))
        np.testing.assert_array_equal(traced(z, target="cpu-loops@O0"), expected)
    greater_equal = primitives.get("greater_equal")
    assert greater_equal.render(["a", "b"], {}) == "a >= b"
    assert greater_equal.spelled("numpy")[1](["a", "b"], {}) == "xp.greater_equal(a, b)"
    x = np.array([1.0, np.nan, 3.0])
    for spelling in primitives.SPELLINGS:
        got = greater_equal.spelled(spelling)[0](np, [x, 2.0], {})
        np.testing.assert_array_equal(got, x >= 2.0)
    with pytest.raises(ValueError, match="unknown spelling"):
        greater_equal.spelled("fortran")


def _entry(**changes):
    """A copy of ``add``'s fields with ``changes``, under a name the table does not have."""
    import dataclasses

    from compiler import primitives

    fields = {f.name: getattr(primitives.get("add"), f.name) for f in dataclasses.fields(
        primitives.Primitive)}  # fmt: skip
    return {**fields, "name": "toy_add", **changes}


@pytest.mark.parametrize(
    "changes, message",
    [
        # A comparison's Python operator and MLIR predicate swapped (a mutant the fuzz sessions
        # met only as a crash of their generator, counted as a harness error).
        ({"render": lambda a, attrs: f"{a[0]} ole {a[1]}"}, "not a Python expression"),
        ({"method": lambda a, attrs: f"{a[0]}.("}, "methods form"),
        ({"arity": len}, "arity must be a non-negative int"),  # two arguments swapped
        ({"arity": True}, "arity must be a non-negative int"),
        ({"cost": 0}, "cost must be a positive int"),
        ({"infer": 2}, "infer must be callable"),
        ({"attrs": {"axis": -1}}, "attrs must map keyword names to Attr"),
        ({"consts": "yes"}, "consts must be a bool"),
        ({"result_range": "bounded,positive"}, "result_range"),
        ({"keeps": "value"}, "keeps must be one of"),
        ({"call": "np.add"}, "call must name a NumPy function"),
        ({"name": "toy add"}, "must be an identifier"),
        ({"refused": {"where": True}}, "refused must map keywords"),  # values: a tuple
    ],
)
def test_a_malformed_table_entry_is_refused_when_built(changes, message) -> None:
    """Every layer trusts the table: a malformed entry is refused when the table is built (so
    a broken compiler does not import, and says which entry), not met later as a crash in
    whichever reader touches the bad field first."""
    from compiler import primitives
    from compiler.primitives import scalar

    assert primitives.Primitive(**_entry()).name == "toy_add"  # the unchanged copy is fine
    with pytest.raises((ValueError, TypeError), match=message):
        primitives.Primitive(**_entry(**changes))
    assert "toy_add" not in primitives.PRIMITIVES
    with pytest.raises(ValueError, match="predicate pair"):
        scalar.predicate("<=", "sle")
    with pytest.raises(ValueError, match="predicate pair"):
        scalar.predicate("ole", "ule")  # int32 compares signed


@pytest.mark.parametrize("spelling", ["array-api", "numpy", "methods"])
def test_the_spelling_is_how_the_compiler_is_called(monkeypatch, spelling) -> None:
    """The "numpy" spelling reaches the traced tensor's ufunc dispatch, "methods" its methods,
    the default its operators and namespace: a dispatch table that lost ``np.greater_equal`` is
    seen only by the first, a broken ``Tensor.sum`` only by the second."""
    import compiler
    from compiler import UnsupportedFeature
    from compiler.frontend import tensor
    from harness.case import Case
    from strategies.model import ProgramBuilder

    real = tensor._ufuncs

    def lost() -> dict:
        table = dict(real())
        del table["greater_equal"]
        return table

    def no_sum(self, *args, **kwargs):
        raise UnsupportedFeature("a planted Tensor.sum")

    monkeypatch.setattr(tensor, "_ufuncs", lost)
    monkeypatch.setattr(tensor.Tensor, "sum", no_sum)
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    chosen = b.node("where", b.node("greater_equal", x, 0.5), x, 0.0)
    program = b.build(b.node("sum", chosen, axis=0))
    case = Case(program, [np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)])
    case = case.respelled(spelling)
    assert case.spelling == spelling
    expected = np.where(case.inputs[0] >= 0.5, case.inputs[0], np.float32(0.0)).sum(axis=0)
    np.testing.assert_array_equal(case.function(np)(*case.inputs), expected)
    traced = compiler.jit(case.traced_function())
    if spelling == "array-api":
        traced.trace(*case.inputs)
    else:
        with pytest.raises(
            UnsupportedFeature, match={"numpy": "greater_equal"}.get(spelling, "sum")
        ):
            traced.trace(*case.inputs)
    assert case.respelled("array-api").extra == {}  # the default is not stored


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench").glob("*.py")))
def test_every_bench_script_still_imports(script: str) -> None:
    """The benches are run by hand, not by the suite: two of them had stopped importing after
    modules moved. ``--help`` imports everything and exits before measuring."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "HARNESS_PLUGINS"}  # the toys' fixture
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--help"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
