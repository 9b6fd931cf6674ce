"""The @jit layer as a fuzzing target: one jitted function called in sequence, each call judged.

Fast: the sequence model (argument trees, JSON, smaller sequences), the strategy (every drawn
sequence is valid and its function is each call's own program), the oracle on the real compiler
(no finding) and on recorded stale answers, the reproducer (passes on the real compiler).
Slow: bugs planted in a scratch copy of the compiler's specialization cache (the key without
dtypes, without static values, without the argument tree; a captured array copied at trace
time) are found by the oracle, minimized to at most 3 calls with a reproducer that fails there
and passes on the real compiler, and found by a default fuzz session within 60 seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from planted_reproducer import last_line_with

from harness.case import Case, decode_array, encode_array
from harness.oracles.sequence import CallOutcome, problems
from harness.report.reproducer import reproducer
from harness.run.worker import execute
from harness.selftest import MUTATIONS, apply, fuzz_command, scratch_environment
from harness.triage.minimize import generators
from strategies.gen.sequences import jit_sequences
from strategies.model import Const, ProgramBuilder
from strategies.model.sequence import (
    OUTPUT,
    OWN,
    Call,
    Hole,
    JitSequence,
    _decode_tree,
    _encode_tree,
    captured_values,
    fill,
    skeleton_text,
    tree_leaves,
    valid,
    view_shape,
)

BACKEND = "cpu-loops@O0"
JIT_MUTATIONS = [m for m in MUTATIONS if m.name.startswith("jit-")]


def _arrays(rng: np.random.Generator, *dtypes: str, shape=(3, 4)) -> tuple[np.ndarray, ...]:
    return tuple(np.round(rng.standard_normal(shape) * 4).astype(d) for d in dtypes)


def cache_sequence() -> JitSequence:
    """``f(x, y, *, scale, axis) = sum(x * scale + y, axis) + W`` (``W`` captured), and a second
    variant (its negation) for a dict argument; each call after the first changes one thing of
    the first: dtypes, a static value, the tree (so the variant), the captured values in place,
    an array passed twice."""
    b = ProgramBuilder()
    x, y = b.input((3, 4), "float32"), b.input((3, 4), "float32")
    scaled = b.node("multiply", x, Const(2.0))
    total = b.node("sum", b.node("add", scaled, y), axis=1)
    w = b.input((3,), "float32")
    base = b.build(b.node("add", total, w))
    other = ProgramBuilder.from_program(base)
    other.node("negative", base.output)
    holes = (Hole("scale", 0, "", 1), Hole("axis", 2, "axis"))
    rng = np.random.default_rng(0)
    first = {"scale": 2.0, "axis": 1}
    own = (OWN, OWN)

    def call(dtypes, statics, arrays, captured=None, skeleton=("*", "*"), variant=0, sources=own):
        return Call(
            variant, skeleton, dtypes, tuple(sorted(statics.items())), sources, arrays, captured
        )

    f32 = ("float32", "float32")
    a, b_ = _arrays(rng, "float32", "float32")
    calls = (
        call(f32, first, (a, b_), rng.standard_normal(3).astype("float32")),
        call(("float64", "float64"), first, _arrays(rng, "float64", "float64")),
        call(f32, {**first, "scale": 3.0}, _arrays(rng, "float32", "float32")),
        call(f32, first, _arrays(rng, "float32", "float32"), skeleton=({"b": "*", "a": "*"},),
             variant=1),  # built unsorted: jit flattens it by sorted keys
        call(f32, first, _arrays(rng, "float32", "float32"), rng.standard_normal(3).astype("f4")),
        call(f32, first, (_arrays(rng, "float32")[0], None), sources=(OWN, 0)),
    )  # fmt: skip
    return JitSequence((base, other.build()), holes, True, calls).validate()


def view_sequence(view: str = "first-row") -> JitSequence:
    """``f(x) = x * 2 + W - V`` on (3, 3), ``W`` captured and ``V`` (a view of ``W`` made once,
    outside the function: ``W[:1]``, ``W[..., :1]`` or ``W.T``) captured too; the second call
    writes new values into ``W``, which ``V`` sees."""
    b = ProgramBuilder()
    x = b.input((3, 3), "float32")
    w = b.input((3, 3), "float32")
    v = b.input(view_shape(view, (3, 3)), "float32")
    out = b.node("add", b.node("multiply", x, Const(2.0)), w)
    program = b.build(b.node("subtract", out, v))
    rng = np.random.default_rng(2)
    calls = tuple(
        Call(0, ("*",), ("float32",), (), (OWN,), _arrays(rng, "f4", shape=(3, 3)), captured)
        for captured in _arrays(rng, "f4", "f4", shape=(3, 3))
    )
    return JitSequence((program,), (Hole("scale", 0, "", 1),), True, calls, view).validate()


def feedback_sequence() -> JitSequence:
    """``f(x, y) = x * 0.5 + y`` on (3, 4): its output fed back in as ``x``."""
    b = ProgramBuilder()
    x, y = b.input((3, 4), "float32"), b.input((3, 4), "float32")
    program = b.build(b.node("add", b.node("multiply", x, Const(0.5)), y))
    rng = np.random.default_rng(1)
    first = Call(0, ("*", "*"), ("float32",) * 2, (), (OWN, OWN), _arrays(rng, "f4", "f4"))
    again = Call(0, ("*", "*"), ("float32",) * 2, (), (OUTPUT, OWN), (None, _arrays(rng, "f4")[0]))
    return JitSequence((program,), (Hole("scale", 0, "", 1),), False, (first, again)).validate()


# --------------------------------------------------------------------------------------------
# The model


def test_argument_trees_flatten_like_the_compiler() -> None:
    tree = ({"b": 2, "a": [1, None]}, (3,))
    assert tree_leaves(tree) == [1, 2, 3]
    assert skeleton_text(tree) == "({'a': [*, None], 'b': *}, (*,))"
    assert fill(({"b": "*", "a": ["*", None]}, ("*",)), [1, 2, 3]) == tree


@pytest.mark.parametrize("kind", ["positional", "tuple", "list", "dict", "none", "nested"])
def test_every_skeleton_holds_as_many_arrays_as_asked_in_order(kind: str) -> None:
    """A template of two feedforwards has 13 arrays: the dict skeleton had ten keys, the
    template's own first call did not build, and the generator's assertion stopped a session."""
    from strategies.gen.sequences import skeleton

    for count in range(1, 41):
        tree = skeleton(kind, count)
        leaves = list(range(count))
        assert tree_leaves(fill(tree, leaves)) == leaves, (kind, count)


def test_a_dict_keeps_the_order_it_was_built_in() -> None:
    """A dict argument is built in another order than sorted (as user code builds them): its
    leaves are still jit's (sorted keys), and the order survives canonical JSON (which sorts an
    object's keys) and the reproducer's source, so a flattening that walked the values in
    insertion order is caught and its finding replays."""
    from strategies.gen.sequences import skeleton

    tree = skeleton("dict", 3)
    assert list(tree[0]) == ["b", "c", "a"]
    filled = fill(tree, [1, 2, 3])
    assert list(filled[0].items()) == [("b", 2), ("c", 3), ("a", 1)]
    assert tree_leaves(filled) == [1, 2, 3]
    sequence = cache_sequence()
    data = json.loads(json.dumps(sequence.to_dict(encode_array), sort_keys=True))
    back = JitSequence.from_dict(data, decode_array)
    assert [list(c.skeleton[0]) for c in back.calls if isinstance(c.skeleton[0], dict)] == [
        ["b", "a"]
    ]
    old = {"dict": {"a": "*", "b": "*"}}  # a sorted dict stays an object (entries before)
    assert _encode_tree(_decode_tree(old, [100])) == old
    from harness.oracles.base import Finding

    case = Case.from_sequence(sequence, (BACKEND,))
    text = reproducer(case, Finding("mismatch", (BACKEND,), "jit-sequence", "call 3", case))
    assert "{'b': a3_1, 'a': a3_0}" in text, text


def shape_sequence() -> JitSequence:
    """``f(x) = x.sum(axis=0) * 2.0`` on a (2, 3) array, then on a (3, 2) one: the same size."""
    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    program = b.build(b.node("multiply", b.node("sum", x, axis=0), Const(2.0)))
    rng = np.random.default_rng(5)
    first = Call(0, ("*",), ("float32",), (), (OWN,), _arrays(rng, "f4", shape=(2, 3)))
    other = Call(
        0, ("*",), ("float32",), (), (OWN,), _arrays(rng, "f4", shape=(3, 2)), None,
        "shapes (3, 2)", ((3, 2),),
    )  # fmt: skip
    return JitSequence((program,), (), False, (first, other)).validate()


def test_a_call_in_other_shapes_is_its_own_program_and_stale_where_keyed_by_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call may pass its arrays in other shapes than the first (``Call.shapes``; the
    generator's ``shape`` change: two extents swapped, the size kept, or one grown): its
    program is typed by them, the JSON keeps them, and a specialization cache keyed by the
    arrays' sizes (a held-out plant: (3, 2) served (2, 3)'s kernel) is caught."""
    from collections import OrderedDict

    import compiler.api as api

    sequence = shape_sequence()
    assert sequence.program(1).output_type.shape == (2,)
    data = json.loads(json.dumps(sequence.to_dict(encode_array)))
    assert data["calls"][1]["shapes"] == [[3, 2]] and "shapes" not in data["calls"][0]
    assert JitSequence.from_dict(data, decode_array).calls[1].shapes == ((3, 2),)
    for bad in ([[3, 0]], [[3, 2], [3, 2]]):
        broken = json.loads(json.dumps(data))
        broken["calls"][1]["shapes"] = bad
        with pytest.raises(ValueError):
            JitSequence.from_dict(broken, decode_array)
    _, findings = _judged(sequence)
    assert not findings, [f.detail for f in findings]

    class BySize(OrderedDict):  # the plant: shapes in the key as element counts
        @staticmethod
        def _k(key):  # noqa: ANN001, ANN205
            if not (isinstance(key, tuple) and len(key) == 5):
                return key
            shapes = tuple((int(np.prod(s)), d) for s, d in key[2])
            return (key[0], key[1], shapes, *key[3:])

        def get(self, key, default=None):  # noqa: ANN001, ANN201
            return super().get(self._k(key), default)

        def __setitem__(self, key, value) -> None:  # noqa: ANN001
            super().__setitem__(self._k(key), value)

        def move_to_end(self, key, last=True) -> None:  # noqa: ANN001
            super().move_to_end(self._k(key), last)

    monkeypatch.setattr(api, "_CACHE", BySize())
    _, findings = _judged(sequence)
    assert findings and all("call 1" in f.detail for f in findings), [f.detail for f in findings]
    drawn: list[JitSequence] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(jit_sequences())
    def collect(sequence: JitSequence) -> None:
        drawn.append(sequence)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed(1)(collect)()
    changed = [(s, c) for s in drawn for c in s.calls if c.shapes]
    assert len(changed) >= 10, len(changed)
    sizes = [[int(np.prod(a.shape)) for a in c.arrays if a is not None] for _, c in changed]
    firsts = [
        [int(np.prod(a.shape)) for a in s.calls[0].arrays if a is not None] for s, _ in changed
    ]
    assert any(a == b for a, b in zip(sizes, firsts, strict=True)), "no size-keeping swap"


