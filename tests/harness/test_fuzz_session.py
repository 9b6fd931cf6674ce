"""The repository's slow-tier run of the packaged fuzz test (``harness.fuzz_tests``).

``pytest tests/harness/test_fuzz_session.py --fuzz-seconds 300 -n auto`` is a fuzzing session,
one shard per worker; without ``--fuzz-seconds`` each shard runs a fixed handful of examples with
a temporary corpus and database. The shards' seeds are listed at the end of the run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from harness import fuzz_tests
from harness.session.fuzz import FuzzOptions


@pytest.mark.slow
def test_fuzz(fuzz_shard: int, fuzz_options: FuzzOptions, request: pytest.FixtureRequest) -> None:
    fuzz_tests.test_fuzz(fuzz_shard, fuzz_options, request)


@pytest.mark.slow
def test_the_cases_judged_keep_the_session_mix() -> None:
    """``MIX_PERCENT`` is what a session judges: under ``st.one_of`` random programs, the richest
    cases, came out a fifth of the mix although listed as a third; with a uniform draw, the
    mutants Hypothesis makes of each example (they keep its kind) still moved one process's 300
    cases to 29% random programs and another's composites to 24% (``MixBalance``)."""
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.generate import MIX_PERCENT, MixBalance, cases, mix_kind

    balance = MixBalance()
    drawn: Counter[str] = Counter()
    # Three seeds pooled: one seed's 300 draws are correlated (Hypothesis mutates earlier
    # examples), and they move with the constants of every module imported so far (Hypothesis
    # draws those now and then): seed 11 alone passed in CI's whole run of 4614a51 and gave
    # random programs 41% of the cases when this test ran on its own.
    for number in (11, 12, 13, 14):

        @seed(number)
        @settings(
            max_examples=300, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases())
        def collect(case) -> None:
            drawn[mix_kind(case)] += 1
            balance.admit(case)

        collect()
    judged = sum(balance.counts.values())
    assert set(drawn) == set(MIX_PERCENT), drawn
    assert judged >= 0.3 * sum(drawn.values()), (judged, drawn)  # a skip costs a generation
    shares = {kind: count / judged for kind, count in balance.counts.items()}
    assert shares["programs"] >= MIX_PERCENT["programs"] / 100 - 0.02, shares
    for kind, percent in MIX_PERCENT.items():
        # No kind runs ahead of its share; one behind it is so for want of drawn cases (a kind
        # behind is always admitted): Hypothesis's mutants keep their example's kind, so one
        # seed drew 3 strided matmuls in 300 and another (CI's stream) 10 composites in 134.
        assert shares[kind] <= percent / 100 + 0.05, (kind, shares)
        supply = drawn[kind] / judged
        assert shares[kind] >= min(percent / 100, supply) - 0.05, (kind, shares, drawn)


def test_the_mix_balance_skips_a_kind_only_ahead_of_its_share() -> None:
    from dataclasses import replace

    from harness.case import Case
    from harness.session.generate import MIX_PERCENT, MIX_SLACK, MixBalance
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    programs = Case(b.build(b.node("exp", x)), [], ("cpu-loops",), origin="programs/normal")
    of_kind = {kind: replace(programs, origin=f"{kind}/x") for kind in MIX_PERCENT}
    # The first composites are 100% of the cases: ahead of their 14%, but within the slack.
    balance = MixBalance()
    admitted = [balance.admit(of_kind["composite"]) for _ in range(10)]
    assert admitted == [True] * MIX_SLACK + [False] * (10 - MIX_SLACK)
    # Cases drawn in the mix's proportions (a smooth weighted round robin) are all judged.
    balance = MixBalance()
    credit = dict.fromkeys(MIX_PERCENT, 0)
    for _ in range(400):
        for kind, percent in MIX_PERCENT.items():
            credit[kind] += percent
        kind = max(credit, key=credit.get)
        credit[kind] -= 100
        assert balance.admit(of_kind[kind]), (kind, balance.counts)
    # A run of one kind is cut at its share plus the slack; focused cases are outside the mix.
    run = [balance.admit(of_kind["jit-sequence"]) for _ in range(20)]
    assert 1 <= sum(run) <= MIX_SLACK + 1 and run[-1] is False
    assert all(balance.admit(replace(programs, origin="focus/x")) for _ in range(20))
    assert set(balance.counts) == set(MIX_PERCENT)


def test_a_round_draws_no_kind_the_balance_would_skip() -> None:
    """``MixBalance.ahead`` names the kinds whose next case ``admit`` would skip, and a round's
    strategy built with them held back draws none of them (a 10-minute session had skipped
    4762 drawn cases as ahead of their share, for 2608 judged)."""
    from dataclasses import replace

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import Case
    from harness.session.generate import MIX_PERCENT, MIX_SLACK, MixBalance, cases, mix_kind
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    programs = Case(b.build(b.node("exp", x)), [], ("cpu-loops",), origin="programs/normal")
    balance = MixBalance()
    assert balance.ahead() == ()
    for _ in range(MIX_SLACK):
        assert balance.admit(replace(programs, origin="composite/x"))
    assert balance.ahead() == ("composite",)
    assert not balance.admit(replace(programs, origin="composite/x"))
    held = ("composite", "invalid")
    drawn: set[str | None] = set()

    @seed(3)
    @settings(
        max_examples=150, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(held_back=held))
    def collect(case) -> None:
        drawn.add(mix_kind(case))

    collect()
    assert not drawn & set(held), drawn
    assert "programs" in drawn and len(drawn) >= 3, drawn
    assert set(MIX_PERCENT) - set(held) >= drawn - {None}


def test_focused_cases_start_from_the_pairs_not_exercised_yet(tmp_path) -> None:
    """``FOCUS_SHARE`` of a session's cases start from (op, dtype) pairs no case has exercised
    (``focus_cases``); each driver takes its share of the table first, and the pairs a case
    exercised leave the focus (an int32 matmul, 3% of random programs, then comes early)."""
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import (
        FOCUS_REPEATS,
        FOCUS_SHARE,
        exercised_pairs,
        focus_items,
        sweep_items,
    )
    from harness.session.fuzz import Driver
    from harness.session.generate import cases
    from strategies import op_dtype_pairs
    from strategies.gen.values import EDGE_REGIMES

    pairs = op_dtype_pairs()
    assert ("matmul", "int32") in pairs and ("greater_equal", "float16") in pairs
    origins: Counter[str] = Counter()
    started: list[bool] = []

    # Three seeds pooled: one seed's draws are correlated (Hypothesis mutates earlier examples)
    # and move with every change to the generator (seed 5 alone gave 0.43, and 0.71 once the
    # programs drew strided views).
    for number in (5, 8, 9):

        @seed(number)
        @settings(
            max_examples=100, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(focus=(("matmul", "int32"),)))
        def collect(case) -> None:
            origin = case.origin.split("/")[0]
            origins[origin] += 1
            if origin == "focus":
                started.append(("matmul", "int32") in exercised_pairs(case.program))

        collect()

    @seed(6)
    @settings(
        max_examples=20, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(focus=(("greater", "int32"),), focus_regimes=("ties",)))
    def edges(case) -> None:  # the second pass over the items: values at the op's edges
        if case.origin.startswith("focus/"):
            assert case.origin == "focus/ties", case.origin
            edged.append(case.origin)

    edged: list[str] = []
    edges()
    assert edged

    @seed(7)
    @settings(
        max_examples=30, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(focus=(("greater", "int32"),), focus_regimes=EDGE_REGIMES))
    def at_its_edges(case) -> None:  # of the edges, those of the first op (edge_regimes)
        if case.origin.startswith("focus/"):
            seen.add(case.origin.split("/", 1)[1])

    seen: set[str] = set()
    at_its_edges()
    assert seen and seen <= {"ties", "special"}, seen
    share = origins["focus"] / sum(origins.values())
    assert FOCUS_SHARE - 0.2 <= share <= FOCUS_SHARE + 0.2, origins
    assert sum(started) >= 0.6 * len(started), started  # a later step may leave the first dead

    options = FuzzOptions(corpus=tmp_path, database=None, use_jax=False, workers=2)
    drivers = [Driver(options, 0), Driver(options, 1)]
    try:
        first, second = (d.focus_pairs() for d in drivers)
        assert not set(first) & set(second) and set(first) | set(second) == set(focus_items())
        assert set(sweep_items()) < set(focus_items())
        assert set(pairs) < set(focus_items())
        item = second[0]
        drivers[1].note_exercised({item})  # breadth first: once for now...
        assert item not in drivers[1].focus_pairs()
        drivers[0].exercised |= set(first)  # its share done: the rest of the table is next
        assert set(drivers[0].focus_pairs()) == set(second)
        for pair in focus_items():  # ...and, the table done once, again (one case is often
            drivers[1].note_exercised({pair})  # degenerate: int32 a > b on zeros)
        assert drivers[1].focus_regimes() == ()  # any regime the first time round
        assert set(drivers[1].focus_pairs()) == set(second) - {item}
        assert drivers[1].focus_level == 2 and drivers[1].focus_regimes() == EDGE_REGIMES
        drivers[1].note_exercised(set(focus_items()))
        assert FOCUS_REPEATS == 2 and drivers[1].focus_pairs() == ()
        assert (
            Driver(FuzzOptions(corpus=tmp_path, database=None, focus=False), 2).focus_pairs() == ()
        )
    finally:
        for driver in drivers:
            driver.close()


def test_focus_items_reach_each_op_in_each_spelling() -> None:
    """Beyond (op, dtype) pairs, the focus names each op a spelling writes another way (NumPy's
    dispatch, a method): a focused case then starts from it in that spelling, and exercising it
    there takes it out of the focus."""
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import SPELLED, exercised_items, focus_items
    from harness.session.generate import cases

    items = focus_items()
    assert ("sum", SPELLED + "methods") in items and ("sum", SPELLED + "numpy") in items
    assert ("exp", SPELLED + "numpy") in items and ("exp", SPELLED + "methods") not in items
    assert ("gelu", SPELLED + "numpy") not in items  # written ops.gelu(x) in every spelling
    spellings: Counter[str] = Counter()
    started: list[bool] = []

    @seed(7)
    @settings(
        max_examples=120, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(mix="programs", focus=(("sum", SPELLED + "methods"),)))
    def collect(case) -> None:
        if case.origin.startswith("focus"):
            spellings[case.spelling] += 1
            started.append(("sum", SPELLED + "methods") in exercised_items(case))

    collect()
    assert set(spellings) == {"methods"}, spellings  # the session's coin leaves it spelled
    assert sum(started) >= 0.5 * len(started), started  # a later step may leave it dead


def test_focus_items_put_a_constant_left_of_each_binary_op(monkeypatch) -> None:
    """(op, "const-left") for each binary op and comparison: ``3.0 - x`` is the reflected
    operator (``__rsub__``), 7 in 2000 random programs; a focused case draws it, in any dtype
    the op takes, and exercising it takes it out of the focus. A kind of few items (11 of
    these) is not starved by one of hundreds: the first item is uniform over the kinds."""
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from compiler import primitives
    from harness.session.focus import exercised_items, focus_items, item_kind
    from harness.session.generate import cases
    from strategies import CONST_LEFT

    items = focus_items()
    assert ("subtract", CONST_LEFT) in items and ("less", CONST_LEFT) in items
    assert ("maximum", CONST_LEFT) not in items and ("exp", CONST_LEFT) not in items
    kinds = Counter(item_kind(item) for item in items)
    others = {"sweep", "cast", "spelling", "const:left", "const:wide", "const:arbitrary"}
    others |= {"const:wider", "const:value", "const:foreign", "const:base"}
    others |= {"jit-sequence", "pair:bool"}  # (x / y of booleans: the rule takes it)
    others |= {"out-of-range", "identity", "view", "key", "ranks", "layout", "tails", "invalid"}
    assert set(kinds) == others | {f"pair:{p.kind}" for p in primitives.PRIMITIVES.values()
                                   if p.generate and p.kind != "cast"}, kinds  # fmt: skip
    assert kinds["pair:gather"] == 5 and kinds["const:left"] == kinds["const:arbitrary"] == 11
    assert kinds["const:wider"] == 11 and kinds["const:value"] == 25
    assert kinds["const:foreign"] == 10  # (every one but power)
    assert kinds["const:base"] == 5  # (power's: 2, 0.5, 8, 0.125, 10)
    dtypes: Counter[str] = Counter()
    started: list[bool] = []

    # 240 draws: Hypothesis's draws come in runs of like cases, and over 120 the share started
    # went from 45% to 92% by seed (a quarter of the constants are strong, by design).
    @seed(4)
    @settings(
        max_examples=240, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(mix="programs", focus=(("subtract", CONST_LEFT),)))
    def collect(case) -> None:
        if case.origin.startswith("focus"):
            dtypes[case.program.inputs[0].dtype] += 1
            started.append(("subtract", CONST_LEFT) in exercised_items(case))

    collect()
    assert len(dtypes) >= 3, dtypes  # the op's dtypes, drawn
    assert sum(started) >= 0.5 * len(started), started  # a later step may leave it dead

    first_kinds: Counter[str] = Counter()
    pairs = tuple(p for p in items if item_kind(p) == "pair:unary") + (("divide", CONST_LEFT),)

    # Three seeds pooled: one seed's share ranged from 8% to 87% (seeds 5 to 7, before and
    # after programs drew strided views), moving with every change to the generator.
    for number in (5, 6, 7):

        @seed(number)
        @settings(
            max_examples=100, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(mix="programs", focus=pairs))
        def shares(case) -> None:
            if case.origin.startswith("focus"):
                first_kinds[
                    "const-left" if ("divide", CONST_LEFT) in exercised_items(case) else "-"
                ] += 1

        shares()
    # An eighth start from it (a family of one item beside one of 45: one pick to seven, by the
    # root of their items), two thirds of those keep it live (24 of 190); uniform over the 46
    # items it would be 1 in 70 of them.
    assert first_kinds["const-left"] >= 0.06 * sum(first_kinds.values()), first_kinds

    # An op no dtype can be drawn in (a compiler that rejects subtract on every dtype: a mutant
    # of its result rule) has no such item, instead of a focused case with no dtype to draw.
    from harness.session import focus
    from strategies import op_dtype_pairs

    without = tuple(p for p in op_dtype_pairs() if p[0] != "subtract")
    monkeypatch.setattr(focus, "op_dtype_pairs", lambda: without)
    assert ("subtract", CONST_LEFT) not in focus.focus_items()
    assert ("add", CONST_LEFT) in focus.focus_items()


