"""The program model: NumPy-exact type inference, refusal of inconsistent programs, JSON, hashing,
rewrites and the standalone reproducer."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from strategy_fixtures import fixed_program

from compiler import ops as cops
from compiler.primitives import SPELLINGS
from strategies import Const, Input, InvalidIndex, Program, ProgramBuilder, Ref, TensorType
from strategies.model import FORMAT_VERSION, Equation

#: sha256 of the canonical JSON of ``fixed_program()``: must never change across runs, processes
#: or machines. If the format changes on purpose, bump FORMAT_VERSION and update this literal.
FIXED_DIGEST = "ab2b598c0f272c4e6075cd1ee872d8142a995bedc78b8d8102e4a83d219bf6f1"


def _arrays(program: Program, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for inp in program.inputs:
        if inp.bound is not None:
            out.append(rng.integers(0, inp.bound, inp.shape).astype(np.int32))
        elif inp.dtype == "int32":
            out.append(rng.integers(-5, 6, inp.shape).astype(np.int32))
        else:
            out.append(rng.standard_normal(inp.shape).astype(inp.dtype))
    return out


def _single(op: str, *operands: Any, **attrs: Any) -> Program:
    """One node over inputs given as (shape, dtype) pairs; other operands are constants."""
    b = ProgramBuilder()
    args = [b.input(*o) if isinstance(o, tuple) else o for o in operands]
    out = b.node(op, *args, **attrs)
    if b.type_of(out).dtype == "bool" and op != "less":
        b.node("astype", out, dtype="int32")  # bool results only feed where/astype
    return b.build()


NUMPY_ONLY = False  # JAX turns int32 into float32 where NumPy gives float64

INFERENCE_CASES = [
    # NEP 50: Python scalars are weak, NumPy scalars strong.
    ("add", [((2, 3), "float32"), 2.0], {}),
    ("add", [((2, 3), "float32"), np.float64(2.0)], {}),
    ("multiply", [((2, 3), "int32"), 2.0], {}),
    ("add", [((2, 3), "int32"), 2], {}),
    ("subtract", [3, ((2, 3), "int32")], {}),
    ("divide", [((3,), "int32"), ((3,), "int32")], {}, NUMPY_ONLY),
    ("add", [((3,), "int32"), ((3,), "float32")], {}, NUMPY_ONLY),
    ("power", [((2, 3), "float32"), 2], {}),
    ("exp", [((4,), "int32")], {}, NUMPY_ONLY),
    ("maximum", [((2, 1, 3), "float32"), ((4, 1), "float64")], {}),
    ("greater_equal", [((2, 3), "float32"), 0.5], {}),
    ("unary_minus", [((2,), "int32")], {}),
    # matmul: 2-D, 1-D on either side, both 1-D, broadcast batch dimensions.
    ("matmul", [((2, 3), "float32"), ((3, 4), "float32")], {}),
    ("matmul", [((3,), "float32"), ((2, 3, 4), "float32")], {}),
    ("matmul", [((2, 5, 3), "float64"), ((3,), "float32")], {}),
    ("matmul", [((3,), "int32"), ((3,), "int32")], {}),
    ("matmul", [((2, 1, 5, 3), "float32"), ((4, 3, 6), "float32")], {}),
    # reductions
    ("sum", [((2, 3, 4), "float32")], {"axis": (0, -1), "keepdims": True}),
    ("max", [((2, 3, 4), "int32")], {"axis": -2}),
    ("mean", [((2, 3), "int32")], {"axis": None}, NUMPY_ONLY),
    ("var", [((2, 3), "float32")], {"axis": 1, "keepdims": True}),
    # layout
    ("reshape", [((2, 3, 4), "float32")], {"shape": (4, -1)}),
    ("permute_dims", [((2, 3, 4), "float32")], {"axes": (2, 0, 1)}),
    ("transpose", [((2, 3), "int32")], {}),
    ("index", [((5, 6, 7), "float32")], {"key": (-1, Ellipsis, None, slice(1, None, 3))}),
    ("index", [((5, 6), "float32")], {"key": (slice(-4, -1), 2)}),
    ("astype", [((2, 3), "float32")], {"dtype": "int32"}),
    # composites: NumPy float64 constants inside promote float32 results
    ("gelu", [((2, 3), "float32")], {}),
    ("softmax", [((2, 3), "float32")], {"axis": 0}),
    ("layer_norm", [((2, 3), "float32"), ((3,), "float32"), ((3,), "float32")], {}),
    ("linear", [((2, 3), "float32"), ((3, 5), "float32"), ((5,), "float32")], {}),
    (
        "attention",
        [
            ((3, 4), "float32"),
            ((4, 12), "float32"),
            ((12,), "float32"),
            ((4, 4), "float32"),
            ((4,), "float32"),
        ],
        {"heads": 2},
    ),
    (
        "feedforward",
        [
            ((3, 4), "float64"),
            ((4,), "float64"),
            ((4,), "float64"),
            ((4, 5), "float64"),
            ((5,), "float64"),
            ((5, 4), "float64"),
            ((4,), "float64"),
        ],
        {},
    ),
]


@pytest.mark.parametrize("case", INFERENCE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}"[:60])
def test_inferred_type_matches_numpy_and_jax(case: tuple[Any, ...]) -> None:
    import jax
    import jax.numpy as jnp

    op, operands, attrs, *flags = case
    program = _single(op, *operands, **attrs)
    arrays = _arrays(program)
    with np.errstate(all="ignore"):
        result = np.asarray(program.as_function()(*arrays))
    assert (result.shape, result.dtype.name) == (
        program.output_type.shape,
        program.output_type.dtype,
    )
    if flags != [NUMPY_ONLY]:
        out = jax.jit(program.as_function(jnp))(*arrays)
        assert (out.shape, out.dtype.name) == (result.shape, result.dtype.name)


def test_gather_and_causal_mask() -> None:
    b = ProgramBuilder()
    table = b.input((4, 3), "float32")
    ids = b.input((2, 5), "int32", bound=4)
    g = b.node("gather", table, ids)
    rows = b.node("index", g, key=(Ellipsis, None, slice(None)))
    mask = b.node("causal_mask", size=3, dtype="float64")
    program = b.build(b.node("add", rows, mask))
    assert program.output_type == TensorType((2, 5, 3, 3), "float64")
    arrays = _arrays(program)
    out = program.as_function()(*arrays)
    expected = arrays[0][arrays[1]][..., None, :] + cops.causal_mask(3, np.float64)
    np.testing.assert_array_equal(out, expected)


def _raises(build: Any, error: type[BaseException] | tuple[type[BaseException], ...]) -> None:
    with pytest.raises(error):
        build()


REJECTED = {
    "matmul contraction": lambda: _single("matmul", ((2, 3), "float32"), ((4, 5), "float32")),
    "matmul 0-d": lambda: _single("matmul", ((), "float32"), ((3,), "float32")),
    "broadcast": lambda: _single("add", ((2, 3), "float32"), ((4,), "float32")),
    "reshape size": lambda: _single("reshape", ((2, 3), "float32"), shape=(4, 2)),
    "reshape two -1": lambda: _single("reshape", ((2, 3), "float32"), shape=(-1, -1)),
    "not a permutation": lambda: _single("permute_dims", ((2, 3), "float32"), axes=(0, 0)),
    "axis out of range": lambda: _single("sum", ((2, 3), "float32"), axis=2),
    "repeated axis": lambda: _single("sum", ((2, 3), "float32"), axis=(1, -1)),
    "index out of range": lambda: _single("index", ((2, 3), "float32"), key=(2,)),
    "too many indices": lambda: _single("index", ((2,), "float32"), key=(0, 0)),
    "empty slice": lambda: _single("index", ((2, 3), "float32"), key=(slice(2, 1),)),
    "int64 result": lambda: _single("sum", ((2, 3), "int32")),
    "int64 input": lambda: _single("exp", ((2, 3), "int64")),
    "zero-size input": lambda: _single("exp", ((0, 3), "float32")),
    "const in maximum": lambda: _single("maximum", ((2,), "float32"), 1.0),
    "const only": lambda: _single("add", 1.0, 2.0),
    "nonfinite const": lambda: _single("add", ((2,), "float32"), float("inf")),
    "gelu of int": lambda: _single("gelu", ((2,), "int32")),
    "heads": lambda: _single(
        "attention",
        ((3, 4), "float32"),
        ((4, 12), "float32"),
        ((12,), "float32"),
        ((4, 4), "float32"),
        ((4,), "float32"),
        heads=3,
    ),
    "unknown attribute": lambda: _single("exp", ((2,), "float32"), axis=0),
    "missing attribute": lambda: _single("reshape", ((2,), "float32")),
    "unknown op": lambda: _single("cumsum", ((2,), "float32")),
    "bool output": lambda: _single("less", ((2,), "float32"), 0.0),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_inconsistent_nodes_are_refused(name: str) -> None:
    # NumPy's own error (IndexError for an index out of range), or NotImplementedError: a
    # program NumPy accepts but the compiler declares unsupported (a limitation).
    _raises(REJECTED[name], (ValueError, TypeError, IndexError, NotImplementedError))


def test_types_are_numpys_even_where_the_compilers_rule_disagrees(monkeypatch) -> None:
    """A compiler whose result rule wrongly rejects a valid program, or crashes on it, is still
    handed it (the oracles judge the rejection); a wrongly typed rule does not change the
    program's types."""
    import dataclasses

    from compiler import primitives

    def narrow(operands, attrs):
        raise TypeError("planted: sum rejects everything")

    def wrong(operands, attrs):
        return primitives.rules.ArrayType((7,), np.dtype("float64"))

    def crashes(operands, attrs):  # a rule that fails with no rejection at all (a mutant's)
        return "sum".shape

    for rule in (narrow, wrong, crashes):
        planted = dataclasses.replace(primitives.get("sum"), infer=rule)
        monkeypatch.setitem(primitives.PRIMITIVES, "sum", planted)
        b = ProgramBuilder()
        x = b.input((2, 3), "float32")
        program = b.build(b.node("sum", x, axis=1))
        assert program.output_type == TensorType((2,), "float32")