def test_a_sequence_round_trips_through_json() -> None:
    sequence = cache_sequence()
    data = json.loads(json.dumps(sequence.to_dict(encode_array)))
    back = JitSequence.from_dict(data, decode_array)
    assert back.to_dict(encode_array) == sequence.to_dict(encode_array)
    case = Case.from_dict(Case.from_sequence(sequence, (BACKEND,)).to_dict())
    assert case.sequence.to_dict(encode_array) == data
    assert case.program == sequence.program(0)


def test_a_sequence_with_a_bool_leaf_round_trips_and_its_copies_read_it() -> None:
    """A program's input may be bool, and its sequence's first call passes that leaf: the
    stored sequence was refused on reading ("a leaf dtype is one of ..."), which stopped a
    session with a workaround off (its cases are copies, which decode the sequence again) and
    would leave such a finding unreadable in the corpus."""
    from dataclasses import replace

    b = ProgramBuilder()
    x = b.input((3, 4), "bool")
    program = b.build(b.node("divide", Const(0.5), x))
    flags = np.arange(12).reshape(3, 4) % 3 == 0
    first = Call(0, ("*",), ("bool",), (), (OWN,), (flags,))
    again = Call(0, ("*",), ("bool",), (), (OWN,), (~flags,))
    sequence = JitSequence((program,), (), False, (first, again)).validate()
    data = json.loads(json.dumps(sequence.to_dict(encode_array)))
    assert JitSequence.from_dict(data, decode_array).to_dict(encode_array) == data
    case = Case.from_sequence(sequence, (BACKEND,))
    copy = replace(case, workarounds_off=("libm-calls-kept",))  # as a session's map makes it
    assert copy.sequence.to_dict(encode_array) == data
    assert Case.from_dict(case.to_dict()).sequence.calls[1].dtypes == ("bool",)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda d: d["calls"][0].update(variant=7),
        lambda d: d["calls"][1].update(dtypes=["float64"]),
        lambda d: d["calls"][0].update(sources=[OWN, 5]),
        lambda d: d["calls"][3].update(skeleton={"tuple": ["*", "*"]}),  # already variant 0
        lambda d: d["calls"][0].update(statics={"nope": 1}),
        lambda d: d["holes"][0].update(node=99),
        lambda d: d.update(calls=[]),
    ],
)
def test_a_malformed_sequence_is_a_value_error(corrupt) -> None:
    data = cache_sequence().to_dict(encode_array)
    corrupt(data)
    with pytest.raises(ValueError):
        JitSequence.from_dict(data, decode_array)