def test_focus_items_give_int32_operands_constants_they_cannot_represent() -> None:
    """(op, "const-wide") for each binary op and comparison on int32: a focused case draws its
    step on int32 tensors with a float or (comparisons) an int past int32's ends, and doing so
    takes the item out of the focus; a constant int32 represents does not."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import exercised_pairs, focus_items, item_kind
    from harness.session.generate import cases
    from strategies import CONST_WIDE, Const, ProgramBuilder

    items = [i for i in focus_items() if item_kind(i) == "const:wide"]
    assert ("less", CONST_WIDE) in items and ("add", CONST_WIDE) in items, items
    assert all(second == CONST_WIDE for _, second in items)
    started: list[bool] = []
    # int32's ends next to an int just past them (``x < 2**31`` computed in float32 is wrong
    # only there): the item's values are the ``extreme`` regime's
    at_edges: list[bool] = []
    ends = {2**31 - 1, -(2**31)}

    def collect(case) -> None:
        if case.origin.startswith("focus"):
            started.append(("less", CONST_WIDE) in exercised_pairs(case.program))
            consts = {a.value for n in case.program.nodes for a in n.args if isinstance(a, Const)}
            held = {int(v) for a in case.inputs if a.dtype == np.int32 for v in a.reshape(-1)}
            at_edges.append(bool(consts & {2**31, -(2**31) - 1}) and bool(held & ends))

    # Five seeds: one seed's 80 examples follow one generation path, which Hypothesis also
    # steers with the constants it finds in the loaded modules (seed 6 alone gave 0 of 50 at
    # the edges under Hypothesis 6.170 with one module's constants changed, 9 to 14 of 30-52
    # for seeds 1 to 4; three seeds gave 7 of 118 after an unrelated change to reshapes).
    for chosen in (1, 2, 3, 4, 5):
        seed(chosen)(
            settings(
                max_examples=80,
                phases=[Phase.generate],
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )(given(cases(mix="programs", focus=(("less", CONST_WIDE),)))(collect))
        )()
    assert len(started) >= 10 and sum(started) >= 0.5 * len(started), started
    assert sum(at_edges) >= 0.1 * len(at_edges), at_edges

    def pairs(value) -> set:
        b = ProgramBuilder()
        x = b.input((2, 3), "int32")
        return exercised_pairs(b.build(b.node("where", b.node("less", x, Const(value)), x, x)))

    assert ("less", CONST_WIDE) in pairs(2**31) and ("less", CONST_WIDE) in pairs(0.5)
    assert ("less", CONST_WIDE) not in pairs(2**31 - 1)


def test_a_jit_sequence_is_a_focus_item(tmp_path) -> None:
    """A jit sequence is 10% of the mix, yet a 20 s single-driver session drew none (Hypothesis
    mutates its examples within their kind): it is a focus item too, done by any sequence of
    two calls or more, and its focused cases stay outside the mix's balance."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS
    from harness.session import focus
    from harness.session.focus import SEQUENCE_ITEM, exercised_items, item_kind
    from harness.session.generate import cases, mix_kind

    assert SEQUENCE_ITEM in focus.focus_items() and item_kind(SEQUENCE_ITEM) == "jit-sequence"
    focused: list[bool] = []

    @seed(2)
    @settings(
        max_examples=20, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(focus.focus_cases(CPU_BACKENDS, (SEQUENCE_ITEM,)))
    def collect(case) -> None:
        assert case.origin == "focus/jit-sequence" and mix_kind(case) is None
        assert case.sequence is not None
        focused.append(SEQUENCE_ITEM in exercised_items(case))

    collect()
    assert sum(focused) >= 0.8 * len(focused), focused  # a sequence of one call does not count

    @seed(2)
    @settings(
        max_examples=40, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(focus=(SEQUENCE_ITEM, ("exp", "float32"))))
    def others(case) -> None:  # no other case does it
        if case.sequence is None:
            assert SEQUENCE_ITEM not in exercised_items(case)

    others()
    from harness.session.fuzz import Driver

    for mix, expected in (("all", True), ("programs", False)):  # random programs only: none
        driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False, mix=mix), 0)
        try:
            assert (SEQUENCE_ITEM in driver.focus_pairs()) is expected, mix
        finally:
            driver.close()


def test_a_gathers_range_check_is_a_focus_item_on_each_side() -> None:
    """A gather's ids just past each end of its table (the bound itself, -1) are focus items of
    their own: a check letting the bound through survived 60 s sessions on two seeds of three
    (gathers are 4% of the cases; ``extreme`` gives one out-of-range id in half of theirs).
    Each focused case holds the id it names, in a dtype the gather takes; those of the
    "one-of-two" item hold two gathers, the bad id in the first alone or in the second alone
    (gathers whose range checks shared one flag raised for one order only, and survived 60 s
    sessions on two seeds)."""
    from collections import Counter

    import numpy as np
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import (
        ONE_OF_TWO,
        OUT_OF_RANGE,
        exercised_items,
        focus_items,
        item_kind,
    )
    from harness.session.generate import cases

    items = tuple(i for i in focus_items() if item_kind(i) == "out-of-range")
    assert set(items) == {("gather", edge) for edge in (*OUT_OF_RANGE, ONE_OF_TWO)}, items
    seen: Counter[tuple[str, bool]] = Counter()
    dtypes: set[str] = set()

    # Four seeds pooled: one seed's 60 draws are correlated, and move with every change to the
    # generator (seed 3 alone gave two dtypes once programs drew strided views; seeds 3 and 4
    # one one-of-two case with the second gather's id out of range once constants took integer
    # dtypes no array has).
    for number in (3, 4, 5, 6):

        @seed(number)
        @settings(
            max_examples=60, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(focus=items))
        def collect(case) -> None:
            if case.origin.startswith("focus/out-of-range"):
                edge = case.origin.split("/", 1)[1]
                seen[(edge, ("gather", edge) in exercised_items(case))] += 1
                dtypes.add(case.program.inputs[0].dtype)
                ids = [n.args[1].index for n in case.program.nodes if n.op == "gather"]
                if edge == ONE_OF_TWO:
                    values = [np.asarray(case.inputs[i]) for i in ids]
                    bounds = [case.program.inputs[i].bound for i in ids]
                    bad = tuple(
                        bool(((v < 0) | (v >= b)).any())
                        for v, b in zip(values, bounds, strict=True)
                    )
                    seen[("two", bad)] += 1
            elif case.origin.split("/")[0] in ("programs", "composite"):
                for op, edge in exercised_items(case) & set(items) - {("gather", ONE_OF_TWO)}:
                    ids = next(n.args[1] for n in case.program.nodes if n.op == op)
                    bound = case.program.inputs[ids.index].bound
                    expected = bound if edge.endswith("upper") else -1
                    assert (np.asarray(case.inputs[ids.index]) == expected).any()

        collect()
    for edge in (*OUT_OF_RANGE, ONE_OF_TWO):
        assert seen[(edge, True)] >= 3 and not seen[(edge, False)], seen
    assert len(dtypes) >= 3, dtypes
    two = {key[1]: count for key, count in seen.items() if key[0] == "two"}
    assert two.get((True, False), 0) >= 2 and two.get((False, True), 0) >= 2, seen


def test_a_quarter_of_the_cases_are_judged_in_guided_rounds_unless_turned_off(monkeypatch) -> None:
    """Guided rounds run to their end and unguided ones may end early, so rounds are of any
    length: the share is kept in cases judged, not in rounds."""
    from harness.session.fuzz import GUIDED_EVERY, guided

    monkeypatch.delenv("HARNESS_UNGUIDED", raising=False)
    assert GUIDED_EVERY == 4 and not guided(0, 0)
    judged = judged_guided = 0
    for length in [3, 40, 7, 1, 12, 40, 2, 5, 9, 30, 4, 6] * 20:
        if guided(judged_guided, judged):
            judged_guided += length
        judged += length
    assert 0.2 < judged_guided / judged < 0.3, judged_guided / judged
    monkeypatch.setenv("HARNESS_UNGUIDED", "1")
    assert not guided(0, 100)