def test_a_composite_whose_definition_fails_is_typed_by_its_contract(monkeypatch) -> None:
    """A composite's NumPy evaluation is its shared definition, itself under test: where it
    fails on shapes its result rule accepts, the rule types the node (the spec oracle judges
    the definition); an ordinary op's NumPy rejection still stands."""
    import dataclasses

    from compiler import primitives

    def broken(xp, args, attrs):
        raise ValueError("planted: the definition reshapes wrongly")

    b = ProgramBuilder()
    healthy = b.build(b.node("gelu", b.input((2, 3), "float32"))).output_type
    for name in ("gelu", "exp"):
        planted = dataclasses.replace(primitives.get(name), evaluate=broken)
        monkeypatch.setitem(primitives.PRIMITIVES, name, planted)
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(b.node("gelu", x))
    assert program.output_type == healthy
    with pytest.raises(ValueError, match="planted"):
        b.node("exp", x)


def test_a_composite_whose_shared_definition_fails_everywhere_is_still_made(monkeypatch) -> None:
    """A broken ``compiler/ops.py`` composite fails NumPy's evaluation and the compiler's result
    rule alike (the rule asks the definition for the dtype): the rule says so with a
    ``DefinitionError`` carrying the contract's shape, and the model still makes the program
    (it stopped generation, a harness error instead of the spec oracle's finding)."""
    from compiler import primitives

    def broken(*args, **kwargs):
        raise ValueError("planted: axis 3 is out of bounds")

    monkeypatch.setattr(cops, "attention", broken)
    b = ProgramBuilder()
    x = b.input((4, 6), "float32")
    rest = [b.input(s, "float32") for s in [(6, 18), (18,), (6, 6), (6,)]]
    program = b.build(b.node("attention", x, *rest, heads=3))
    assert program.output_type == TensorType((4, 6), "float32")
    types = [i.type for i in program.inputs]
    with pytest.raises(primitives.DefinitionError, match="planted") as raised:
        primitives.get("attention").result(types, {"heads": 3})
    assert raised.value.shape == (4, 6) and raised.value.dtype == "float32"
    with pytest.raises(ValueError, match="not divisible"):  # a contract violation stays one
        b.node("attention", x, *rest, heads=4)


