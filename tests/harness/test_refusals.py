"""What the compiler refuses, and how: an error must be an instance of NumPy's class (a caller's
``except IndexError`` written for NumPy must catch it), and a limitation it declares (arithmetic
on booleans, ``x[True]``) is drawn wherever its rules take it after all, so that a rule that let
one through to a wrong answer gets judged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planted_reproducer import json_with

from harness.oracles.error_path import catchable_as, rejection_matches, wrong_error
from harness.run.references import Reference
from harness.run.task import BackendResult
from harness.run.worker import error_classes, failure
from harness.selftest import Mutation
from strategies.model import VIOLATIONS, ProgramBuilder, Ref


class _ValueErrorOnly(ValueError):
    """An index error that is no IndexError (what a compiler's InvalidIndex once was)."""


_ValueErrorOnly.__name__ = "InvalidIndex"  # the name the real one bears


def test_an_error_is_judged_by_the_classes_it_is_an_instance_of() -> None:
    import compiler

    with pytest.raises(IndexError) as info:
        compiler.jit(lambda x: x[5])(np.zeros(3, np.float32))
    raised = failure("cpu-loops@O0", info.value)
    assert raised.error_type == "InvalidIndex"
    assert {"IndexError", "ValueError"} <= set(raised.error_classes)
    numpy = Reference("numpy", error_type="IndexError")
    assert wrong_error(numpy, raised) is None
    # The same name, but a ValueError alone: NumPy's ``except IndexError`` would not catch it.
    lookalike = failure("cpu-loops@O0", _ValueErrorOnly("index 5 is out of bounds"))
    assert lookalike.error_type == "InvalidIndex"
    assert error_classes(_ValueErrorOnly()) == ("InvalidIndex", "ValueError")
    assert wrong_error(numpy, lookalike) == (
        "compiler raised InvalidIndex (a ValueError), NumPy raised IndexError"
    )
    # NumPy's own subclasses stand for their standard bases: an AxisError is a ValueError too.
    axis = BackendResult("cpu-loops@O0", "rejected", error_type="ValueError")
    assert rejection_matches("AxisError", axis) and not rejection_matches("IndexError", axis)
    assert catchable_as(axis) == {"ValueError"}  # (no classes recorded: its name's bases)
    unrecorded = BackendResult("cpu-loops@O0", "rejected", error_type="InvalidIndex")
    assert rejection_matches("IndexError", unrecorded)


def test_violations_numpy_rejects_document_numpys_class() -> None:
    """The errors a violation documents are what its reproducer's ``except`` catches, so they
    are NumPy's class wherever NumPy rejects it (an out-of-range index: IndexError alone)."""
    for name in ("index_out_of_range", "too_many_indices", "two_ellipses"):
        assert VIOLATIONS[name].errors == (IndexError,)
    for name, violation in VIOLATIONS.items():
        if violation.numpy_rejects:
            assert violation.errors, name
            assert NotImplementedError not in violation.errors, name


def test_booleans_meet_the_ops_the_compiler_computes_on_them() -> None:
    """Arithmetic on booleans is a documented limitation (the model refuses to build it, as the
    compiler refuses to trace it), but where the compiler's rule takes booleans (``x / y`` of
    two, float64) the op is drawn on them, and a focus item asks for it."""
    from hypothesis import HealthCheck, find, settings

    from harness.session.focus import focus_items
    from strategies import programs
    from strategies.gen.state import takes_bool

    assert takes_bool("divide") and not takes_bool("maximum") and not takes_bool("add")
    assert ("divide", "bool") in focus_items() and ("maximum", "bool") not in focus_items()
    b = ProgramBuilder()
    x, y = b.input((2,), "bool"), b.input((2,), "bool")
    with pytest.raises(NotImplementedError):
        b.node("maximum", x, y)
    assert b.node("divide", x, y) is not None

    def divides_booleans(program) -> bool:  # (a random one: the focus item divides two)
        return any(
            n.op == "divide"
            and any(isinstance(a, Ref) and program.type_of(a).dtype == "bool" for a in n.args)
            for n in program.nodes
        )

    quick = settings(database=None, max_examples=3000, suppress_health_check=list(HealthCheck))
    assert find(programs(), divides_booleans, settings=quick)


def test_a_true_in_a_key_is_refused_and_kept_by_the_model() -> None:
    """``x[True]`` (NumPy: a new axis of length one) is a documented limitation: the model
    refuses to build it here, and its codec keeps a True a True (not the int 1)."""
    from compiler import primitives
    from strategies.model.codec import decode_attr, encode_attr, normalize_attr

    b = ProgramBuilder()
    with pytest.raises(NotImplementedError):
        b.node("index", b.input((2, 3), "float32"), key=(True, slice(None)))
    spec = primitives.get("index").attrs["key"]
    key = normalize_attr(spec, (True, slice(None, None, -1)))
    assert key[0] is True
    assert decode_attr(spec, encode_attr(spec, key))[0] is True


_DRAWN_AND_JUDGED = """
import json
from hypothesis import HealthCheck, Phase, find, settings
from harness.run.runner import Runner
from harness.session.focus import focus_cases, focus_items

item = tuple(sys.argv[-1].split("|"))
assert item in focus_items(), "not a focus item: the compiler's rule refuses it"
quick = settings(database=None, max_examples=100, phases=[Phase.generate], deadline=None,
                 derandomize=True,
                 suppress_health_check=list(HealthCheck))
with Runner(None, use_jax=False) as runner:
    case = find(focus_cases(("cpu-loops@O0",), (item,)),
                lambda c: bool(runner.evaluate(c).findings), settings=quick)
    findings = runner.evaluate(case).findings
print(json.dumps([[f.kind, f.oracle, str(case.program)] for f in findings]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "mutation, item",
    [
        (
            Mutation(
                "bool-add-let-through",
                "primitives/results.py",
                "        if dtype == BOOL:\n            raise UnsupportedFeature("
                'f"{name} on boolean tensors")\n        if name == "power"',
                '        if dtype == BOOL and name != "add":\n'
                '            raise UnsupportedFeature(f"{name} on boolean tensors")\n'
                '        if name == "power"',
                "np.add of booleans taken: i1 addition, XOR for NumPy's OR",
            ),
            "add|bool",
        ),
        (
            Mutation(
                "bool-key-as-int",
                "primitives/rules.py",
                "        if isinstance(item, (bool, np.bool_)):",
                "        if isinstance(item, np.bool_):",
                "x[True] read as x[1] where NumPy adds an axis of length one",
            ),
            "index|key:bool:first",
        ),
    ],
    ids=["bool-add", "bool-key"],
)
def test_a_limitation_let_through_is_drawn_and_judged(
    tmp_path: Path, mutation: Mutation, item: str
) -> None:
    """A rule that takes what the compiler documents as refused (booleans added, a True in a
    key) makes its focus item, and a focused case finds the wrong answer."""
    script = _DRAWN_AND_JUDGED.replace("sys.argv[-1]", repr(item))
    findings = json_with(mutation, tmp_path, script)
    assert findings and findings[0][0] in ("mismatch", "wrong-shape", "wrong-error"), findings


def test_an_op_numpy_refuses_on_booleans_is_numpys_type_error() -> None:
    """``-x`` and ``x - y`` of booleans are NumPy's TypeError (``bool_operand``), whatever the
    compiler supports: its rule asks NumPy first, so a limitation never stands in for it."""
    import compiler
    from strategies.gen.invalid import _refused_on_bools

    assert {"negative", "subtract"} <= set(_refused_on_bools())
    assert VIOLATIONS["bool_operand"].errors == (TypeError,)
    flags = np.array([True, False])
    for fn in (lambda x: -x, lambda x: x - x, lambda x: np.negative(x)):
        with pytest.raises(TypeError):
            fn(flags)
        with pytest.raises(TypeError) as raised:
            compiler.jit(fn)(flags)
        assert not isinstance(raised.value, NotImplementedError)