def test_a_harness_error_keeps_where_it_was_raised() -> None:
    """Hypothesis notes the strategy it was drawing from; the session mix's repr is thousands
    of characters and used to fill the whole reported tail, hiding the error."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harness.session.fuzz import describe_error

    @st.composite
    def breaks(draw: st.DrawFn) -> int:
        draw(st.integers())
        raise KeyError("raised by a compiler rule")

    @settings(max_examples=2, database=None)
    @given(breaks())
    def test(_: object) -> None:
        pass

    try:
        test()
    except KeyError as error:
        error.add_note("while generating from " + "a very long strategy repr " * 400)
        text = describe_error(error)
    assert "raised by a compiler rule" in text and "KeyError" in text and len(text) <= 4000


def test_a_driver_knows_what_its_sibling_saved(tmp_path, monkeypatch) -> None:
    """Each driver read the corpus once, at its start: a finding its sibling had just saved was
    stored again (a 90 s two-driver IREE session stored one known link failure twice)."""
    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.session import known
    from harness.session.fuzz import Driver, finding_entry
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("exp", b.input((2, 3), "float32")))
    case = Case(program, [np.ones((2, 3), np.float32)], ("cpu-loops",))
    finding = Finding("mismatch", ("cpu-loops",), "differential", "off by one", case)
    options = FuzzOptions(corpus=tmp_path, database=None, use_jax=False)
    first, second = Driver(options, 0), Driver(options, 1)
    try:
        assert first.is_new(finding) and second.is_new(finding)
        Corpus(tmp_path).save(finding_entry(case, finding))  # what the sibling's record_raw does
        assert second.known_as(finding) is not None
        assert not second.is_new(finding)
        assert len(second.known) == 1
        second.known_as(finding)
        assert len(second.known) == 1, "a file is read once"
        (tmp_path / "broken.json").write_text("{")
        other = Finding("wrong-shape", ("cpu-loops",), "differential", "other", case)
        assert second.is_new(other) and second.known.unreadable == {tmp_path / "broken.json"}
        monkeypatch.setattr(known, "load", lambda *a: pytest.fail("read again"))
        assert second.is_new(other), "an unreadable file is not read again"
    finally:
        first.close()
        second.close()


def test_two_drivers_that_save_one_bug_at_once_keep_one_record(tmp_path) -> None:
    """Both drivers' first cases met a planted jit key in a 30 s session, and each saved it
    (neither had seen the other's record when it asked): two entries of one bug. After its save,
    a driver gives way to a covering record saved before its own, in an order both agree on."""
    import os

    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.session.fuzz import Driver, finding_entry
    from harness.session.known import Known
    from strategies.model import ProgramBuilder

    def failing(op: str, backend: str) -> Finding:
        b = ProgramBuilder()
        case = Case(b.build(b.node(op, b.input((2, 3), "float32"))), [np.ones((2, 3))])
        return Finding("mismatch", (backend,), "differential", "off", case)

    options = FuzzOptions(corpus=tmp_path, database=None, use_jax=False)
    first, second = Driver(options, 0), Driver(options, 1)
    try:
        a, b = failing("exp", "cpu-loops@O0"), failing("exp", "cpu-loops@O3")
        assert first.is_new(a) and second.is_new(b)  # both ask before either saves
        (kept,) = first.record_raw(a.case, a)
        assert second.record_raw(b.case, b) == (), "the later record gives way"
        assert Corpus(tmp_path).files() == [kept] and not second.is_new(b)
        other = failing("exp", "cpu-blas@O0")  # another family: not the same bug
        assert second.record_raw(other.case, other) and len(Corpus(tmp_path).files()) == 2
    finally:
        first.close()
        second.close()
    # Both saved before either asked: exactly one gives way, also when the times are equal.
    for equal in (False, True):
        corpus = Corpus(tmp_path / f"race-{equal}")
        a, b = failing("exp", "cpu-loops@O0"), failing("exp", "cpu-loops")
        paths = [corpus.save(finding_entry(f.case, f))[1] for f in (a, b)]
        if equal:
            for path in paths:
                os.utime(path, ns=(10**18, 10**18))
        answers = [Known(corpus).saved_before(f, p) for f, p in zip((a, b), paths, strict=True)]
        assert sum(answer is not None for answer in answers) == 1, answers
    # A program-free failure (the @jit cache's) is stored and read back as one: a sibling's
    # record of it on another family's backend covers it (the schema once refused the field).
    corpus = Corpus(tmp_path / "program-free")
    a, b = failing("exp", "cpu-vector@O0"), failing("sin", "cpu-blas")
    a.kind = b.kind = "stale-specialization"
    a.oracle = b.oracle = "determinism"
    a.program_free = b.program_free = True
    corpus.save(finding_entry(a.case, a))
    known = Known(corpus)
    ((signature, entry),) = known.pairs
    assert signature.program_free and known.entry_of(b) is entry


def test_an_unminimized_record_names_the_known_bug_it_is(tmp_path, monkeypatch) -> None:
    """A raw record (saved before minimization) carried no attribution, so a sibling that met
    the same known upstream bug on another op while the first was being minimized stored it
    again (f64-libm-link on ``sin`` and on ``tanh`` in one 90 s two-driver IREE session)."""
    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus, load
    from harness.oracles.base import Finding
    from harness.run.task import BackendResult
    from harness.session.fuzz import Driver
    from harness.triage import known_issues
    from strategies.model import ProgramBuilder

    def known_issue(case, backend, message="", outputs=None):
        return {"name": "planted-libm"} if "undefined symbol" in message else None

    monkeypatch.setattr(known_issues, "known_issue", known_issue)

    def failing(op: str) -> Finding:
        b = ProgramBuilder()
        case = Case(b.build(b.node(op, b.input((2, 3), "float64"))), [np.ones((2, 3))])
        finding = Finding("pass-failure", ("cpu-loops",), "differential", "link", case)
        message = "undefined symbol: " + op
        finding.result = BackendResult("cpu-loops", "compiler-error", message=message)
        return finding

    options = FuzzOptions(corpus=tmp_path, database=None, use_jax=False)
    first, second = Driver(options, 0), Driver(options, 1)
    try:
        assert first.record_raw(failing("sin").case, failing("sin"))
        [path] = Corpus(tmp_path).files()
        assert load(path, tmp_path).evidence["known_issue"] == "planted-libm"
        assert not second.is_new(failing("tanh")), "the sibling's raw record covers it"
        other = failing("tanh")
        other.result = BackendResult("cpu-loops", "compiler-error", message="another error")
        assert second.is_new(other)
    finally:
        first.close()
        second.close()


def test_a_minimized_entry_of_another_dtype_says_what_it_was_found_as(tmp_path, monkeypatch):
    """Minimizing may end a program at an earlier output (another dtype, fewer ops): the raw
    record it replaces then has no entry that covers it. A CI run's recovery session saw one
    "lost" that way; the minimized entry now names the signature it was found as."""
    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.session.fuzz import Driver
    from harness.triage.signature import Signature
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("astype", b.node("exp", b.input((2, 3), "float32")), dtype="float64"))
    case = Case(program, [np.ones((2, 3), np.float32)], ("cpu-loops",))
    finding = Finding("mismatch", ("cpu-loops",), "differential", "planted exp", case)

    def check(candidate: Case) -> Finding | None:  # the planted bug: exp is wrong
        if "exp" in candidate.subject.ops:
            return Finding("mismatch", ("cpu-loops",), "differential", "planted exp", candidate)
        return None

    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    monkeypatch.setattr(driver, "predicate", lambda restrict: check)
    monkeypatch.setattr(driver, "artifacts_of", lambda case, finding: {})
    try:
        raw = driver.record_raw(case, finding)
        driver.finish(case, finding, raw)
    finally:
        driver.close()
    [entry] = [e for e in Corpus(tmp_path).entries()]
    assert entry.signature["dtype"] == "float32" and entry.signature["ops"] == ["exp"]
    found_as = Signature.from_dict(entry.minimization["found_as"])
    assert found_as == finding.signature and found_as.dtype == "float64"
    assert not Signature.from_dict(entry.signature).covers(finding.signature)
    later = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:  # the next session knows it: not recorded and minimized again
        assert later.known_as(finding) is not None and not later.is_new(finding)
    finally:
        later.close()

    driver = Driver(FuzzOptions(corpus=tmp_path / "same", database=None, use_jax=False), 0)
    monkeypatch.setattr(driver, "predicate", lambda restrict: check)
    monkeypatch.setattr(driver, "artifacts_of", lambda case, finding: {})
    b = ProgramBuilder()
    try:
        only_exp = Case(b.build(b.node("exp", b.input((2, 3), "float32"))), [case.inputs[0]])
        found = Finding("mismatch", ("cpu-loops",), "differential", "planted exp", only_exp)
        driver.finish(only_exp, found, driver.record_raw(only_exp, found))
    finally:
        driver.close()
    [entry] = [e for e in Corpus(tmp_path / "same").entries()]
    assert "found_as" not in entry.minimization, "only a changed signature is named"


def test_a_stop_during_triage_keeps_the_raw_record_not_its_attribution(tmp_path, monkeypatch):
    """A ^C to the session's group kills the triage tools the driver runs (mlir-opt, llc): the
    attribution then reads a tool's SIGINT as its crash. A finding whose minimization or triage
    a stop interrupted is not saved as minimized; its raw record stays for the next session."""
    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.run import isolation
    from harness.run.runner import Stopped
    from harness.session import fuzz
    from harness.session.fuzz import Driver
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((2, 3), "float32"))), [np.ones((2, 3), np.float32)])
    finding = Finding("mismatch", ("cpu-loops",), "differential", "planted exp", case)

    class Attribution:
        def to_dict(self) -> dict:
            return {"layer": "mlir", "detail": "mlir-opt crashed (signal 2, SIGINT)"}

    class Killed:  # the group's ^C reaches mlir-opt mid-attribution, and the driver
        def __init__(self, runner) -> None:
            pass

        def attribute(self, case, finding) -> Attribution:
            isolation.request_stop()
            return Attribution()

    monkeypatch.setattr(isolation, "_STOP", {"requested": False})
    monkeypatch.setattr(fuzz, "Attributor", Killed)
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    # (the case fails again: one that does not is never attributed)
    monkeypatch.setattr(driver, "predicate", lambda restrict: lambda candidate: finding)
    monkeypatch.setattr(driver, "artifacts_of", lambda case, finding: {})
    try:
        raw = driver.record_raw(case, finding)
        with pytest.raises(Stopped):
            driver.finish(case, finding, raw)
    finally:
        monkeypatch.setattr(isolation, "_STOP", {"requested": False})
        driver.close()
    [entry] = Corpus(tmp_path).entries()
    assert entry.minimization["state"] == "unminimized" and "attribution" not in entry.evidence
    assert [p for p in raw] == [entry.path]


def test_a_finding_that_fails_to_save_is_a_harness_error(tmp_path, monkeypatch) -> None:
    """Saving a finding's raw record raised (a reproducer that could not be printed) while the
    round's target was already set: the error vanished, the case counted as a finding, and a
    10-minute session ended with 420 instances, no entry and no error."""
    from harness.oracles.base import Finding
    from harness.session.fuzz import Driver

    events: list[tuple[str, object]] = []
    options = FuzzOptions(
        corpus=tmp_path, database=None, use_jax=False, rounds=1, examples_per_round=3,
        mix="programs",
    )  # fmt: skip
    driver = Driver(options, 0)

    def judge(case, siblings=()):
        return [Finding("mismatch", ("cpu-loops",), "differential", "planted", case)]

    def record_raw(case, finding):
        raise RuntimeError("planted: the record cannot be written")

    monkeypatch.setattr(driver, "judge", judge)
    monkeypatch.setattr(driver, "record_raw", record_raw)
    monkeypatch.setattr(driver, "publish", lambda kind, payload: events.append((kind, payload)))
    try:
        driver.run()
    finally:
        driver.close()
    errors = [payload for kind, payload in events if kind == "harness-error"]
    assert errors and "planted: the record cannot be written" in str(errors[0]), events


def test_a_flaky_replay_of_findings_is_not_a_harness_error() -> None:
    """Hypothesis raises ``FlakyFailure`` (an exception group) when a replay while shrinking
    meets another finding than the first run did; its members are the session's own signals,
    so it is no harness error (three of them had stopped a driver of a clean session)."""
    from hypothesis.errors import FlakyFailure

    from harness.session.fuzz import _Found, _only_found, _ShrinkBudgetSpent

    flaky = FlakyFailure("inconsistent", [_Found("wrong-error"), _ShrinkBudgetSpent()])
    assert _only_found(flaky) and _only_found(_Found("x"))
    assert not _only_found(FlakyFailure("inconsistent", [_Found("x"), KeyError("bug")]))
    assert not _only_found(RuntimeError("bug"))


def test_an_invalid_case_is_respelled_only_where_numpy_rejects_it_alike(monkeypatch) -> None:
    """The error-path oracle asks NumPy in the default spelling; a spelling that makes the
    violation valid (``x.transpose()`` for an empty permutation, as the method render first
    printed it) would make the compiler's correct acceptance a finding."""
    import dataclasses

    import numpy as np

    from compiler import primitives
    from harness.case import Case
    from harness.session.generate import _rejected_alike
    from strategies.model import InvalidProgram, ProgramBuilder, Ref
    from strategies.model.types import RawEquation

    b = ProgramBuilder()
    x = b.input((3,), "float32")
    program = b.build(b.node("exp", x))
    node = RawEquation("permute_dims", (Ref("node", 0),), {"axes": ()})
    invalid = InvalidProgram(program, "not_a_permutation", node, program.inputs)
    case = Case(invalid, [np.ones(3, np.float32)])
    assert _rejected_alike(case, case.respelled("methods"))
    assert _rejected_alike(case, case.respelled("numpy"))
    loose = dataclasses.replace(
        primitives.get("permute_dims"), method=lambda a, attrs: f"{a[0]}.transpose()"
    )
    monkeypatch.setitem(primitives.PRIMITIVES, "permute_dims", loose)
    assert not _rejected_alike(case, case.respelled("methods"))


def test_a_focused_case_whose_items_are_done_is_skipped(tmp_path) -> None:
    """Hypothesis replays near-copies of recent examples: a focused case whose focus items all
    left the focus since its round began is not run (``Driver.stale_focus``), counted as skipped;
    a plain case with the same program is run."""
    import numpy as np

    from harness.case import Case
    from harness.session.fuzz import Driver
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x, y = b.input((2, 3), "int32"), b.input((2, 3), "int32")
    program = b.build(b.node("astype", b.node("greater", x, y), dtype="int32"))
    inputs = [np.zeros((2, 3), np.int32), np.ones((2, 3), np.int32)]
    focused = Case(program, inputs, ("cpu-loops",), origin="focus/ordinary")
    plain = Case(program, inputs, ("cpu-loops",), origin="programs/ordinary")
    focus = (("greater", "int32"), ("astype", "bool->int32"), ("matmul", "int32"))
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:
        assert not driver.stale_focus(focused, focus)
        driver.note_exercised({("greater", "int32")})
        driver.note_exercised({("greater", "int32")})
        assert not driver.stale_focus(focused, focus)  # its cast is still in focus
        driver.exercised.add(("astype", "bool->int32"))
        assert driver.stale_focus(focused, focus)
        assert not driver.stale_focus(plain, focus)
        # a focused case exercising none of its round's items (its first steps ended up dead)
        assert driver.stale_focus(focused, (("matmul", "int32"),))
        # stale because its items were done meanwhile (the round ends), not because it has none
        assert driver.focus_went_stale(focused, focus)
        assert not driver.focus_went_stale(focused, (("matmul", "int32"),))
        assert not driver.focus_went_stale(plain, focus)
    finally:
        driver.close()


def test_a_round_ends_when_its_focus_goes_stale(tmp_path, monkeypatch) -> None:
    """A round's strategy is fixed, so once its focus items are done Hypothesis goes on drawing
    mutants of its focused cases, each then skipped (66 of a 40 s driver's 190 draws): the
    first case whose focus went stale ends an unguided round (nothing is judged in it after),
    and the next one draws from the items left. A guided round runs to its end (its target
    phase comes last). Every item still gets done (the give-up counts rounds without
    progress)."""
    import harness.session.fuzz as fuzz
    from harness.session import focus
    from harness.session.fuzz import Driver

    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False, seed=4), 0)
    judged: list = []
    rounds: list[dict] = []  # each round: guided, its cases gone stale, cases judged after one
    real_guided, real_went_stale = fuzz.guided, driver.focus_went_stale

    def judge(case, siblings=()):
        judged.append(case)
        rounds[-1]["after"] += bool(rounds[-1]["stale"])
        driver.note_exercised(focus.exercised_items(case, True))
        return []

    def guided(judged_guided: int, judged: int) -> bool:
        rounds.append({"guided": real_guided(judged_guided, judged), "stale": 0, "after": 0})
        return rounds[-1]["guided"]

    def focus_went_stale(case, items) -> bool:
        went = real_went_stale(case, items)
        rounds[-1]["stale"] += went
        return went

    driver.judge, driver.focus_went_stale = judge, focus_went_stale
    monkeypatch.setattr(fuzz, "guided", guided)

    def enough() -> bool:  # 150 cases, and on until an unguided round's focus went stale
        went = any(r["stale"] and not r["guided"] for r in rounds)
        return len(judged) >= (150 if went else 600)

    monkeypatch.setattr(fuzz, "stop_requested", enough)
    try:
        with contextlib.suppress(fuzz.Stopped):
            driver.run()
        unguided = [r for r in rounds if not r["guided"]]
        assert any(r["guided"] for r in rounds)
        assert sum(r["stale"] for r in unguided) > 0
        assert all(r["stale"] <= 1 and r["after"] == 0 for r in unguided), rounds
        assert driver.exercised and not driver.given_up
    finally:
        driver.close()


