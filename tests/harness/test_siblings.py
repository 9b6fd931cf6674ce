"""Siblings: a case's program judged again on values of other regimes, on the kernels compiled
for the case (``harness.session.generate.siblings``, ``Driver.judge``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from harness.case import SIBLINGS, Case
from harness.oracles.base import Finding, Judgement
from harness.session.generate import _edges_by_step, cases, siblings, with_siblings
from strategies.gen.values import EDGE_REGIMES, REGIMES
from strategies.model import ProgramBuilder

BACKEND = "cpu-loops@O0"


def test_siblings_are_the_case_on_values_of_other_regimes() -> None:
    """Each sibling is the case (program, backends, spelling, layouts) on new values of the
    same shapes and dtypes, from a regime at the edges of one of its ops, other than the case's
    own and the other siblings'; a jit sequence, a GPT-2 model and a sweep have none (an
    invalid program's:
    ``test_an_invalid_programs_siblings_are_its_valid_part_with_other_violations``)."""
    seen: list[int] = []
    regimes: set[str] = set()

    @seed(7)
    @settings(
        max_examples=80, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(with_siblings(cases()))
    def check(pair: tuple[Case, tuple[Case, ...]]) -> None:
        case, found = pair
        if case.invalid is not None:
            return  # (its own test)
        if case.sequence is not None or case.carries_run:  # (a GPT-2 model carries its run)
            assert found == (), case.origin
            return
        if case.origin.startswith("sweep/") or not case.program.inputs:
            assert found == ()
            return
        seen.append(len(found))
        own = case.origin.rpartition("/")[2]
        names = []
        for sibling in found:
            assert sibling.program == case.program and sibling.backends == case.backends
            assert sibling.extra == case.extra and sibling.spelling == case.spelling
            assert [(a.shape, a.dtype) for a in sibling.inputs] == [
                (a.shape, a.dtype) for a in case.inputs
            ]
            assert sibling.origin.startswith(case.origin + "+")
            name = sibling.origin.rpartition("+")[2]
            assert name in EDGE_REGIMES and name != own, sibling.origin
            steps = _edges_by_step(case.program).values()
            taken = {own, *names}  # a step whose edges are all taken: any other edge regime
            assert any(name in edges or set(edges) <= taken for edges in steps)
            names.append(name)
        assert len(set(names)) == len(names), names
        regimes.update(names)

    check()
    assert seen and sum(n == SIBLINGS for n in seen) >= 0.9 * len(seen), seen
    assert len(regimes) >= 4 and regimes <= set(REGIMES), regimes


def _max_case() -> Case:
    b = ProgramBuilder()
    x = b.input((3, 4), "float32")
    program = b.build(b.node("max", x, axis=1))
    x = np.array([[-2, -1, 1, 3], [0.5, -1, -3, 2], [1, 2, 3, 4]], np.float32)  # each row: a > 0
    return Case(program, [x], (BACKEND,), origin="programs/mixed_sign")


def test_a_bug_only_a_siblings_values_show_is_found_with_the_sibling(tmp_path: Path) -> None:
    """A max whose identity is 0 is right on rows with a positive element (the case's values)
    and wrong on rows of negatives: the driver judges the siblings after the case, and the
    finding keeps the sibling as its case (its reproducer holds those values). Siblings count
    as such, not as cases; none is judged once a new finding is in hand."""
    from hypothesis import strategies as st

    from harness.session.fuzz import Driver, FuzzOptions

    case = _max_case()

    @seed(1)
    @settings(max_examples=1, phases=[Phase.generate], database=None, deadline=None)
    @given(st.just(case).flatmap(lambda c: siblings(c, 3)))
    def draw(found: tuple[Case, ...]) -> None:
        drawn.extend(found)

    drawn: list[Case] = []
    draw()
    negative = [s for s in drawn if s.origin.endswith("+negative")]
    assert len(drawn) == 3 and negative, [s.origin for s in drawn]  # max's edges: 3 regimes

    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    judged: list[Case] = []

    def evaluate(
        candidate: Case, only: tuple[str, ...] | None = None, fresh: bool = False
    ) -> Judgement:
        judged.append(candidate)  # the runner's judging, stood in for; its accounting is real
        rows = np.asarray(candidate.inputs[0], np.float64)
        if np.any(np.all(rows < 0, axis=1)):  # the planted identity shows
            finding = Finding("mismatch", (BACKEND,), "differential", "max of negatives", candidate)
            return Judgement(findings=[finding], oracles=["differential"])
        return Judgement(oracles=["differential"])

    try:
        driver.runner._evaluate = evaluate  # type: ignore[method-assign]
        ordered = sorted(drawn, key=lambda s: s.origin.endswith("+negative"))
        findings = driver.judge(case, tuple(ordered))
        assert [f.case.origin for f in findings] == [negative[0].origin]
        assert judged == [case, *ordered]  # the negative sibling last: all judged
        assert driver.runner.stats.cases == 1 and driver.runner.stats.siblings == 3
        judged.clear()
        findings = driver.judge(case, tuple(reversed(ordered)))
        assert len(findings) == 1 and judged == [case, ordered[-1]]  # then none after it
        assert driver.judge(case, ()) == [] and judged[-1] is case
    finally:
        driver.close()


def test_a_casts_siblings_take_its_own_conversions_edges() -> None:
    """A sibling of ``x.astype(bool)`` is drawn at NaN and ties (where an ordered != makes NaN
    False), of ``x.astype(bfloat16)`` at the halfway ties and dense values, not at the edges
    common to every cast."""
    from strategies.gen.values import cast_edge_regimes

    def drawn_for(target: str) -> set[str]:
        b = ProgramBuilder()
        cast = b.node("astype", b.input((4,), "float32"), dtype=target)
        out = b.node("astype", cast, dtype="float32") if target == "bool" else cast
        program = b.build(out)
        pair = f"float32->{target}"
        assert _edges_by_step(program)[f"astype {pair}"] == cast_edge_regimes("float32", target)
        case = Case(program, [np.ones(4, "f4")], (BACKEND,), origin="focus/ordinary")
        drawn: set[str] = set()

        @settings(max_examples=30, database=None, deadline=None)
        @given(siblings(case))
        def check(found: tuple[Case, ...]) -> None:
            drawn.update(s.origin.rpartition("+")[2] for s in found)

        check()
        return drawn

    assert {"special", "ties"} <= drawn_for("bool") <= {"special", "ties", "extreme"}
    halfway = drawn_for("bfloat16")
    assert {"halfway", "dense"} <= halfway <= set(cast_edge_regimes("float32", "bfloat16"))


def test_an_invalid_programs_siblings_are_its_valid_part_with_other_violations() -> None:
    """Each sibling of an invalid program is its valid part (without the inputs only its
    violation used) with a violation other than the case's and the other siblings' (not an
    unsupported input dtype), on values drawn for its own inputs: rejected while tracing, each
    costs no compile, and 16 violations with their variants get three times the cases."""
    from harness.session.generate import invalid_cases

    violations: set[str] = set()

    @seed(3)
    @settings(
        max_examples=40, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(with_siblings(invalid_cases((BACKEND,))))
    def check(pair: tuple[Case, tuple[Case, ...]]) -> None:
        case, found = pair
        own = case.invalid.violation
        names = [sibling.invalid.violation for sibling in found]
        assert len(found) == SIBLINGS and len({own, *names}) == len(names) + 1, (own, names)
        base, _ = case.invalid.program.drop_unused_inputs()
        for sibling, name in zip(found, names, strict=True):
            assert sibling.origin == f"{case.origin}+{name}" and name != "unsupported_dtype"
            assert sibling.backends == case.backends
            assert [(a.shape, str(a.dtype)) for a in sibling.inputs] == [
                (i.shape, i.dtype) for i in sibling.invalid.inputs
            ]
            kept = sibling.invalid.program
            assert kept.nodes[: len(base.nodes)] == base.nodes, (base, kept)
        violations.update(names)

    check()
    assert len(violations) >= 8, violations


def test_an_out_of_range_cases_siblings_hold_the_bad_id_in_its_other_gathers() -> None:
    """A case whose gather reads an id just past its table's end: its siblings hold such an id
    in each of its other gathers' ids alone (the same gather's at the other end, where it has
    one), on its kernels. Which of two gathers holds it decides what a wrong check shows: a
    kernel whose two error flags shared a buffer passed wherever the bad one wrote first, and
    one such case a session did not catch that kernel in 1 of 2 60 s sessions."""
    from harness.session.focus import ONE_OF_TWO, OUT_OF_RANGE, _id_inputs, focus_cases

    def bad_inputs(case: Case) -> list[int]:
        return [
            index
            for _, index, bound in _id_inputs(case.program)
            if np.any((case.inputs[index] < 0) | (case.inputs[index] >= bound))
        ]

    held: list[tuple[list[int], list[list[int]]]] = []

    @seed(2)
    @settings(
        max_examples=30, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(with_siblings(focus_cases((BACKEND,), (("gather", ONE_OF_TWO),))))
    def check(pair: tuple[Case, tuple[Case, ...]]) -> None:
        case, found = pair
        assert case.origin == f"focus/{ONE_OF_TWO}"
        ids = [index for _, index, _ in _id_inputs(case.program)]
        assert len(ids) == 2 and len(bad_inputs(case)) == 1
        for sibling in found:
            assert sibling.program == case.program and sibling.backends == case.backends
            assert len(bad_inputs(sibling)) == 1 and sibling.origin.startswith(case.origin + "+")
        held.append((bad_inputs(case), [bad_inputs(s) for s in found]))

    check()
    assert held and all(found and found[0] != own for own, found in held), held
    b = ProgramBuilder()
    table, ids = b.input((3, 2), "float32"), b.input((4,), "int32", bound=3)
    program = b.build(b.node("gather", table, ids))
    for bad, edge in ((3, OUT_OF_RANGE[0]), (-1, OUT_OF_RANGE[1])):  # one id input: other end
        one = Case(
            program,
            [np.ones((3, 2), np.float32), np.array([0, bad, 1, 2], np.int32)],
            (BACKEND,),
            origin=f"focus/{edge}",
        )
        for sibling in _drawn_siblings(one):
            values = sibling.inputs[1]
            if bad == 3:  # the lower end, and no id past the upper one
                assert values.min() == -1 and values.max() < 3, values
            else:
                assert values.max() == 3 and values.min() >= 0, values


def _drawn_siblings(case: Case) -> list[Case]:
    """The siblings of ``case`` of a few draws."""
    drawn: list[Case] = []

    @settings(max_examples=5, database=None, deadline=None)
    @given(siblings(case))
    def draw(found: tuple[Case, ...]) -> None:
        assert len(found) == 1
        drawn.extend(found)

    draw()
    return drawn