def test_keeping_calls_materializes_what_they_saw() -> None:
    sequence = feedback_sequence()
    (alone,) = sequence.keep([1]).calls
    assert alone.sources == (OWN, OWN)
    np.testing.assert_array_equal(alone.arrays[0], sequence.numpy_outputs()[0])
    captured = cache_sequence()
    kept = captured.keep([2, 4])  # call 2 saw call 0's captured values, call 4 its own
    assert kept.calls[0].captured is captured.calls[0].captured
    assert kept.calls[1].captured is captured.calls[4].captured
    assert all(valid(smaller) for _, smaller in captured.simpler() if "only" in _)


def test_a_sequence_loses_equations_but_keeps_its_static_arguments() -> None:
    """The minimizer shrinks the template's program too (a planted cache bug's sequence kept
    ``abs``, ``log`` and two products; now none, its function returning its argument): each
    equation bypassed in every variant, the equations a static argument sets kept (renumbered),
    variant 1 still extending variant 0."""
    sequence = cache_sequence()  # multiply(scale) -> add -> sum(axis) -> add W; variant 1 negates
    smaller = {d: s for d, s in sequence.simpler() if d.startswith("without equation")}
    assert set(smaller) == {"without equation 1 (add)", "without equation 3 (add)"}, set(smaller)
    for description, candidate in smaller.items():
        candidate.validate()
        assert [h.name for h in candidate.holes] == ["scale", "axis"]
        first = candidate.variants[0]
        assert first.nodes[candidate.holes[0].node].op == "multiply", description
        assert first.nodes[candidate.holes[1].node].op == "sum", description
        assert len(candidate.variants[1].nodes) == len(first.nodes) + 1
        assert len(first.nodes) == len(sequence.variants[0].nodes) - 1
    without_add = smaller["without equation 1 (add)"].variants[0]  # sum(x * scale, axis) + W
    assert [n.op for n in without_add.nodes] == ["multiply", "sum", "add"]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(jit_sequences())