def test_a_round_ended_early_saves_nothing_to_the_example_database(tmp_path) -> None:
    """Hypothesis saves the case of any exception that ends a test: each ended round's stale
    case would be stored, and every later round, of the session and of the next ones, would
    replay them all first. The session's database drops saves while a round ends (``_mutable``)
    and passes everything else on."""
    from hypothesis.database import InMemoryExampleDatabase

    from harness.session.fuzz import _mutable

    assert _mutable(None) is None
    inner = InMemoryExampleDatabase()
    database = _mutable(inner)
    database.save(b"k", b"kept")
    database.muted = True
    database.save(b"k", b"stale")
    database.muted = False
    database.save(b"k", b"later")
    assert sorted(database.fetch(b"k")) == sorted(inner.fetch(b"k")) == [b"kept", b"later"]
    database.move(b"k", b"j", b"later")
    database.delete(b"k", b"kept")
    assert list(inner.fetch(b"k")) == [] and list(inner.fetch(b"j")) == [b"later"]


@pytest.mark.slow
def test_some_random_programs_have_rows_past_the_vector_planners_whole_row_limit() -> None:
    """Sides of at most 6 (65 in the vector shape regime) never reached cpu-vector's chunked
    (masked) reductions, where MLIR's wrong neutral for a masked max (llvm PR #222275) hid; a
    long-row program (rank 1, sides up to LONG_SIDE) is one random program in eight."""
    from hypothesis import HealthCheck, Phase, find, settings

    from compiler.vector.schedule import REDUCTION_MAX
    from harness.case import CPU_BACKENDS
    from harness.session.generate import LONG_SIDE, program_cases

    assert LONG_SIDE > REDUCTION_MAX
    long_row = find(
        program_cases(CPU_BACKENDS),
        lambda case: any(a.ndim == 1 and a.shape[0] > REDUCTION_MAX for a in case.inputs),
        settings=settings(
            max_examples=2000, phases=[Phase.generate], database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )  # fmt: skip
    assert long_row.origin.startswith("programs/")


def _drawn_case(condition: Callable[[Any], bool]) -> Any:
    """A default session's case (``generate.cases`` on the CPU backends, programs only) that
    meets ``condition``, found among up to 3000 draws."""
    from hypothesis import HealthCheck, Phase, find, settings

    from harness.case import CPU_BACKENDS
    from harness.session.generate import cases

    quick = settings(
        max_examples=3000, phases=[Phase.generate], database=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    return find(cases(CPU_BACKENDS, mix="programs"), condition, settings=quick)


def test_a_case_whose_int32_arithmetic_may_wrap_always_runs_the_optimized_targets() -> None:
    """LLVM reasons from what an integer op claims about overflow (nsw, poison), so only -O3
    code can be wrong where NumPy's int32 wraps: a program with int32 ``+``, ``-``, ``*``,
    negation or abs runs the sampled -O3 targets every time (its siblings bring the extreme
    values); other cases keep the coin's share."""
    import numpy as np

    from harness.case import CPU_BACKENDS, SAMPLED_BACKENDS, Case
    from harness.session.generate import wraps
    from strategies.model import ProgramBuilder

    def program(op: str, dtype: str) -> object:
        b = ProgramBuilder()
        x = b.input((3,), dtype)
        return b.build(b.node("maximum", b.node(op, x, x), x))

    big = np.array([2**31 - 1, 5, -3], np.int32)
    assert wraps(Case(program("add", "int32"), [big], CPU_BACKENDS))
    assert wraps(Case(program("multiply", "int32"), [-big], CPU_BACKENDS))
    assert not wraps(Case(program("minimum", "int32"), [big], CPU_BACKENDS))
    assert not wraps(Case(program("add", "float32"), [big.astype(np.float32)], CPU_BACKENDS))
    b = ProgramBuilder()  # an int32 sum, given dtype=np.int32, adds modulo 2**32
    summed = b.build(b.node("sum", b.input((3,), "int32"), dtype="int32"))
    assert wraps(Case(summed, [big], CPU_BACKENDS))
    b = ProgramBuilder()
    averaged = b.build(b.node("mean", b.input((3,), "int32")))  # float64: it adds in float64
    assert not wraps(Case(averaged, [big], CPU_BACKENDS))

    wrapping = _drawn_case(wraps)
    assert set(SAMPLED_BACKENDS) <= set(wrapping.backends)
    assert len(set(wrapping.backends)) == len(wrapping.backends)
    plain = _drawn_case(
        lambda case: not wraps(case) and not set(SAMPLED_BACKENDS) & set(case.backends)
    )
    assert tuple(plain.backends) == CPU_BACKENDS


def test_a_power_of_a_base_llvm_rewrites_always_runs_the_optimized_targets() -> None:
    """LLVM's library call simplifier rewrites ``pow(8.0, x)`` as ``exp2(3.0 * x)`` (355 ulps
    off at -O3), only in optimized pipelines: a program raising one of ``SPECIAL_BASES`` (a
    Python or a NumPy scalar) runs the sampled -O3 targets every time."""

    from harness.case import CPU_BACKENDS, SAMPLED_BACKENDS, Case
    from harness.session.generate import rewritten_call
    from strategies.model import Const, ProgramBuilder

    def case(base: object, exponent: object) -> Case:
        b = ProgramBuilder()
        x = b.input((3,), "float64")
        program = b.build(b.node("power", x if base is None else base, x if base else exponent))
        return Case(program, [np.ones(3)], CPU_BACKENDS)

    assert rewritten_call(case(Const(8.0), None)) and rewritten_call(case(Const(0.125), None))
    assert rewritten_call(case(Const(2.0, "float32"), None))
    assert not rewritten_call(case(Const(3.0), None))
    assert not rewritten_call(case(None, Const(8.0)))  # an exponent of 8: no rewrite of pow's
    assert set(SAMPLED_BACKENDS) <= set(_drawn_case(rewritten_call).backends)


def test_the_sampled_share_runs_the_target_users_get_by_default_as_shipped() -> None:
    """What a user's ``@jit`` program runs unless it names a target (``cpu``: cpu-vector at
    LLVM -O2) is among the shipped targets a default session samples, uninstrumented, as users
    get it, beside cpu-blas and cpu-vector at -O3 (which had stood for it: no session ran the
    default itself)."""
    from compiler import backends as registry
    from compiler.pipelines import DEFAULT_TARGET
    from harness.case import SAMPLED_BACKENDS, instrumented_backend

    assert DEFAULT_TARGET in SAMPLED_BACKENDS and not instrumented_backend(DEFAULT_TARGET)
    levels = {registry.get(name).target.opt_level for name in SAMPLED_BACKENDS}
    assert levels == {2, 3}, levels


def test_a_share_of_default_cases_also_runs_the_gpu_lowering_emulated() -> None:
    """The GPU layer is met by default sessions: GPU_SHARE of the cases also run on gpu-emulated
    (where its passes exist), never a jit sequence or an invalid program (their oracles call
    CPU targets only); cases of other backend lists are left as they are."""
    import pytest
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    from compiler import backends
    from harness.case import CPU_BACKENDS, GPU_SAMPLED
    from harness.session.generate import cases

    if backends.get(GPU_SAMPLED).unavailable():
        pytest.skip(backends.get(GPU_SAMPLED).unavailable())
    quick = settings(
        max_examples=400, phases=[Phase.generate], database=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    on_gpu = find(cases(CPU_BACKENDS), lambda case: GPU_SAMPLED in case.backends, settings=quick)
    assert on_gpu.backends.count(GPU_SAMPLED) == 1
    with pytest.raises(NoSuchExample):
        find(
            cases(CPU_BACKENDS),
            lambda case: GPU_SAMPLED in case.backends
            and (case.sequence is not None or case.invalid is not None),
            settings=quick,
        )
    with pytest.raises(NoSuchExample):
        find(
            cases(("cpu-loops",)),
            lambda case: GPU_SAMPLED in case.backends,
            settings=quick,
        )


def test_shares_drawn_as_a_last_face_are_the_shares_they_say() -> None:
    """A share drawn as "the last face of a die" (the targets as shipped on SAMPLED_SHARE of
    the default cases, the GPU, the triage variants, layouts, spellings) runs at that share:
    Hypothesis's small integer ranges favour 0 and starve the last value, so the -O3 targets
    ran on 13.5% of 600 cases where a quarter was meant, gpu-emulated on 4.8%."""
    from collections import Counter

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS, SAMPLED_BACKENDS, SAMPLED_SHARE, Case
    from harness.session.generate import cases
    from strategies import coin

    faces: Counter[int] = Counter()
    shipped = {"cases": 0, "on": 0}

    # Four streams pooled: Hypothesis follows each fresh case with mutants of it, so one stream
    # of 600 held 13% to 27% of its cases on the shipped targets (eight seeds), the coin fair.
    for stream in (5, 6, 7, 8):

        @seed(stream)
        @settings(
            max_examples=600, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(coin(8), cases(CPU_BACKENDS))
        def collect(face: int, case: Case) -> None:
            faces[face] += 1
            if case.carries_run:  # (a jit sequence or a GPT-2 model runs on one backend)
                return
            shipped["cases"] += 1
            shipped["on"] += all(b in case.backends for b in SAMPLED_BACKENDS)

        collect()
    assert set(faces) == set(range(8)) and 0.08 < faces[7] / 2400 < 0.25, faces
    share = shipped["on"] / shipped["cases"]
    assert SAMPLED_SHARE * 0.75 < share < SAMPLED_SHARE * 1.6, shipped


def test_a_share_of_default_cases_also_runs_one_triage_variant() -> None:
    """TRIAGE_SHARE of the default cases also run on one triage variant (attribution asks
    them: +poison-checks, +generic-cpu, +mlir-runtime, +copied-gathers), judged like any
    backend; never a jit sequence or an invalid program, nor a case of other backends. A
    held-out plant in the poison checks went unseen: no session ran a variant."""
    import pytest
    from hypothesis import HealthCheck, Phase, find, given, seed, settings
    from hypothesis.errors import NoSuchExample

    from harness.case import CPU_BACKENDS, TRIAGE_SAMPLED
    from harness.session.generate import cases

    seen: dict[str, int] = {}
    counted = {"cases": 0}
    # Pooled over seeds: a seed's draws are not independent (Hypothesis's generate phase
    # mutates its own examples, coins included), and one stream of 600 held 11.
    for stream in (5, 6, 7):

        @seed(stream)
        @settings(
            max_examples=300, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(CPU_BACKENDS))
        def collect(case) -> None:  # noqa: ANN001
            counted["cases"] += 1
            variants = [b for b in case.backends if b in TRIAGE_SAMPLED]
            assert len(variants) <= 1
            for variant in variants:
                assert case.sequence is None and case.invalid is None
                seen[variant] = seen.get(variant, 0) + 1

        collect()
    share = sum(seen.values()) / counted["cases"]
    assert 0.02 < share < 0.15 and len(seen) >= 4, (seen, counted)
    quick = settings(
        max_examples=300, phases=[Phase.generate], database=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    with pytest.raises(NoSuchExample):
        find(
            cases(("cpu-loops",)),
            lambda case: any(b in TRIAGE_SAMPLED for b in case.backends),
            settings=quick,
        )
    # Every conversion sweep to integers runs a +poison-checks variant (their range's ends are
    # what the checks judge).
    swept = {"sweeps": 0}

    @seed(6)
    @settings(
        max_examples=150, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(CPU_BACKENDS, focus=(("astype", "sweep:float32->int32:truncation"),)))
    def sweeps(case) -> None:  # noqa: ANN001
        if case.origin == "sweep/truncation":
            swept["sweeps"] += 1
            assert any("+poison-checks@" in b for b in case.backends), case.backends

    sweeps()
    assert swept["sweeps"] >= 3, swept


def test_default_sessions_also_run_graph_numpy_and_drawn_mlir_variants() -> None:
    """A share of a default session's cases also run on graph-numpy (attribution's reference)
    and on a drawn, concrete mlir:* variant at -O0: held-out plants there survived every 60 s
    session, which never ran them. Never a jit sequence or an invalid program; a session that
    names its backends gets none."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from compiler import mlir_variants
    from harness.case import CPU_BACKENDS
    from harness.session.generate import cases

    counts = {"cases": 0, "graph-numpy": 0, "mlir": 0, "gathers": 0}

    @seed(5)
    @settings(
        max_examples=300, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(CPU_BACKENDS))
    def collect(case) -> None:  # noqa: ANN001
        counts["cases"] += 1
        one = case.sequence is None and case.invalid is None and "gpt2" not in case.extra
        if one and "gather" in case.program.ops:
            # its out-of-range ids are refused by each backend's own check, graph-numpy's too
            counts["gathers"] += 1
            assert "graph-numpy" in case.backends, case.backends
        variants = [b for b in case.backends if b.startswith(mlir_variants.PREFIX)]
        assert len(variants) <= 1 and not any(map(mlir_variants.is_draw, variants)), variants
        assert all(v.endswith("@O0") and "known-broken" not in v for v in variants), variants
        gateway = "graph-numpy" in case.backends or variants
        assert not gateway or (case.sequence is None and case.invalid is None), case.backends
        counts["graph-numpy"] += "graph-numpy" in case.backends
        counts["mlir"] += bool(variants)

    collect()
    assert 0.1 < counts["graph-numpy"] / counts["cases"] < 0.4 and counts["gathers"], counts
    assert 0.03 < counts["mlir"] / counts["cases"] < 0.25, counts

    @seed(5)
    @settings(
        max_examples=100, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(("cpu-loops@O0", "cpu-blas@O0")))
    def named(case) -> None:  # noqa: ANN001
        assert set(case.backends) <= {"cpu-loops@O0", "cpu-blas@O0"}, case.backends

    named()


def test_the_cases_focused_on_a_views_layout_also_run_the_gpu_lowering() -> None:
    """A case focused on a view's layout, of one op on views, or reading a reversed view, runs
    on gpu-emulated every time, not one in eight: the GPU lowering reads layouts its own way
    (a reversed read is a memref.load), and a planted bug there survived 4 of 4 60 s sessions
    while view items had ~3 GPU cases; the other cases keep their share."""
    import pytest
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from compiler import backends
    from harness.case import CPU_BACKENDS, GPU_SAMPLED
    from harness.session.focus import viewed
    from harness.session.generate import (
        _sampled_gpu,
        cases,
        reads_reversed,
        strided_matmul_cases,
        strided_op_cases,
    )

    if backends.get(GPU_SAMPLED).unavailable():
        pytest.skip(backends.get(GPU_SAMPLED).unavailable())
    on_gpu: list[bool] = []
    others: list[bool] = []
    reversed_on_gpu: list[bool] = []

    @seed(5)
    @settings(
        max_examples=150, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(CPU_BACKENDS, focus=(("add", viewed("reversed")),)))
    def collect(case) -> None:
        if case.origin.startswith("focus/views/"):
            on_gpu.append(GPU_SAMPLED in case.backends)
        elif case.sequence is None and case.invalid is None and not reads_reversed(case):
            others.append(GPU_SAMPLED in case.backends)

    collect()
    assert len(on_gpu) >= 20 and all(on_gpu), on_gpu
    # The others keep their share (one in eight): not all of them. (At least one of them was
    # asserted too, until a seeded stream drew none of 58 in CI: Hypothesis's generate phase
    # mutates its own examples, coins included, so a seed's draws are not independent.)
    assert len(others) >= 40 and sum(others) <= 0.3 * len(others), others

    @seed(5)
    @settings(
        max_examples=60, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(
        _sampled_gpu(strided_op_cases(CPU_BACKENDS))
        | _sampled_gpu(strided_matmul_cases(CPU_BACKENDS))
    )
    def collect_reversed(case) -> None:  # (one op on views; any case reading a reversed one)
        if case.origin.startswith("strided-op/"):
            on_gpu.append(GPU_SAMPLED in case.backends)
        elif reads_reversed(case):
            reversed_on_gpu.append(GPU_SAMPLED in case.backends)

    collect_reversed()
    assert len(reversed_on_gpu) >= 5 and all(reversed_on_gpu), reversed_on_gpu
    assert all(on_gpu), on_gpu


def test_an_interrupted_sessions_unminimized_entries_count_as_added() -> None:
    """A session stopped during minimization saved its finding (unminimized) but never reported
    it minimized: its summary said "corpus entries added 0" with the entry on disk."""
    from harness.run.runner import Stats
    from harness.session.parent import added
    from harness.session.progress import summary_table

    timeline = [
        {"path": "a.json", "new": True},  # saved, then interrupted
        {"path": "b.json", "new": True, "minimized": True, "kept": True},
        {"path": "c.json", "new": True, "minimized": True, "kept": False},  # a known bug after all
        {"path": "d.json", "new": False},  # another driver saved it first
        {"path": "e.json", "new": True, "regression": True},  # a fixed entry failing again
    ]
    assert added(timeline) == {"entries_added": 2, "entries_unminimized": 1}
    summary = {
        "seconds": 10.0, "options": {"seed": 1, "workers": 1}, "stats": Stats().to_dict(),
        "findings": [], "harness_errors": [], **added(timeline),
    }  # fmt: skip
    table = summary_table(summary)
    assert "corpus entries added         2" in table
    assert "left unminimized             1" in table


def test_a_focused_program_exercises_the_item_it_was_drawn_for() -> None:
    """Each (op, dtype) item is done by the program a focused case draws for it: an int32
    true division computes in float64, and was counted as ("divide", "float64") only, so
    ("divide", "int32") stayed in focus all session with half of a driver's cases drawn for it
    and skipped (3590 of 1932 judged in a 5-minute two-driver session)."""
    from compiler import primitives
    from harness.session.focus import exercised_pairs
    from strategies import op_dtype_pairs
    from strategies.model import ProgramBuilder

    checked = 0
    for op, dtype in op_dtype_pairs():
        if primitives.get(op).kind not in ("binary", "compare"):
            continue
        b = ProgramBuilder()
        x, y = b.input((2, 3), dtype), b.input((2, 3), dtype)
        out = b.node(op, x, y)
        if primitives.get(op).kind == "compare":
            out = b.node("astype", out, dtype="float32")
        assert (op, dtype) in exercised_pairs(b.build(out)), (op, dtype)
        checked += 1
    assert checked > 50


def test_a_focus_no_case_exercises_is_given_up(tmp_path, monkeypatch) -> None:
    """Rounds of focused cases that exercise no new item: the driver drops those items (they
    would take half of its cases, each drawn and skipped, for the rest of the session)."""
    import harness.session.fuzz as fuzz
    from harness.session import focus
    from harness.session.fuzz import Driver

    never = ("exp", "float32")
    monkeypatch.setattr(focus, "focus_items", lambda: (never,))
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False, seed=2), 0)
    judged, given_up_at = [], []

    def judge(case, siblings=()):
        if driver.given_up and not given_up_at:
            given_up_at.append(len(judged))
        judged.append(case)
        driver.note_exercised(focus.exercised_items(case, True) - {never})
        return []

    driver.judge = judge
    # 40 cases after the give-up (drivers of seeds 1-8 gave up within 64-100 cases)
    after = lambda: bool(given_up_at) and len(judged) > given_up_at[0] + 40  # noqa: E731
    monkeypatch.setattr(fuzz, "stop_requested", lambda: len(judged) >= 400 or after())
    try:
        with contextlib.suppress(fuzz.Stopped):
            driver.run()
        stats = driver.total
        stats.merge(driver.runner.stats.to_dict())
        assert given_up_at and never in driver.given_up and driver.focus_pairs() == ()
        assert stats.focus_given_up == 1
        assert any(c.origin.startswith("focus/") for c in judged[: given_up_at[0]])
        # the rounds after the give-up focus nothing
        assert not any(c.origin.startswith("focus/") for c in judged[given_up_at[0] :])
    finally:
        driver.close()


def test_a_finding_its_case_does_not_reproduce_alone_says_so(tmp_path, monkeypatch) -> None:
    """A 10-minute mlir:* campaign (seed 2404) stored a crash of a float64 ``x.T - y`` whose
    stderr was a bfloat16 vector abort: that case passes alone, in a fresh worker. When nothing
    smaller fails, the driver runs the case itself again; the entry then says it was not
    reproduced, and replay leaves it unjudged instead of calling it fixed. Its layer is the
    process's state, not one its variants name (they pass too: a module cached under a
    recycled key failed a later program, and the error-path rule named the frontend)."""
    import numpy as np

    from harness.case import Case
    from harness.corpus import Corpus
    from harness.oracles.base import Finding
    from harness.replay import classify
    from harness.session import fuzz
    from harness.triage.export import owner
    from strategies.model import ProgramBuilder

    class Nobody:
        def __init__(self, runner) -> None:
            pass

        def attribute(self, case, finding):
            return type("A", (), {"to_dict": lambda self: {"layer": "frontend"}})()

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((2, 3), "float32"))), [np.ones((2, 3), "f4")],
                ("cpu-loops@O0",))  # fmt: skip
    finding = Finding("mismatch", ("cpu-loops@O0",), "differential", "planted", case)
    driver = fuzz.Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    try:
        monkeypatch.setattr(fuzz, "Attributor", Nobody)
        monkeypatch.setattr(driver, "artifacts_of", lambda case, finding: {})
        monkeypatch.setattr(driver, "predicate", lambda finding: lambda candidate: None)
        driver.finish(case, finding)
        [entry] = list(Corpus(tmp_path).entries())
        assert entry.minimization["reproduced"] is False
        assert "not reproduced" in entry.detail
        assert classify(entry, driver.runner).outcome == "not-run"
        attribution = entry.evidence["attribution"]
        assert attribution["layer"] == "process-state", attribution
        assert "between compiles" in owner(attribution["layer"])
    finally:
        driver.close()


def test_a_case_judged_before_is_not_judged_again(tmp_path, monkeypatch) -> None:
    """Hypothesis follows a fresh example with mutants of it, often the very same case (17 of
    224 in a 60 s session; a jit sequence ran three times in a row): a driver judges each case
    once (``Driver.repeated``) and counts the repeats it skipped. The same program on inputs in
    another layout is another case."""
    import numpy as np

    import harness.session.fuzz as fuzz
    from harness.case import Case
    from harness.session.fuzz import Driver
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    program = b.build(b.node("negative", b.input((2, 3), "float32")))
    case = Case(program, [np.arange(6, dtype=np.float32).reshape(2, 3)], ("cpu-loops",))
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False, seed=3), 0)
    judged: list = []

    def judge(case, siblings=()):
        judged.append(case.digest())
        return []

    driver.judge = judge
    monkeypatch.setattr(fuzz, "stop_requested", lambda: len(judged) >= 100)
    try:
        assert not driver.repeated(case)
        driver.note_judged(case)
        assert driver.repeated(Case.from_dict(case.to_dict()))
        assert not driver.repeated(case.with_layouts(["fortran"]))
        with contextlib.suppress(fuzz.Stopped):
            driver.run()
        stats = driver.total
        stats.merge(driver.runner.stats.to_dict())
        assert len(judged) == len(set(judged)) == 100
        assert stats.repeats_skipped > 0
    finally:
        driver.close()


@pytest.mark.parametrize(
    ("oracle", "kind", "forced"),
    [
        ("spelling[methods]", "wrong-error", ("spelling",)),
        ("metamorphic:transpose-roundtrip", "metamorphic", ("metamorphic:transpose-roundtrip",)),
        ("differential", "mismatch", ()),
        ("determinism", "retrace", ("determinism",)),
    ],
)
def test_the_minimizer_runs_the_oracle_that_found_the_failure(
    oracle: str, kind: str, forced: tuple[str, ...], tmp_path
) -> None:
    """A candidate is judged with the finding's own oracle forced, as a replay forces it: a
    spelling finding is named ``spelling[<spelling>]``, not a registered name, and its oracle
    was left out, so no such finding was ever minimized or reproduced alone (a planted int-shape
    bug was stored "not reproduced" and replayed as "not-run")."""
    import numpy as np

    from harness.case import Case
    from harness.oracles.base import Finding, Judgement
    from harness.session.fuzz import Driver
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float32")
    case = Case(b.build(b.node("reshape", x, shape=(6,))), [np.ones((2, 3), np.float32)])
    driver = Driver(FuzzOptions(corpus=tmp_path, database=None, use_jax=False), 0)
    asked: list[tuple[str, ...] | None] = []

    class Runner:
        def evaluate(self, candidate, only=None, probe=False):
            asked.append(only)
            return Judgement()

    driver.runner.close()  # never started: its worker's stderr file goes
    driver.runner = Runner()
    finding = Finding(kind, ("cpu-loops",), oracle, "planted", case)
    assert driver.predicate(finding)(case) is None
    assert asked == [forced]


def test_strided_op_cases_reach_the_gathers_stage_and_agree_with_numpy() -> None:
    """strided-op cases (``MIX_PERCENT``) gather from strided views, which cpu-vector's
    ``gathers`` stage rewrites; random programs had made no such case in 1500, so a planted
    crash there went unseen for 90 s (found at 31 s since), and the compiled kernels agree with
    NumPy on them."""
    import numpy as np
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from compiler import jit
    from harness.case import CPU_BACKENDS
    from harness.session.generate import strided_op_cases

    gathers = []

    @seed(5)
    @settings(
        max_examples=120, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(strided_op_cases(CPU_BACKENDS))
    def collect(case) -> None:
        nodes = case.program.nodes
        tables = [n.args[0] for n in nodes if n.op == "gather"]
        viewed = [t for t in tables if t.kind == "node" and nodes[t.index].op == "index"]
        if viewed and len(gathers) < 8:
            gathers.append(case)

    collect()
    assert len(gathers) >= 4, len(gathers)
    rewritten = 0
    for case in gathers:
        function = case.program.as_function()
        try:
            want = np.asarray(case.program.as_function(np)(*case.inputs))
        except ValueError:  # an out-of-range id, drawn on purpose: the compiled one raises too
            with pytest.raises(ValueError):
                jit(function, target="cpu-vector")(*case.inputs)
            continue
        compiled = jit(function).compile(*case.inputs, target="cpu-vector")
        stages = compiled.artifacts.stages
        rewritten += stages["gathers"] != stages["bufferized"]
        got = np.asarray(jit(function, target="cpu-vector")(*case.inputs))
        np.testing.assert_array_equal(got, want)  # a gather copies: exact
    assert rewritten >= 1, rewritten


def test_strided_op_cases_draw_only_the_ops_the_table_has(monkeypatch) -> None:  # noqa: ANN001
    """``STRIDED_OPS`` names ops; a table without one of them (a plugin's, or a mutant that
    drops a registration: the mutation run's m23 of seed 4603) still gets its strided-op cases,
    of the ops it has, where every such case had raised "unknown ops ['gather']"."""
    from hypothesis import HealthCheck, given, settings

    from harness.case import CPU_BACKENDS
    from harness.session import generate
    from strategies.gen import programs as program_strategies

    kept = tuple(op for op in program_strategies.generation_order() if op != "gather")
    monkeypatch.setattr(generate, "generation_order", lambda: kept)
    monkeypatch.setattr(program_strategies, "generation_order", lambda: kept)
    ops: set[str] = set()

    @settings(max_examples=30, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(generate.strided_op_cases(CPU_BACKENDS))
    def collect(case) -> None:  # noqa: ANN001
        ops.update(case.program.ops)

    collect()
    assert ops and "gather" not in ops, ops


def test_view_items_give_an_op_of_each_kind_views_of_each_layout() -> None:
    """(op, "views:LAYOUT") focus items: an op of each primitive kind (and the row composites)
    on views of inputs of each layout (offset and strided, reversed, transposed), early in
    every session; a case whose op reads a view of that layout exercises the item. Three
    planted bugs of cpu-vector's gathers stage (no strides, a zero stride, the view's offset
    dropped) each survived a 30 s session; the last, 60 s sessions on 3 seeds of 3 while one
    item took views of any layout (3 in 10 past the first element and strided)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import VIEWED, exercised_items, focus_items, view_ops, viewed
    from harness.session.generate import cases
    from strategies.gen.programs import VIEW_LAYOUTS

    items = tuple(i for i in focus_items() if i[1].startswith(VIEWED))
    wanted = {
        (op, viewed(layout)) for op in ("gather", "sum", "softmax") for layout in VIEW_LAYOUTS
    }
    assert wanted <= set(items), items
    assert {op for op, _ in items} <= set(view_ops())

    def focused_cases(item: tuple[str, str]) -> list[bool]:
        """For each case focused on ``item`` of 160 drawn: whether it exercises the item (80
        held as few as 2 focused cases on one stream of the mix)."""
        focused: list[bool] = []

        @seed(2)
        @settings(
            max_examples=160, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(focus=(item,)))
        def collect(case) -> None:
            if case.origin.startswith("focus/views/"):
                focused.append(item in exercised_items(case))

        collect()
        return focused

    for layout in VIEW_LAYOUTS:
        focused = focused_cases(("gather", viewed(layout)))
        assert len(focused) >= 4 and sum(focused) >= 0.8 * len(focused), (layout, focused)


def test_half_the_view_cases_of_an_elementwise_op_broadcast_the_view() -> None:
    """An elementwise op's view items draw, half the time, a view the op broadcasts (fewer dims,
    or a unit dim, than its result): the GPU lowering maps a reversed read through the view's
    index map, and one that took the indices from the map's results, not the op's loops,
    failed on ``m + v[::-1]`` only (a held-out plant that survived a 60 s session: views were
    broadcast in a fifth of these cases; in 3 of 10 while a filter rejected broadcast draws)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from compiler import primitives
    from harness.session.focus import BROADCASTING_KINDS, _view_cases, view_ops, viewed
    from strategies.gen.programs import ops_reading_views

    (op,) = [o for o in view_ops() if primitives.get(o).kind == "binary"]
    assert "binary" in BROADCASTING_KINDS
    broadcast: list[bool] = []
    # pooled: one seed's draws are near-copies of each other (7 to 22 of 30 broadcast)
    for number in (1, 2, 3, 4):

        @seed(number)
        @settings(
            max_examples=30, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(_view_cases(("cpu-loops",), (op, viewed("reversed"))))
        def collect(case) -> None:  # noqa: ANN001
            assert op in ops_reading_views(case.program, "reversed")
            broadcast.append(op in ops_reading_views(case.program, "reversed", broadcast=True))

        collect()
    assert len(broadcast) >= 80 and sum(broadcast) >= 0.4 * len(broadcast), broadcast


def test_key_items_put_each_kind_of_key_element_at_each_place() -> None:
    """("index", "key:<element>:<place>") focus items: a None, an Ellipsis, an int (negative
    too), a reversed or wide-step slice, before, between and after the dims the result keeps,
    on results of two dims of two or more. Random keys' new axes were mostly in front, on
    results of ones: a rule that put every new axis in front survived 60 s sessions; each
    focused case of a newaxis item not in front tells it apart."""
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from harness.session.focus import KEYED, _key_cases, _key_features, exercised_items, focus_items

    items = [i for i in focus_items() if i[1].startswith(KEYED)]
    assert len(items) == 18 and {op for op, _ in items} == {"index"}
    assert _key_features((3, 4), (slice(None), None)) == {"newaxis:inner"}
    assert _key_features((3, 4, 5), (Ellipsis, -1)) == {"ellipsis:first", "negative-int:last"}
    assert _key_features((1, 4), (slice(None), None)) == set()  # a result of one dim of two
    told_apart: list[bool] = []

    @settings(max_examples=90, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(items).flatmap(lambda item: st.tuples(
        st.just(item), _key_cases(("cpu-loops",), item))))  # fmt: skip
    def check(drawn) -> None:  # noqa: ANN001
        item, case = drawn
        assert case.origin == "focus/key" and item in exercised_items(case)
        (node,) = case.program.nodes
        key, shape = node.attrs["key"], case.inputs[0].shape
        if item[1].startswith(KEYED + "newaxis:") and not item[1].endswith(":first"):
            front = (1, *np.empty(shape)[tuple(k for k in key if k is not None)].shape)
            told_apart.append(front != np.empty(shape)[key].shape)

    check()
    assert told_apart and all(told_apart), told_apart


def test_rank_items_put_a_contractions_operands_in_each_pair_of_ranks() -> None:
    """("matmul", "ranks:AxB") focus items: a vector, a matrix or a stack on either side, each
    pair's case exercising its own item, NumPy taking it, batch dims broadcast (a one against
    another side) in some. Random programs' matmuls were of equal ranks or a vector with a
    matrix: a frontend that took every batch as both operands' dims but the last two (a vector
    times a stack failed to trace) survived 60 s sessions."""
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from harness.session.focus import (
        RANKED,
        _rank_cases,
        exercised_items,
        focus_cases,
        focus_items,
        item_family,
        item_kind,
    )  # fmt: skip

    items = [i for i in focus_items() if i[1].startswith(RANKED)]
    assert sorted(items) == [("matmul", f"ranks:{a}x{b}") for a in (1, 2, 3) for b in (1, 2, 3)]
    assert {item_kind(i) for i in items} == {"ranks"} and item_family("ranks") == "pair"
    broadcast: list[bool] = []

    @settings(max_examples=90, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(items).flatmap(lambda item: st.tuples(
        st.just(item), _rank_cases(("cpu-loops",), item))))  # fmt: skip
    def check(drawn) -> None:  # noqa: ANN001
        item, case = drawn
        assert case.origin.startswith("focus/ranks/") and item in exercised_items(case)
        left, right = (a.shape for a in case.inputs)
        assert np.matmul(*case.inputs).shape == case.program.output_type.shape
        if len(left) == len(right) == 3:
            broadcast.append(left[0] != right[0])

    check()
    assert broadcast and any(broadcast), broadcast

    # Left alone in the focus, a rank item is what a focused case draws
    @settings(max_examples=5, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(focus_cases(("cpu-loops",), (("matmul", "ranks:1x3"),)))
    def alone(case) -> None:  # noqa: ANN001
        assert [a.ndim for a in case.inputs] == [1, 3]

    alone()


def test_layout_items_hand_a_programs_inputs_over_in_each_layout() -> None:
    """("inputs", "layout:NAME") focus items: each case hands the inputs its layout applies to
    over in it, a NumPy scalar's a 0-d input of an op (random programs' inputs were 0-d in 4 of
    300 cases, none handed over as a NumPy scalar: a frontend that took NumPy scalars for
    static arguments survived a 60 s session)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from harness.run.layouts import LAYOUTS
    from harness.session.focus import (
        LAID_OUT,
        _layout_cases,
        exercised_items,
        focus_items,
        item_family,
        item_kind,
    )

    items = [i for i in focus_items() if i[1].startswith(LAID_OUT)]
    assert sorted(name for _, name in items) == sorted(LAID_OUT + name for name in LAYOUTS)
    assert {item_kind(i) for i in items} == {"layout"} and item_family("layout") == "view"
    met: set[str] = set()

    @settings(max_examples=150, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(items).flatmap(lambda item: st.tuples(
        st.just(item), _layout_cases(("cpu-loops",), item))))  # fmt: skip
    def check(drawn) -> None:  # noqa: ANN001
        item, case = drawn
        assert case.origin == "focus/layout" and item in exercised_items(case)
        met.add(item[1])
        if item[1] == LAID_OUT + "scalar":
            assert any(a.ndim == 0 for a in case.inputs)
            assert any(type(a) is not np.ndarray for a in case.arranged(case.inputs))

    check()
    assert len(met) == len(items), met


def test_a_view_has_the_layout_its_strides_and_offset_say() -> None:
    """``view_layout``: past the first element with positive strides other than row-major
    (extent-1 dims included), its innermost stride one element (rows apart: padded) or not,
    reversed (any negative stride), transposed; contiguous parts and steps from the start are
    none of them."""
    from strategies.gen.programs import VIEW_LAYOUTS, ops_reading_views, view_layout
    from strategies.model import ProgramBuilder

    def layout(shape, key=None, axes=None):
        b = ProgramBuilder()
        x = b.input(shape, "float32")
        v = b.node("index", x, key=key) if axes is None else b.node("permute_dims", x, axes=axes)
        program = b.build(b.node("negative", v))
        found = view_layout(program.nodes[0], shape)
        assert ops_reading_views(program) == {"negative"}
        for other in VIEW_LAYOUTS:
            assert ops_reading_views(program, other) == ({"negative"} if other == found else set())
        return found

    E = Ellipsis
    assert layout((4, 5), (E, slice(1, 3))) == "padded"
    assert layout((5, 3), (slice(1, None, 2),)) == "padded"
    assert layout((2, 4, 5), (1, E, slice(0, 2))) == "padded"
    assert layout((7,), (slice(1, None, 2),)) == "offset-strided"
    assert layout((6, 4), (slice(2, None, 3), -1)) == "offset-strided"
    assert layout((4, 6), (E, slice(1, None, 2))) == "offset-strided"
    assert layout((4, 5), (slice(1, 3),)) == ""  # contiguous rows
    assert layout((4, 5), (E, slice(0, 4, 2))) == ""  # strided from the first element
    assert layout((5,), (slice(None, None, -1),)) == "reversed"
    assert layout((3, 5), (slice(None, None, -1), slice(1, 3))) == "reversed"
    assert layout((3, 4), axes=(1, 0)) == "transposed"

    b = ProgramBuilder()  # another shape of the input's values; the same shape is none
    x = b.input((4, 6), "float32")
    program = b.build(b.node("exp", b.node("reshape", x, shape=(2, -1))))
    assert view_layout(program.nodes[0], (4, 6)) == "reshaped"
    assert ops_reading_views(program, "reshaped") == {"exp"}
    assert view_layout(program.nodes[0], (2, 12)) == ""


def test_a_reshaped_operand_is_each_form_a_reshape_takes() -> None:
    """The "reshaped" view layout: an operand reshaped from another shape of its values,
    regrouped at the same rank ((4, 6) from (2, 12)), merged, split or with a unit dim in or
    out, sometimes with NumPy's -1. Of 400 drawn cases, 8 held a reshape and none one that
    keeps its rank, and a cpu-vector fusion that folded any reshape of one rank into its
    consumer as the identity survived a 60 s session (it fails to compile 3 of 44 focused
    cases: 4 of each item)."""
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    from harness.session.focus import _view_cases, exercised_items, focus_items, viewed
    from strategies.gen.shapes import reshape_sources

    assert reshape_sources((4, 6)) == {
        "regroup": [(2, 12), (8, 3), (12, 2)],
        "merge": [(2, 2, 6), (4, 2, 3), (4, 3, 2)],
        "split": [(24,)],
        "units": [(1, 4, 6), (4, 1, 6), (4, 6, 1)],
    }
    assert reshape_sources((1, 5), max_dims=2) == {"split": [(5,)], "units": [(5,)]}
    assert reshape_sources(()) == {"units": [(1,)]}  # a 0-d operand from one element
    items = [i for i in focus_items() if i[1] == viewed("reshaped")]
    assert {"add", "sum", "matmul", "softmax", "gather"} <= {op for op, _ in items}
    forms: set[str] = set()

    @seed(4)
    @settings(max_examples=120, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(items).flatmap(lambda item: st.tuples(
        st.just(item), _view_cases(("cpu-loops",), item))))  # fmt: skip
    def check(drawn) -> None:  # noqa: ANN001
        item, case = drawn
        assert item in exercised_items(case)
        for node in case.program.nodes:
            source = node.args[0]
            if node.op == "reshape" and getattr(source, "kind", None) == "input":
                before = case.program.inputs[source.index].shape
                after = tuple(node.type.shape)
                form = next(f for f, found in reshape_sources(after).items() if before in found)
                forms.add(form + ("-1" if -1 in node.attrs["shape"] else ""))

    check()
    assert {"regroup", "merge", "split", "units"} <= {f.removesuffix("-1") for f in forms}
    assert any(f.endswith("-1") for f in forms), forms


def test_each_reduction_over_no_axis_is_a_focus_item_on_a_negative_zero() -> None:
    """(op, "no-axis") items: each float reduction alone over ``axis=()`` on special values
    with a -0.0 among them (NumPy applies the arithmetic to each element: a sum of -0.0 is
    0.0); random programs had 11 such reductions in 1331 cases, none on a -0.0, and a sum over
    no axis that kept -0.0 survived 60 s sessions. Each focused case exercises its item, and
    NumPy's own answer there has zeros of both signs to tell apart (a max keeps -0.0)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import NO_AXIS, exercised_items, focus_items, item_kind
    from harness.session.generate import cases

    items = tuple(i for i in focus_items() if i[1] == NO_AXIS)
    assert {op for op, _ in items} == {"sum", "mean", "max", "min", "var", "std"}, items
    assert {item_kind(i) for i in items} == {"identity"}
    seen: dict[str, list[bool]] = {}

    @seed(3)
    @settings(
        max_examples=80, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(focus=items))
    def collect(case) -> None:
        if case.origin == "focus/no-axis":
            (node,) = case.program.nodes
            assert node.attrs["axis"] == ()
            seen.setdefault(node.op, []).append((node.op, NO_AXIS) in exercised_items(case))
            with np.errstate(all="ignore"):
                want = np.asarray(case.program.as_function(np)(*case.inputs), np.float64)
            if node.op == "max":
                assert np.any((want == 0) & np.signbit(want))
            if node.op == "sum":
                assert not np.any((want == 0) & np.signbit(want))

    collect()
    assert len(seen) >= 4 and all(all(found) for found in seen.values()), seen


def test_a_focused_max_at_its_edges_reduces_an_array_of_its_identity() -> None:
    """(max, int32) at its edges: a share of its focused cases give it an array of INT32_MIN
    alone (``lowest``), where an identity one off shows whatever axes it reduces; drawn from the
    whole rows of ``extreme`` alone, 28 of 2000 focused int32 max cases reduced a slice of
    INT32_MIN, and a max whose identity was INT32_MIN + 1 survived 60 s sessions."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.generate import cases
    from strategies.gen.values import EDGE_REGIMES

    def draw(number: int) -> None:
        @seed(number)
        @settings(
            max_examples=60, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(cases(focus=(("max", "int32"),), focus_regimes=EDGE_REGIMES))
        def at_its_edges(case) -> None:
            if case.origin.startswith("focus/") and "max" in case.program.ops:
                focused.append(case)

        at_its_edges()

    focused: list = []
    for number in (11, 2, 3):  # pooled: one seed's draws are correlated (1 in 31 to 6 in 32)
        draw(number)
    lowest = [c for c in focused if c.origin == "focus/lowest"]
    assert len(lowest) >= len(focused) / 20 > 0, (len(lowest), len(focused))
    least = np.iinfo(np.int32).min
    for case in lowest:  # (a gather's ids stay in its table: 0, the least that is)
        specs = case.program.inputs
        values = [a for a, i in zip(case.inputs, specs, strict=True) if i.bound is None]
        assert all(a.dtype != np.int32 or np.all(a == least) for a in values), case.inputs


def test_a_definition_finding_asks_no_worker_for_artifacts() -> None:
    """The spec oracle's findings live in ``compiler/ops.py``, on no compiled backend: asking the
    worker to build ``definition`` stored a ValueError traceback as the entry's MLIR export."""
    from types import SimpleNamespace

    from harness.case import Case
    from harness.oracles.base import Finding
    from harness.oracles.spec import DEFINITION
    from harness.session.fuzz import Driver
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2, 3), "float16")
    case = Case(b.build(b.node("exp", x)), [], ("cpu-loops",), origin="programs/normal")
    asked = []

    def run(task):
        asked.append(task.backends)
        return SimpleNamespace(status="error", detail="d", stderr="e")

    driver = SimpleNamespace(runner=SimpleNamespace(worker=SimpleNamespace(run=run)))
    finding = Finding("spec", (DEFINITION,), "spec", "disagrees", case)
    assert Driver.artifacts_of(driver, case, finding) == {} and asked == []
    compiled = Finding("mismatch", ("cpu-loops@O0",), "differential", "wrong", case)
    assert Driver.artifacts_of(driver, case, compiled) == {"error": "d", "stderr": "e"}
    assert asked == [("cpu-loops@O0",)]