def test_bool_feeds_where_astype_views_and_arithmetic() -> None:
    """A boolean feeds a where, a cast, a view, and arithmetic as NumPy defines it: with a float
    it is that float's (the compiler's rule takes it); of booleans alone, the compiler's
    documented limitation (NotImplementedError, which refuses the program); no gather's ids."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    cond = b.node("greater", x, 0.0)
    assert b.nodes[b.node("add", cond, x).index].type.dtype == "float32"
    with pytest.raises(NotImplementedError):
        b.node("add", cond, cond)
    b.node("permute_dims", cond, axes=(1, 0))
    with pytest.raises(TypeError):
        b.node("gather", x, cond)
    b.node("where", x, x, x)  # a numeric condition: NumPy selects where it is nonzero
    with pytest.raises(TypeError):
        b.node("where", 1.0, x, x)  # but a tensor one
    b.node("where", cond, x, b.node("astype", cond, dtype="float32"))


def test_gather_needs_bounded_ids_input() -> None:
    b = ProgramBuilder()
    table = b.input((4, 3), "float32")
    free = b.input((5,), "int32")
    too_big = b.input((5,), "int32", bound=9)
    with pytest.raises(TypeError):
        b.node("gather", table, free)
    with pytest.raises(ValueError):
        b.node("gather", table, too_big)


def test_index_errors_are_index_and_value_errors() -> None:
    with pytest.raises(IndexError):
        _single("index", ((2, 3), "float32"), key=(5,))
    assert issubclass(InvalidIndex, ValueError)


def test_output_must_read_an_input() -> None:
    b = ProgramBuilder()
    b.input((3,), "float32")
    b.node("causal_mask", size=3, dtype="float32")
    with pytest.raises(ValueError):
        b.build()


def test_direct_construction_is_checked() -> None:
    program = fixed_program()
    wrong = Equation("exp", (Ref("input", 0),), {}, TensorType((2, 3), "float64"))
    with pytest.raises(ValueError):
        Program(program.inputs, (wrong,), Ref("node", 0))
    same = Program(program.inputs, program.nodes, program.output)
    assert same == program


# --------------------------------------------------------------------------------------------
# JSON and hashing


def test_json_round_trip_is_exact() -> None:
    program = fixed_program()
    text = program.to_json()
    again = Program.from_json(text)
    assert again == program
    assert again.to_json() == text
    assert Program.from_json(program.to_json(indent=2)) == program
    data = json.loads(text)
    assert data["version"] == FORMAT_VERSION


def test_hash_is_a_fixed_literal() -> None:
    assert fixed_program().digest() == FIXED_DIGEST


def test_a_form_attribute_is_data_only_where_it_is_not_the_default() -> None:
    """``x.transpose(None)`` is kept through the JSON round trip, and a transpose written the
    default way has the digest it had before the form existed."""

    def transposed(**attrs: Any) -> Program:
        b = ProgramBuilder()
        return b.build(b.node("transpose", b.input((2, 3), "float32"), **attrs))

    spelled = transposed(none=True)
    again = Program.from_json(spelled.to_json())
    assert again.nodes[0].attrs["none"] is True and again.digest() == spelled.digest()
    assert "none" not in json.dumps(transposed(none=False).to_dict())
    assert transposed(none=False).digest() == transposed().digest() != spelled.digest()


def test_hash_is_stable_across_processes() -> None:
    code = (
        "import sys; import strategies as s; print(s.Program.from_json(sys.stdin.read()).digest())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=fixed_program().to_json(),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": "", "PYTHONPATH": ":".join(sys.path)},
    )
    assert result.stdout.strip() == FIXED_DIGEST


def test_hash_distinguishes_weak_from_strong_and_int_from_float() -> None:
    weak_float = _single("add", ((2,), "float32"), 2.0).digest()
    weak_int = _single("add", ((2,), "float32"), 2).digest()
    strong = _single("add", ((2,), "float32"), np.float32(2.0)).digest()
    assert len({weak_float, weak_int, strong}) == 3


def test_a_constant_may_be_a_numpy_scalar_of_a_dtype_no_array_has() -> None:
    """``x * np.uint8(3)`` of float32 is float32 in NumPy: a constant of an integer dtype no
    array has, holding its value, evaluates and round-trips as one; out of its range or not an
    int, it is refused."""
    from strategies.model import Const, Program

    program = _single("multiply", ((2,), "float32"), np.uint8(200))
    (node,) = program.nodes
    assert node.args[1] == Const(200, "uint8") and program.output_type.dtype == "float32"
    assert Program.from_dict(program.to_dict()) == program
    x = np.array([1.5, -2.0], np.float32)
    out = program.as_function(np)(x)
    assert out.dtype == np.float32 and out.tolist() == [300.0, -400.0]
    with pytest.raises(ValueError):
        Const(-1, "uint8")
    with pytest.raises(ValueError):
        Const(2.5, "int16")
    with pytest.raises(TypeError):
        Const(2, "uint64")


def test_future_and_foreign_formats_are_refused() -> None:
    data = fixed_program().to_dict()
    with pytest.raises(ValueError, match="newer"):
        Program.from_dict({**data, "version": FORMAT_VERSION + 1})
    with pytest.raises(ValueError):
        Program.from_dict({**data, "version": "1"})
    with pytest.raises(ValueError):
        Program.from_dict({**data, "format": "something-else"})


def test_malformed_json_is_refused_with_value_error() -> None:
    data = fixed_program().to_dict()
    del data["nodes"][0]["op"]
    with pytest.raises(ValueError, match="malformed"):
        Program.from_dict(data)


def test_json_with_an_inconsistent_node_is_refused() -> None:
    data = fixed_program().to_dict()
    data["nodes"][2]["args"][1] = {"input": 0}  # matmul of (2, 3) with (2, 3)
    with pytest.raises(ValueError):
        Program.from_dict(data)


# --------------------------------------------------------------------------------------------
# Evaluation, printing and rewrites


def test_as_function_matches_hand_written_numpy() -> None:
    program = fixed_program()
    x, w, ids = _arrays(program)
    m = (x.T.T) @ w
    g = cops.gelu(m)
    s = np.where(g > 0.5, g, m)[:, 1::2, None]
    expected = 3 * np.sum(s[ids], axis=(-1,), keepdims=True)
    np.testing.assert_array_equal(program.as_function()(x, w, ids), expected)
    np.testing.assert_array_equal(program.as_function(np)(x, w, ids), expected)
    with pytest.raises(TypeError):
        program.as_function()(x, w)


@pytest.mark.parametrize("with_values", [False, True])
def test_reproducer_runs_with_numpy(with_values: bool) -> None:
    program = fixed_program()
    values = _arrays(program, seed=3) if with_values else None
    source = program.to_python(values, check_compiler=False)
    namespace: dict[str, Any] = {"__name__": "reproducer"}
    exec(compile(source, "<reproducer>", "exec"), namespace)
    expected = np.asarray(namespace["expected"])
    assert (expected.shape, expected.dtype.name) == (
        program.output_type.shape,
        program.output_type.dtype,
    )
    if values is not None:
        np.testing.assert_array_equal(expected, program.as_function()(*values))


def test_reproducer_embeds_exact_values_including_nonfinite() -> None:
    program = _single("add", ((2, 2), "float32"), 1.0)
    values = [np.array([[np.nan, np.inf], [-np.inf, 1 / 3]], dtype=np.float32)]
    namespace: dict[str, Any] = {}
    exec(program.to_python(values, check_compiler=False), namespace)
    np.testing.assert_array_equal(namespace["x0"], values[0])


def test_reproducer_runs_through_the_compiler() -> None:
    compiler = pytest.importorskip("compiler")
    if not hasattr(compiler, "jit"):
        pytest.skip("compiler.jit is not available yet")
    source = fixed_program().to_python(_arrays(fixed_program()))
    assert "compiler.jit(program)" in source
    exec(compile(source, "<reproducer>", "exec"), {"__name__": "reproducer"})


def test_str_lists_every_node() -> None:
    text = str(fixed_program())
    assert "v10 = 3 * v9" in text and "x2: int32[5] in [0, 2)" in text


def test_rewrites() -> None:
    program = fixed_program()
    # v8 is dead: dead-code elimination drops it and keeps the result.
    live = program.dead_code_eliminated()
    assert len(live) == len(program) - 1 and "add" not in live.ops
    arrays = _arrays(program)
    np.testing.assert_array_equal(live.as_function()(*arrays), program.as_function()(*arrays))
    # The permute/.T pair is the identity: reading x0 directly gives the same program.
    shorter = live.replace_node(1, Ref("input", 0))
    assert shorter.ops[:2] == ("matmul", "gelu") and len(shorter) == len(live) - 2
    np.testing.assert_array_equal(shorter.as_function()(*arrays), live.as_function()(*arrays))
    # A subprogram keeps the inputs; dropping unused ones reports which survived.
    sub = program.subprogram(2)
    assert sub.output_type == TensorType((2, 4), "float32") and len(sub.inputs) == 3
    dropped, kept = sub.drop_unused_inputs()
    assert kept == (0, 1) and len(dropped.inputs) == 2
    # Replacing with a value of another shape is re-checked.
    with pytest.raises(TypeError):
        program.replace_node(2, Ref("input", 2))  # int32 ids into gelu
    with pytest.raises(ValueError):
        program.replace_node(2, Ref("node", 5))


def test_without_node_raises_when_no_argument_fits() -> None:
    b = ProgramBuilder()
    s = b.node("sum", b.input((2, 3), "float32"), axis=0)  # (3,)
    m = b.node("matmul", s, b.input((3, 5), "float32"))  # (5,)
    b.node("add", m, b.input((2, 5), "float32"))
    program = b.build()
    # Neither (3,) nor (3, 5) broadcasts with (2, 5) in place of the matmul.
    with pytest.raises(ValueError):
        program.without_node(m.index)
    # The sum can go: the matmul then sees the (2, 3) input, (2, 5) + (2, 5) is fine.
    assert program.without_node(s.index).ops == ("matmul", "add")


def test_constants_and_inputs_are_plain_data() -> None:
    assert Const(2.0).py() == 2.0 and type(Const(2.0).py()) is float
    assert Const(2, "int32").py().dtype == np.int32
    with pytest.raises(TypeError):
        Const(True)
    with pytest.raises(TypeError):
        Const(2.5, "int32")
    assert Input((2,), "float32").type == TensorType((2,), "float32")


def test_a_rule_that_crashes_where_numpy_rejects_gives_numpys_error(monkeypatch) -> None:
    """Where the shared definition rejects a composite's shapes and the compiler's result rule
    crashes on them (an IndexError: mutant m05 indexed ``left[2]`` in the matmul shape rule),
    the model raises NumPy's error: the crash is the compiler's, for the oracles to see on
    valid programs, not the reason the probe of a focus got (it ended the session)."""
    from compiler import primitives

    def crashing(*args, **kwargs):
        raise IndexError("planted: tuple index out of range")

    planted = dataclasses.replace(primitives.get("linear"), infer=crashing)
    monkeypatch.setitem(primitives.PRIMITIVES, "linear", planted)
    b = ProgramBuilder()
    x, w, bias = b.input((2, 3), "float32"), b.input((3, 3), "float32"), b.input((2,), "float32")
    with pytest.raises(ValueError, match="broadcast"):
        b.node("linear", x, w, bias)


def test_the_array_api_spelling_takes_pi_from_the_namespace(monkeypatch) -> None:
    """A weak ``math.pi`` is ``xp.pi`` in the "array-api" spelling, printed and evaluated (the
    compiler's traced namespace supplies it: a strong float64 ``pi`` there, promoting ``x *
    xp.pi`` of a float32, went unseen while programs wrote the literal); the other spellings
    keep the literal, so both forms are judged."""
    import math

    import compiler
    from compiler.frontend import tensor
    from strategies.model.evaluate import function
    from strategies.model.printing import function_source

    b = ProgramBuilder()
    program = b.build(b.node("multiply", b.input((3,), "float32"), Const(math.pi)))
    assert "x0 * xp.pi" in "\n".join(function_source(program, spelling="array-api"))
    for spelling in ("methods", "numpy"):
        assert "3.141592653589793" in "\n".join(function_source(program, spelling=spelling))
    x = np.ones(3, np.float32)
    assert function(program)(x).dtype == np.float32
    assert compiler.jit(function(program))(x).dtype == np.float32
    monkeypatch.setattr(tensor.Namespace, "pi", np.float64(math.pi))  # strong: NEP 50 promotes
    assert compiler.jit(function(program))(x).dtype == np.float64
    assert compiler.jit(function(program, spelling="methods"))(x).dtype == np.float32


def test_the_array_api_spelling_writes_ddof_as_the_standards_correction(monkeypatch) -> None:
    """The array API standard names ``var``'s and ``std``'s ``ddof`` ``correction`` (NumPy 2
    takes both): the array-api spelling writes that, the numpy spelling and the methods
    ``ddof``, so the spelling oracle's retraces take the frontend down both of its paths. A
    frontend that read ``correction`` as 0 is wrong in the array-api spelling alone."""
    import compiler
    from compiler.frontend import lang
    from strategies.model.evaluate import function
    from strategies.model.printing import function_source

    b = ProgramBuilder()
    program = b.build(b.node("std", b.node("var", b.input((3, 4), "float32"), axis=1, ddof=1)))
    texts = {s: "\n".join(function_source(program, spelling=s)) for s in SPELLINGS}
    assert "xp.var(x0, axis=1, correction=1)" in texts["array-api"]
    assert "xp.var(x0, axis=1, ddof=1)" in texts["numpy"]
    assert "x0.var(axis=1, ddof=1)" in texts["methods"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 2
    expected = np.std(np.var(x, axis=1, ddof=1))
    for spelling in SPELLINGS:
        assert function(program, spelling=spelling)(x) == expected
        assert compiler.jit(function(program, spelling=spelling))(x) == pytest.approx(expected)

    degrees = lang._degrees_of_freedom

    def correction_ignored(name: str, kwargs: dict) -> Any:
        kwargs.pop("correction", None)
        return degrees(name, kwargs)

    monkeypatch.setattr(lang, "_degrees_of_freedom", correction_ignored)
    ddof0 = np.std(np.var(x, axis=1))
    assert compiler.jit(function(program, spelling="array-api"))(x) == pytest.approx(ddof0)
    assert compiler.jit(function(program, spelling="methods"))(x) == pytest.approx(expected)