def test_drawn_sequences_are_valid_and_their_function_is_each_calls_program(sequence) -> None:
    sequence.validate()
    assert len(sequence.calls) >= 1
    outputs = sequence.numpy_outputs()
    previous = None
    for index, expected in enumerate(outputs):
        inputs = sequence.inputs(index, previous)
        with np.errstate(all="ignore"):
            own = np.asarray(sequence.program(index).as_function(np)(*inputs))
        assert own.dtype == expected.dtype
        # (assert_array_equal takes bfloat16's nan for a number: widened, it is a nan)
        wide = np.float64 if own.dtype.name == "bfloat16" else own.dtype
        np.testing.assert_array_equal(own.astype(wide), expected.astype(wide))
        previous = expected


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(jit_sequences())
def test_every_drawn_change_of_values_changes_numpys_answer(sequence) -> None:
    """A captured array written anew must change the call's answer from every value it held
    before, and the repeat of the first call must answer differently from it: in a session a
    sequence over ``var`` of one element (0 whatever the captured array held) hid a cache that
    copied the captured array at trace time for 60 s."""
    outputs = sequence.numpy_outputs()
    first = sequence.calls[0]
    for index, call in enumerate(sequence.calls[1:], start=1):
        if OUTPUT in call.sources:
            continue
        fn = sequence.program(index).as_function(np)
        leaves = sequence.inputs(index)[: len(call.sources)]
        others = []
        if call.captured is not None:
            others += [
                [*leaves, *captured_values(sequence.view, c.captured)]
                for c in sequence.calls[:index]
                if c.captured is not None
            ]
        if call.note == "other values" and call.sources == first.sources:
            rest = sequence.inputs(index)[len(call.sources) :]
            others.append(sequence.inputs(0)[: len(first.sources)] + rest)
        for inputs in others:
            with np.errstate(all="ignore"):
                other = np.asarray(fn(*inputs))
            same = (
                other.shape == outputs[index].shape and other.tobytes() == outputs[index].tobytes()
            )
            assert not same, (index, call.note, sequence.variants[call.variant])