def test_a_max_or_min_meets_a_reduced_slice_at_its_identity_in_every_dtype() -> None:
    """A max's and a min's identity in each dtype is a focus item of its own (``IDENTITY``):
    a float64 max starting from the lowest finite value, or an int32 min from INT32_MAX - 1,
    is wrong only on a reduced slice all at the dtype's end, and survived 60 s sessions. Each
    focused case holds such a slice (the other slices keep their values), and exercises its
    item; a random case exercises one only when it holds such a slice too."""
    from collections import Counter

    import numpy as np
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import IDENTITY, exercised_items, focus_items, item_kind
    from harness.session.generate import cases

    items = tuple(i for i in focus_items() if i[1].startswith(IDENTITY))
    assert {item_kind(i) for i in items} == {"identity"}
    assert {op for op, _ in items} == {"max", "min"}
    assert ("max", IDENTITY + "float64") in items and ("min", IDENTITY + "int32") in items
    seen: Counter[tuple[str, str]] = Counter()
    mixed = []

    @seed(5)
    @settings(
        max_examples=120, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(focus=items))
    def collect(case) -> None:
        found = exercised_items(case) & set(items)
        if case.origin.startswith("focus/identity"):
            assert found, case.program
            seen.update(found)
        for op, second in found:
            node = next(n for n in case.program.nodes if n.op == op)
            x = np.asarray(case.inputs[node.args[0].index]).astype(np.float64)
            end = {"max": -np.inf, "min": np.inf}[op]
            if second == IDENTITY + "int32":
                end = -(2**31) if op == "max" else 2**31 - 1
            axis = node.attrs.get("axis")
            at_end = np.all(x == end, axis=axis)
            assert np.any(at_end), (op, second, x)
            mixed.append(not np.all(at_end))

    collect()
    # 120 draws: over 60, Hypothesis's runs of like cases met 4 to 7 of the 10 by seed
    assert len(seen) >= 6, seen
    assert any(mixed), "every slice at the end: the rest of the values never judged"


