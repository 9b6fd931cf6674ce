"""Which of the cases Hypothesis draws a driver judges (``Admission``, a part of ``Driver``).

A session steers its generation toward (op, dtype) focus items not yet exercised, breadth first
(``focus_pairs``, ``focus_regimes``), gives up items no drawn program exercises
(``_focus_progress``), and skips drawn cases that would add nothing: a focused case whose items
are done (``stale_focus``), a case it judged before (``repeated``), and one of a kind ahead of
its share of the mix (``generate.MixBalance``). Skipping costs a generation, not a compile and
run on every backend.
"""

from __future__ import annotations

from typing import Any

from ..case import Case

#: Digests of the latest judged cases a driver remembers to skip repeats (``repeated``):
#: Hypothesis's mutants follow their example closely, and memory stays flat (~1.5 MB at most).
JUDGED_KEPT = 10_000


class Admission:
    """The driver's focus and repeat bookkeeping; ``Driver`` provides ``options``, ``index`` and
    ``runner``."""

    options: Any
    index: int
    runner: Any

    def init_admission(self) -> None:
        self.exercised: set[tuple[str, str]] = set()  # focus items done at focus_level
        self.focus_level = 1  # cases per item the focus asks for now (up to FOCUS_REPEATS)
        self.exercise_counts: dict[tuple[str, str], int] = {}  # cases that exercised each
        self.given_up: set[tuple[str, str]] = set()  # focus items no focused case exercised
        self.focus_idle_rounds = 0  # rounds in a row whose focus exercised no new item
        self.judged: dict[bytes, None] = {}  # digests of the cases judged (``repeated``)
        # the kinds judged held at MIX_PERCENT (Hypothesis's mutants keep their example's kind)
        from .generate import MixBalance

        self.mix = MixBalance() if self.options.mix == "all" else None

    def admission_state(self) -> dict[str, Any]:
        """This bookkeeping, for the next process of the driver's slot (``Driver.handoff``)."""
        names = ("exercised", "focus_level", "exercise_counts", "given_up", "focus_idle_rounds")
        return {name: getattr(self, name) for name in names} | {
            "judged": self.judged, "mix": self.mix,
        }  # fmt: skip

    def restore_admission(self, state: dict[str, Any]) -> None:
        """Take up ``admission_state()`` of the slot's previous process."""
        for name, value in state.items():
            setattr(self, name, value)

    def focus_pairs(self) -> tuple[tuple[str, str], ...]:
        """The focus items (``focus.focus_items``: (op, dtype) pairs, then ops a spelling
        writes another way) not yet exercised by ``focus_level`` of this driver's cases, its
        share of them first (driver i of n takes every n-th pair, so n drivers cover the table
        n times faster); breadth first: every item once, then every item twice, up to
        ``FOCUS_REPEATS`` (at two cases each from the start, a 60 s driver left 53 of its 268
        items never exercised, (int32, ``>``) among them); none once the table is covered, or
        with ``focus`` off (the dense accuracy sweeps among them take half of the focused
        cases while any is left: ``focus.focus_cases``)."""
        if not self.options.focus:
            return ()
        from .focus import FOCUS_REPEATS, SEQUENCE_ITEM, focus_items

        pairs, workers = focus_items(), max(1, self.options.workers)
        if self.options.mix != "all":  # random programs only: no jit sequence
            pairs = tuple(p for p in pairs if p != SEQUENCE_ITEM)
        mine = [p for k, p in enumerate(pairs) if k % workers == self.index % workers]
        while True:
            done = self.exercised | self.given_up
            left = [p for p in pairs if p not in done]
            if left or self.focus_level >= FOCUS_REPEATS:
                return tuple(p for p in mine if p not in done) or tuple(left)
            self.focus_level += 1
            self.exercised = {
                p for p, count in self.exercise_counts.items() if count >= self.focus_level
            }

    def focus_regimes(self) -> tuple[str, ...]:
        """The value regimes of focused cases: any in the first pass over the items, then those
        at an op's edges (``EDGE_REGIMES``: a random regime left an item's second case on
        ordinary values as often as not, where a log of a subnormal or an int32 ``>`` at a tie
        shows its bug)."""
        from strategies.gen.values import EDGE_REGIMES

        return EDGE_REGIMES if self.focus_level >= 2 else ()

    def _focus_progress(self, focus: tuple[tuple[str, str], ...], done_before: int) -> None:
        """After a round without a finding (``done_before``: its focus items done when it began):
        a focus none of whose items got done for ``FOCUS_IDLE_ROUNDS`` rounds in a row is given
        up (items no drawn program exercises would otherwise have half of the cases drawn for
        them, and skipped, for the rest of the session: ("divide", "int32"), which divides in
        float64, did until it was counted)."""
        if not focus or len(self.exercised.intersection(focus)) > done_before:
            self.focus_idle_rounds = 0
            return
        self.focus_idle_rounds += 1
        from .focus import FOCUS_IDLE_ROUNDS

        if self.focus_idle_rounds >= FOCUS_IDLE_ROUNDS:
            self.given_up.update(focus)
            self.runner.stats.focus_given_up += len(focus)
            self.focus_idle_rounds = 0

    def stale_focus(self, case: Case, focus: tuple[tuple[str, str], ...]) -> bool:
        """Whether ``case`` is a focused case whose focus items were all done since its round
        began: Hypothesis's generate phase replays near-copies of recent examples, so a 60 s
        session judged the same focused int32 ``-x`` seven times in a row while (int32, ``>``)
        waited. Skipping it costs a generation, not a compile and run on every backend."""
        items = _focused_items(case, focus)
        return items is not None and not items - self.exercised

    def focus_went_stale(self, case: Case, focus: tuple[tuple[str, str], ...]) -> bool:
        """Whether ``case`` is stale (``stale_focus``) because items of its round's focus that it
        exercises were done during the round, not because it exercises none: then the rest of the
        round (whose strategy is fixed, so a shrinking replay draws what it drew) would draw more
        such cases, Hypothesis's mutants of the round's first ones, and skip them. A 40 s driver
        skipped 66 of the 190 cases it drew, and 29 more of kinds the mutants had made ahead of
        their share; ending the round there, the next one draws from the focus left."""
        items = _focused_items(case, focus)
        return bool(items) and not items - self.exercised

    def repeated(self, case: Case) -> bool:
        """Whether this driver already judged ``case`` (``note_judged``: the same digest,
        subject, input bytes, layouts, backends, checks). Hypothesis follows each
        fresh example with mutants of it that are often the very same case: 17 of 224 cases of
        a 60 s session, and a jit sequence ran three times in a row. Judging a case again
        finds nothing new (a finding already raised is being shrunk, or is in the corpus), and
        counting it again overstates the cases judged; it costs the runs, references and
        oracles again (its kernels come from the worker's cache, so the saving in time is
        small). A case skipped for another reason (the mix) is not judged, so not a repeat."""
        return _key(case) in self.judged

    def note_judged(self, case: Case) -> None:
        """Remember ``case`` as judged (``repeated``); the newest ``JUDGED_KEPT`` are kept."""
        self.judged[_key(case)] = None
        if len(self.judged) > JUDGED_KEPT:
            del self.judged[next(iter(self.judged))]

    def note_exercised(self, items: set[tuple[str, str]]) -> None:
        """Count one more case for each focus item it exercised; an item leaves the focus at
        ``focus_level`` cases."""
        for item in items:
            count = self.exercise_counts[item] = self.exercise_counts.get(item, 0) + 1
            if count >= self.focus_level:
                self.exercised.add(item)


def _key(case: Case) -> bytes:
    return bytes.fromhex(case.digest()[:32])


def _focused_items(case: Case, focus: tuple[tuple[str, str], ...]) -> set[tuple[str, str]] | None:
    """The items of ``focus`` a focused case exercises (in every spelling); None for a case
    that is not focused."""
    from .focus import exercised_items

    if not case.origin.startswith(("focus/", "sweep/")):
        return None
    return exercised_items(case, every_spelling=True) & set(focus)


__all__ = ["JUDGED_KEPT", "Admission"]