# --------------------------------------------------------------------------------------------
# The oracle


def _judged(sequence: JitSequence) -> list:
    from harness.oracles.base import Judgement, Observation
    from harness.oracles.sequence import JitSequenceOracle
    from harness.run.isolation import Outcome

    case = Case.from_sequence(sequence, (BACKEND,))
    oracle = JitSequenceOracle()
    obs = Observation(case, [], {}, Judgement())
    (derived,) = oracle.plan(obs)
    assert derived.task.kind == "sequence"
    outcome = Outcome("ok", execute(derived.task))
    return outcome, oracle.judge(obs, [(derived, outcome)])


def test_a_captured_view_is_a_second_captured_array_over_the_same_buffer() -> None:
    """The function captures ``W`` and a view of it made outside (``V = W[:1]``): both are
    program inputs, ``V``'s values are ``W``'s as each call sees them, the JSON keeps the view,
    and the generator draws each view."""
    sequence = view_sequence()
    w0, w1 = (c.captured for c in sequence.calls)
    for index, w in enumerate((w0, w1)):
        *_, captured, view = sequence.inputs(index)
        np.testing.assert_array_equal(captured, w)
        np.testing.assert_array_equal(view, w[:1])
    expected = [c.arrays[0] * 2 + c.captured - c.captured[:1] for c in sequence.calls]
    for got, want in zip(sequence.numpy_outputs(), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    data = Case.from_sequence(sequence, (BACKEND,)).to_dict()
    again = Case.from_dict(json.loads(json.dumps(data))).sequence
    assert again.view == "first-row" and again.passed == 1
    with pytest.raises(ValueError, match="captured view"):
        JitSequence(sequence.variants, sequence.holes, True, sequence.calls, "diagonal").validate()

    drawn: set[str] = set()
    for number in (1, 2, 3):  # pooled: one stream's views clump (no transposed one in 300)

        @seed(number)
        @settings(
            max_examples=150, deadline=None, suppress_health_check=list(HealthCheck),
            database=None, derandomize=False,
        )  # fmt: skip
        @given(jit_sequences())
        def collect(sequence: JitSequence) -> None:
            drawn.add(sequence.view)

        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            collect()
    assert drawn >= {"first-row", "first-column", "transposed"}, drawn


def test_the_real_compiler_answers_every_call_as_it_does_alone() -> None:
    views = [view_sequence(view) for view in ("first-row", "first-column", "transposed")]
    for sequence in (cache_sequence(), feedback_sequence(), *views):
        outcome, findings = _judged(sequence)
        results = outcome.value.results
        assert [r.status for r in results] == ["ok"] * len(sequence.calls)
        assert findings == [], [f.detail for f in findings]
    traced = [r.traced for r in _judged(cache_sequence())[0].value.results]
    # dtypes, a static, a tree are new specializations; new values and an alias are not
    assert traced == [True, True, True, True, False, False]


def _zeros_sequence() -> JitSequence:
    """``f(x, *, scale) = x / scale`` called with scale=0.0, then scale=-0.0."""
    b = ProgramBuilder()
    base = b.build(b.node("divide", b.input((3, 4), "float32"), Const(0.0)))
    other = ProgramBuilder.from_program(base)
    other.node("negative", base.output)
    (x,) = _arrays(np.random.default_rng(1), "float32")
    x[x == 0] = 1.0  # every answer an infinity whose sign the zero decides
    calls = tuple(
        Call(0, ("*",), ("float32",), (("scale", zero),), (OWN,), (x,)) for zero in (0.0, -0.0)
    )
    return JitSequence((base, other.build()), (Hole("scale", 0, "", 1),), False, calls).validate()


def test_a_cache_that_keys_a_static_float_by_value_hands_minus_zero_the_plus_zero_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0.0 == -0.0, but x / 0.0 and x / -0.0 are infinities of opposite signs: a static float
    keyed by value (a held-out plant in frontend/pytree.py) is a stale specialization."""
    from compiler.frontend import pytree

    assert _judged(_zeros_sequence())[1] == []
    real = pytree._static_key
    monkeypatch.setattr(
        pytree,
        "_static_key",
        lambda v: (float, float(v)) if isinstance(v, float) else real(v),
    )
    findings = _judged(_zeros_sequence())[1]
    assert [f.kind for f in findings] == ["stale-specialization"]
    # The cache's key, whatever the program: one corpus entry per change it forgets (a key
    # without the statics stored an entry per program, dtype and backend family).
    from dataclasses import replace

    from harness.corpus_schema import SIGNATURE, first_problem
    from harness.triage.signature import Signature

    (finding,) = findings
    signature = finding.signature
    assert signature.program_free and signature.facet == "static"
    b = ProgramBuilder()
    other = Case(b.build(b.node("exp", b.input((5,), "float64"))), [], ())
    elsewhere = replace(finding, case=other, dtype="float64", backends=("cpu-vector@O3",))
    assert signature.covers(elsewhere.signature)
    assert not signature.covers(replace(finding, facet="dtype").signature)
    assert not signature.matches(replace(finding, facet="dtype").signature)
    # A call that changed a static and the dtypes at once may be this bug: covered, and the
    # same failure to a minimizer; a known "dtype+static" does not cover a plain "static".
    both = replace(finding, facet="dtype+static").signature
    assert signature.covers(both) and signature.matches(both) and both.matches(signature)
    assert not both.covers(signature)
    stored = json.loads(json.dumps(signature.to_dict()))
    assert first_problem(stored, SIGNATURE) is None and Signature.from_dict(stored) == signature


def test_drawn_sequences_call_with_both_zeros() -> None:
    """A static float of 0.0 is followed by -0.0 often enough to meet a cache keyed by value
    (104 and 120 sequences of 600 in two unseeded runs: a program without a constant of its
    own may divide by one; 37 and 72 before, when a held-out cache keyed so survived a 60 s
    session, and 3 in 600 first). Here 200 derandomized examples: 43 in this Hypothesis, 23 in
    CI's."""
    found: list[bool] = []

    @settings(
        max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None,
        derandomize=True,
    )  # fmt: skip
    @given(jit_sequences())
    def collect(sequence: JitSequence) -> None:
        zeros = {
            float(np.copysign(1.0, v))
            for call in sequence.calls
            for _, v in call.statics
            if isinstance(v, float) and v == 0.0
        }
        found.append(len(zeros) == 2)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    assert len(found) >= 150 and sum(found) >= 12, (len(found), sum(found))


def test_a_stale_answer_and_an_overwritten_output_are_findings() -> None:
    program = cache_sequence().program(0)
    good = np.ones(3, np.float32)
    stale = CallOutcome(True, good, traced=False, alone=CallOutcome(True, good * 2))
    failed = CallOutcome(False, error="TypeError: x", traced=False, alone=CallOutcome(True, good))
    written = CallOutcome(True, good, overwritten="its output changed after it was returned")
    found = problems([stale, failed, written], [program] * 3, [None] * 3)
    assert [(i, k) for i, k, _ in found] == [
        (0, "stale-specialization"),
        (1, "stale-specialization"),
        (2, "overwritten"),
    ]


def test_a_sequence_finding_minimizes_its_sequence_and_a_plain_one_its_program() -> None:
    from harness.oracles.base import Finding

    case = Case.from_sequence(cache_sequence(), (BACKEND,))
    sequence_finding = Finding("stale-specialization", (BACKEND,), "jit-sequence", "", case)
    plain_finding = Finding("mismatch", (BACKEND,), "differential", "", case)
    names = [g.__name__ for g in generators(case, sequence_finding)]
    assert "_variants_sequence" in names and "_variants_structure" not in names
    assert "_variants_structure" in [g.__name__ for g in generators(case, plain_finding)]
    variants = next(g for g in generators(case, sequence_finding) if g.__name__ == names[-2])
    shorter = variants(case)
    assert shorter and all(c.size < case.size for _, c in shorter[:6])
    assert case.with_subject(case.subject).sequence is None


def test_the_reproducer_defines_the_function_once_and_passes_on_the_real_compiler(
    tmp_path: Path,
) -> None:
    from harness.oracles.base import Finding

    case = Case.from_sequence(cache_sequence(), (BACKEND,))
    finding = Finding("stale-specialization", (BACKEND,), "jit-sequence", "call 1: x", case)
    text = reproducer(case, finding)
    assert text.count("def f(") == 1 and text.count("\nrecord(") == len(case.sequence.calls)
    assert "W[...] = " in text and "record(a5_0, a5_0, axis=1, scale=2.0)" in text
    _passes_every_call(text, len(case.sequence.calls), tmp_path)


def _passes_every_call(text: str, calls: int, tmp_path: Path) -> None:
    """The reproducer ``text`` runs on the real compiler and says ok of each of its calls."""
    path = tmp_path / "reproduce.py"
    path.write_text(text)
    proc = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok") == calls


def test_the_reproducer_of_a_captured_view_makes_the_view_once(tmp_path: Path) -> None:
    from harness.oracles.base import Finding

    case = Case.from_sequence(view_sequence("transposed"), (BACKEND,))
    finding = Finding("mismatch", (BACKEND,), "jit-sequence", "call 0: x", case)
    text = reproducer(case, finding)
    assert text.count("V = W.T") == 1 and "view='transposed'" in text
    _passes_every_call(text, len(case.sequence.calls), tmp_path)


# --------------------------------------------------------------------------------------------
# Planted bugs (slow)

_FIND = """
import json, sys
from harness.case import Case
from harness.report.reproducer import reproducer
from harness.run.runner import Runner
from harness.triage.minimize import minimize

case = Case.from_dict(json.load(open(sys.argv[1])))
with Runner(None, use_jax=False) as runner:
    findings = runner.evaluate(case, ("jit-sequence",)).findings
    out = {"findings": [[f.kind, f.oracle] for f in findings]}
    mine = [f for f in findings if f.oracle == "jit-sequence"]
    if mine:
        def check(candidate):
            for f in runner.evaluate(candidate, ("jit-sequence",)).findings:
                if f.signature.matches(mine[0].signature):
                    return f
            return None
        result = minimize(case, mine[0], check, budget_seconds=120)
        out["calls"] = len(result.case.sequence.calls)
        out["steps"] = result.steps
        open(sys.argv[2], "w").write(reproducer(result.case, result.finding))
print(json.dumps(out))
"""


_JUDGE = """
import json, sys
from harness.case import Case
from harness.run.runner import Runner

case = Case.from_dict(json.load(open(sys.argv[1])))
with Runner(None, use_jax=False) as runner:
    findings = runner.evaluate(case, ("jit-sequence",)).findings
print(json.dumps([[f.kind, f.oracle, f.detail[:200]] for f in findings]))
"""


@pytest.mark.slow
def test_captured_arrays_told_apart_by_address_are_found(tmp_path: Path) -> None:
    """A trace that keys captured arrays by their buffer's address takes ``V = W[:1]`` for
    ``W`` (a held-out plant survived 60 s sessions before captured views were drawn)."""
    mutation = next(m for m in MUTATIONS if m.name == "captured-views-merged")
    case_path = tmp_path / "case.json"
    case_path.write_text(json.dumps(Case.from_sequence(view_sequence(), (BACKEND,)).to_dict()))
    found = json.loads(last_line_with(mutation, tmp_path, _JUDGE, str(case_path)))
    assert found and all(oracle == "jit-sequence" for _, oracle, _ in found), found


@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in JIT_MUTATIONS])
def test_a_planted_cache_bug_is_found_minimized_and_reproduced(name: str, tmp_path: Path) -> None:
    mutation = next(m for m in JIT_MUTATIONS if m.name == name)
    scratch = apply(mutation, tmp_path / "src")
    case_path, script = tmp_path / "case.json", tmp_path / "reproduce.py"
    case_path.write_text(json.dumps(Case.from_sequence(cache_sequence(), (BACKEND,)).to_dict()))
    env = scratch_environment(scratch)
    proc = subprocess.run(
        [sys.executable, "-c", _FIND, str(case_path), str(script)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert ["stale-specialization", "jit-sequence"] in result["findings"], result
    assert result["calls"] <= 3, result
    planted = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert "FAILS: stale-specialization" in planted.stdout
    real = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert real.returncode == 0, real.stdout + real.stderr


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in JIT_MUTATIONS])
def test_a_default_session_finds_a_planted_cache_bug(name: str, tmp_path: Path) -> None:
    """``python -m harness fuzz --workers 1 --stop-on-first --no-database``, the default mix (jit
    sequences are a tenth of it); the spec oracle is skipped so an unrelated finding cannot end
    the session first, and so is the GPT-2 models' (their float32 and float64 attention
    specializations meet a dtype-blind key too: a wrong-error that ended a session first).
    Each is found within 60 s on an idle 2-core machine; the box is wider because CI runs this
    next to other sessions (a time box measures the load, not the harness)."""
    mutation = next(m for m in JIT_MUTATIONS if m.name == name)
    scratch = apply(mutation, tmp_path / "src")
    summary = tmp_path / "summary.json"
    command = fuzz_command(
        tmp_path / "corpus", 180, 1, "--workers", "1", "--stop-on-first", "--no-database",
        "--summary-json", str(summary), "--skip-oracles", "spec,gpt2-model",
        "--minimize-seconds", "60", "--shrink-seconds", "10",
    )  # fmt: skip
    proc = subprocess.run(
        command, cwd=tmp_path, env=scratch_environment(scratch), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert summary.exists(), proc.stderr[-3000:]
    data = json.loads(summary.read_text())
    found = [t for t in data["timeline"] if t.get("oracle") == "jit-sequence"]
    assert found and found[0]["seconds"] <= 180, data["timeline"]
    entries = [json.loads(p.read_text()) for p in (tmp_path / "corpus").glob("*.json")]
    mine = [e for e in entries if e["case"]["oracle"] == "jit-sequence"]
    assert mine and len(mine[0]["case"]["case"]["extra"]["sequence"]["calls"]) <= 3


def test_drawn_sequences_call_with_a_static_float_and_its_neighbour() -> None:
    """A static float and the next float64 above it: equal in float32 and in a short printing,
    so a cache keyed by a narrowed or rounded value serves the second call the first's kernel
    (a held-out static key of float32 bits survived a 60 s session: no sequence changed a
    static by less than 1). Tried first half the time, taken where NumPy's answer changes
    (float64 programs): 60 sequences of each of twelve seeds here (one seed's sequences are
    correlated: 200 of each of three took it in 42% and 21% of those that changed a float, for
    one rule and two generators), judged among those that change a static float at all."""
    import math

    changed: list[bool] = []

    @settings(
        max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None,
    )  # fmt: skip
    @given(jit_sequences())
    def collect(sequence: JitSequence) -> None:
        floats = {v for call in sequence.calls for _, v in call.statics if isinstance(v, float)}
        if len(floats) >= 2:  # a static float changed
            changed.append(any(math.nextafter(v, math.inf) in floats for v in floats))

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(1, 13):
            seed(s)(collect)()
    # 44 of 133 and 48 of 127 here (two generators); 36 of 195 once a call could change the
    # shapes (more sequences change a float static, fewer of them to its neighbour); with the
    # neighbour one of the values in a drawn order only, 19 of 600 sequences of three seeds
    # took it (65 with the rule)
    assert len(changed) >= 60 and sum(changed) >= 0.15 * len(changed), (
        len(changed), sum(changed),
    )  # fmt: skip


def test_a_cache_that_keys_a_static_float_by_its_float32_bits_is_stale_for_its_neighbour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``x * scale`` of a float64 x with scale = 1.0, then the next float64 above: a static key
    of float32 bits (a held-out plant in frontend/pytree.py) serves the second call the first's
    kernel, a stale specialization."""
    import math

    from compiler.frontend import pytree

    b = ProgramBuilder()
    base = b.build(b.node("multiply", b.input((3, 4), "float64"), Const(1.0)))
    other = ProgramBuilder.from_program(base)
    other.node("negative", base.output)
    (x,) = _arrays(np.random.default_rng(1), "float64")
    calls = tuple(
        Call(0, ("*",), ("float64",), (("scale", s),), (OWN,), (x,))
        for s in (1.0, math.nextafter(1.0, math.inf))
    )
    sequence = JitSequence(
        (base, other.build()), (Hole("scale", 0, "", 1),), False, calls
    ).validate()
    assert _judged(sequence)[1] == []
    real = pytree._static_key
    monkeypatch.setattr(
        pytree,
        "_static_key",
        lambda v: (float, np.float32(v).tobytes()) if isinstance(v, float) else real(v),
    )
    assert [f.kind for f in _judged(sequence)[1]] == ["stale-specialization"]