def test_each_violation_is_a_focus_item_its_invalid_cases_exercise() -> None:
    """(INVALID, violation) for each labelled violation: a focused case for one is an invalid
    program of that violation (rejected before MLIR, so cheap), and judging it takes the item
    out of the focus. In the mix alone (a tenth of the cases over 16 violations and their
    variants) a planted bound check that took ``x[n]`` of n rows for valid survived 60 s."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.session.focus import INVALID, exercised_items, focus_items, item_family
    from harness.session.generate import cases
    from strategies import VIOLATIONS

    items = focus_items()
    assert {(INVALID, name) for name in VIOLATIONS} <= set(items)
    assert item_family(INVALID) == item_family("out-of-range")
    wanted = (INVALID, "not_a_permutation")
    seen: list[str] = []

    @seed(2)
    @settings(
        max_examples=60, phases=[Phase.generate], database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(cases(mix="programs", focus=(wanted,)))
    def collect(case) -> None:
        if case.origin.startswith("focus"):
            assert case.invalid is not None and case.invalid.violation == "not_a_permutation"
            assert case.origin == "focus/invalid/not_a_permutation"
            assert wanted in exercised_items(case)
            seen.append(case.origin)

    collect()
    assert len(seen) >= 10, seen


def test_only_guided_rounds_observe_targets(monkeypatch) -> None:
    """Hypothesis keeps every case with target observations in a Pareto front (its upkeep is a
    driver's cost), so only a round with the target phase observes; coverage counts go on."""
    from types import SimpleNamespace

    import hypothesis

    from harness.session.fuzz import Driver

    monkeypatch.delenv("HARNESS_UNGUIDED", raising=False)
    observed: list[str] = []
    monkeypatch.setattr(hypothesis, "target", lambda value, label: observed.append(label))
    driver = SimpleNamespace(
        runner=SimpleNamespace(last_cells=[("add", "float32")]), cell_counts={}, steering=False
    )
    judgement = SimpleNamespace(margins={"differential": 0.5})
    Driver._steer(driver, judgement)
    assert observed == [] and driver.cell_counts == {("add", "float32"): 1}
    driver.steering = True
    Driver._steer(driver, judgement)
    assert observed == ["error/bound", "coverage novelty"]
    assert driver.cell_counts == {("add", "float32"): 2}


def test_rounds_draw_without_span_duplication_so_table_tails_are_met() -> None:
    """Hypothesis's span-duplication mutator copies choices between parts of a program, out of
    step, and fills the rest with simplest choices: with it, 58% of the exponents drawn were 2
    or 3 (the first entries of a table of 21). Sessions turn it off (``span_duplication``), and the
    mutator is put back after the round."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.internal.conjecture.engine import ConjectureRunner

    from harness.session.fuzz import span_duplication
    from strategies import programs
    from strategies.model.types import Const

    exponents: list[float] = []

    @settings(max_examples=600, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(programs(max_nodes=1, ops=["power"], dtypes=["float32"]))
    def draw(program) -> None:
        exponents.extend(
            a.value for n in program.nodes if n.op == "power" for a in n.args[1:]
            if isinstance(a, Const)
        )  # fmt: skip

    original = ConjectureRunner.generate_mutations_from
    with span_duplication(False):
        draw()
    assert ConjectureRunner.generate_mutations_from is original
    assert FuzzOptions().duplicate_spans is False
    first = sum(e in (2, 3) for e in exponents) / len(exponents)
    assert len(exponents) > 100 and first < 0.3, (len(exponents), first)


def test_a_focused_case_gives_each_binary_op_a_constant_on_no_table() -> None:
    """(op, "const-arbitrary"): a power's exponent, a constant beside a binary op or a
    comparison, on none of the generator's tables (``x ** 2.37``, ``x * 37``); a lowering that
    truncated an exponent before testing for a small integer took ``x ** 2.5`` for ``x * x``
    and survived 60 s sessions, random programs drawing such an exponent in 1 case of 500."""
    from hypothesis import HealthCheck, Phase, given, settings

    from harness.case import CPU_BACKENDS
    from harness.session.focus import exercised_items, focus_cases
    from strategies import CONST_ARBITRARY, on_no_table
    from strategies.model.types import Const

    exponents: list[float] = []
    done: list[bool] = []

    @settings(max_examples=60, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(focus_cases(CPU_BACKENDS, (("power", CONST_ARBITRARY),)))
    def draw(case) -> None:
        done.append(("power", CONST_ARBITRARY) in exercised_items(case))
        exponents.extend(
            a.value for n in case.program.nodes if n.op == "power" for a in n.args[1:]
            if isinstance(a, Const)
        )  # fmt: skip

    draw()
    assert sum(done) >= 0.4 * len(done), done
    assert sum(map(on_no_table, exponents)) >= 0.5 * len(exponents), exponents
    assert any(2 < e < 5 and e % 1 for e in exponents), exponents
    assert not on_no_table(2.5) and on_no_table(2.37) and on_no_table(37)


def test_a_focused_case_gives_each_binary_op_a_wider_numpy_scalar() -> None:
    """NEP 50: a NumPy scalar wider than its array operand gives the result its dtype, which a
    shortcut for a constant must keep (a float32 ``x ** np.float64(0.5)`` taken as sqrt stayed
    float32, random programs drawing power in 2% of their cases). Each binary op and
    comparison that takes a constant has the item (op, "const-wider"); its cases hold such a
    scalar, a power's 0.5 half the time."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS
    from harness.session.focus import exercised_items, focus_cases, focus_items
    from strategies import CONST_WIDER
    from strategies.gen.state import bits
    from strategies.model.types import Const

    items = [item for item in focus_items() if item[1] == CONST_WIDER]
    assert {"add", "less", "divide", "power"} <= {op for op, _ in items}
    done: list[bool] = []
    halves = []
    # Pooled over seeds: one stream's draws are near-copies of each other (of 60 cases, 16 to
    # 45 exercised the item on five seeds; 56% of 600 on ten).
    for number in (1, 2, 3, 4):

        @seed(number)
        @settings(max_examples=30, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), derandomize=False)  # fmt: skip
        @given(focus_cases(CPU_BACKENDS, (("power", CONST_WIDER),)))
        def draw(case) -> None:
            done.append(("power", CONST_WIDER) in exercised_items(case))
            for n in case.program.nodes:
                if n.op == "power" and isinstance(n.args[1], Const) and n.args[1].dtype:
                    (tensor,) = case.program.arg_types(n)
                    assert bits(n.args[1].dtype) > bits(tensor.dtype), n
                    halves.append(n.args[1].value == 0.5)

        draw()
    assert sum(done) >= 0.4 * len(done), done  # (as a constant on no table: a step may die)
    assert 0.3 * len(halves) <= sum(halves) < len(halves), halves


def test_a_focused_case_gives_each_binary_op_an_integer_scalar_no_array_has() -> None:
    """``np.uint8(3) < x``, ``x * np.int16(-1)``: a NumPy scalar of an integer dtype no array has
    is its own path in a frontend, and one on the left reaches NumPy's scalar operator first.
    Each binary op and comparison that takes a constant (but power) has the item (op,
    "const-foreign"); its cases hold such a scalar, on the left about half the time, and NumPy
    evaluates them."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS
    from harness.session.focus import exercised_items, focus_cases, focus_items
    from strategies import CONST_FOREIGN
    from strategies.model.types import SCALAR_DTYPES, Const

    items = [item for item in focus_items() if item[1] == CONST_FOREIGN]
    assert {"add", "less", "less_equal", "divide"} <= {op for op, _ in items}
    assert "power" not in {op for op, _ in items}
    done: list[bool] = []
    sides: list[bool] = []
    for number in (1, 2, 3):

        @seed(number)
        @settings(max_examples=30, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), derandomize=False)  # fmt: skip
        @given(focus_cases(CPU_BACKENDS, tuple(items)))
        def draw(case) -> None:
            done.append(bool(exercised_items(case) & set(items)))
            for n in case.program.nodes:
                for position, arg in enumerate(n.args):
                    if isinstance(arg, Const) and arg.dtype in SCALAR_DTYPES:
                        sides.append(position == 0)
            assert case.function(np)(*case.inputs) is not None

        draw()
    assert sum(done) >= 0.6 * len(done), done
    assert 0.25 * len(sides) <= sum(sides) <= 0.75 * len(sides), sides


#: Options under which a driver never recycles: told not to, a fixed number of rounds (a pytest
#: shard's), a Dask campaign's shard.
NEVER_RECYCLED = {"driver_growth": None, "rounds": 3, "relay": True}


def test_a_driver_whose_memory_grew_hands_its_state_to_the_next_process(tmp_path, monkeypatch):
    """A driver recycles once its RSS is past ``driver_growth`` of its slot's settled size (never
    before ``settle_seconds`` of its life, never in ``NEVER_RECYCLED``): its handoff
    carries the focus and repeat bookkeeping, the steering coverage and the session's clock to
    the slot's next process, whose seeds are new."""
    import time
    from dataclasses import replace

    from harness.session import fuzz
    from harness.session.fuzz import Driver

    options = FuzzOptions(
        corpus=tmp_path, database=None, use_jax=False, seed=5, driver_growth=0.1,
        settle_seconds=0.0,
    )  # fmt: skip
    rss = [1000]
    monkeypatch.setattr(fuzz, "_rss", lambda: rss[0])
    first = Driver(options, 1)
    try:
        assert not first.recycle_due() and first.settled == 1000  # settled now
        rss[0] = 1100
        assert not first.recycle_due()
        rss[0] = 1101
        assert first.recycle_due()
        first.note_exercised({("exp", "float32")})
        first.cell_counts["op:exp|float32|cpu-loops"] = 3
        first.judged_counts = (40, 10)
        handoff = first.handoff()
    finally:
        first.close()
    second = Driver(options, 1, handoff=handoff)
    try:
        assert second.generation == 1 and second.start == first.start
        assert second.seed != first.seed and second.judged_counts == (40, 10)
        assert ("exp", "float32") in second.exercised
        assert second.exercise_counts == first.exercise_counts
        assert second.cell_counts == {"op:exp|float32|cpu-loops": 3}
        assert second.mix.counts == first.mix.counts and second.judged == first.judged
        assert second.settled == 1000  # the slot's bound, not one of its own
    finally:
        second.close()
    others = [Driver(replace(options, **{k: v}), 0) for k, v in NEVER_RECYCLED.items()]
    try:
        assert not any(driver.recycle_due() for driver in others)
    finally:
        for driver in others:
            driver.close()
    settling = Driver(replace(options, settle_seconds=3600.0), 0)
    try:
        assert not settling.recycle_due() and settling.settled is None
        assert time.perf_counter() - settling.born < 3600
    finally:
        settling.close()


@pytest.mark.slow
def test_a_session_goes_on_in_new_processes_where_its_drivers_grew(tmp_path) -> None:
    """Drivers told to recycle on any growth hand over round after round: the session keeps its
    time box, judges cases in every process and reports how many it started anew."""
    import time

    from harness.session.parent import session

    options = FuzzOptions(
        seconds=25, workers=2, seed=3, corpus=tmp_path / "corpus", database=None, quiet=True,
        driver_growth=0.0, settle_seconds=0.0, examples_per_round=10,
    )  # fmt: skip
    start = time.perf_counter()
    summary = session(options)
    assert time.perf_counter() - start < 25 + 3
    assert summary["drivers_recycled"] >= 2 and summary["stats"]["cases"] > 0
    assert summary["harness_errors"] == [] and summary["interrupted"] is None


def test_each_constant_a_lowering_may_take_apart_is_a_focus_item() -> None:
    """A lowering or folder that switches on a constant's value (a power's small integer
    exponents as products, x * 1, x + -0.0) is wrong only there: each such constant of an op
    (``SPECIAL_CONSTANTS``) is an item (op, "const=VALUE") whose cases hold the op with it (an
    int or a float, a Python or a NumPy scalar), and exercising it takes it out of the focus
    (a fast path for ``x ** -3`` that defined no result went unseen in 7 of 10 60 s sessions:
    random programs draw power in 2% of their steps)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS
    from harness.session.focus import exercised_items, focus_cases, focus_items
    from strategies.gen.makers import SPECIAL_CONSTANTS, special_constant
    from strategies.model.types import Const

    items = set(focus_items())
    for op, values in SPECIAL_CONSTANTS.items():
        assert {(op, f"const={v!r}") for v in values} <= items
    assert ("power", "const=-3") in items and ("multiply", "const=-0.0") in items
    assert special_constant("add", -0.0) == -0.0 and special_constant("add", 0.0) == 0.0
    assert special_constant("add", 0) == 0.0 and special_constant("add", 1.0) is None
    assert special_constant("power", -3.0) == -3 and special_constant("multiply", True) is None
    wanted = (("power", "const=-3"), ("add", "const=-0.0"))
    done: dict[tuple[str, str], list[bool]] = {item: [] for item in wanted}
    spellings: set[tuple[type, bool]] = set()

    def collect(item: tuple[str, str], number: int) -> None:
        @seed(number)
        @settings(max_examples=60, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(focus_cases(CPU_BACKENDS, (item,)))
        def draw(case) -> None:
            done[item].append(item in exercised_items(case))
            for node in case.program.nodes:
                if node.op == "power" and isinstance(node.args[1], Const):
                    if node.args[1].value == -3:
                        spellings.add((type(node.args[1].value), node.args[1].dtype is None))

        draw()

    for item in wanted:
        for number in (1, 2):  # (pooled: one stream's draws come in runs of like cases)
            collect(item, number)
    for item, flags in done.items():
        # A focused step may end up dead, as any (a plain first step "power" of bfloat16
        # lives in half of its programs).
        assert sum(flags) >= 0.35 * len(flags), (item, sum(flags), len(flags))
    assert spellings == {(int, True), (float, True), (float, False)}, spellings


def test_each_base_a_folder_rewrites_a_power_for_is_a_focus_item() -> None:
    """LLVM rewrites ``pow(8.0, x)`` as ``exp2(3.0 * x)`` with no fast-math flag (355 ulps at
    -O3), a rewrite of the base: each such base (``SPECIAL_BASES``) is an item ("power",
    "base=VALUE") whose cases hold the power of that constant base (a Python or a NumPy
    scalar), and exercising it takes it out of the focus; random programs draw a power of a
    constant base in about 1 of 150 steps, of 8.0 in about 1 of 4000."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.case import CPU_BACKENDS
    from harness.session.focus import exercised_items, focus_cases, focus_items, item_kind
    from strategies.gen.makers import SPECIAL_BASES
    from strategies.model.types import Const

    items = set(focus_items())
    assert {("power", f"base={float(v)!r}") for v in SPECIAL_BASES} <= items
    item = ("power", "base=8.0")
    assert item_kind(item) == "const:base"  # (its own kind: not one of the 100 binary pairs)
    done: list[bool] = []
    spellings: set[bool] = set()

    @seed(3)
    @settings(max_examples=40, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(focus_cases(CPU_BACKENDS, (item,)))
    def draw(case) -> None:
        done.append(item in exercised_items(case))
        for node in case.program.nodes:
            base = node.args[0]
            if node.op == "power" and isinstance(base, Const) and base.value == 8.0:
                spellings.add(base.dtype is None)

    draw()
    assert sum(done) >= 0.35 * len(done), (sum(done), len(done))
    assert spellings == {True, False}, spellings


def test_a_family_and_a_kind_are_drawn_by_the_root_of_their_items_left() -> None:
    """Uniform over the families, the pairs' 215 items had one focused case in ten, as the one
    boolean item had; by the items alone, a family of few waits behind the large ones. The
    square root (rounded up) is between: at the start the pairs take about a quarter of the
    picks, more than any other family, and a family of one item keeps a pick."""
    from collections import Counter

    from harness.session.focus import _by_root, focus_items, is_dense_sweep, item_family, item_kind

    assert _by_root(["a"] * 9 + ["b"] + ["c"] * 10) == ["a"] * 3 + ["b"] + ["c"] * 4
    rest = [i for i in focus_items() if not is_dense_sweep(i)]
    picks = Counter(_by_root(item_family(item_kind(i)) for i in rest))
    shares = {family: count / picks.total() for family, count in picks.items()}
    assert max(shares, key=shares.get) == "pair" and 0.2 < shares["pair"] < 0.35, shares
    assert picks["bool"] == 1 and picks["jit-sequence"] == 1
