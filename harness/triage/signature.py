"""One answer to "is this the same failure?", used everywhere it is asked.

A failure is identified by what was judged, never by where it ran: the kind (mismatch, crash,
...) and the oracle that judged it. Backend names do not enter ``matches``: a minimizer or a
bisection that runs the case on ``cpu-loops@O0`` or without fusion must recognize the same wrong
answer there. ``covers`` (is a new finding already in the corpus?) also wants the same output
dtype, a subset of the ops and an overlapping backend family, except for a program-free failure
(the @jit layer's specialization cache, above every backend), which is one bug wherever it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def backend_family(name: str) -> str:
    """``cpu-blas@O0`` -> ``cpu-blas``: variants of one backend belong to one family."""
    return name.split("@")[0]


@dataclass(frozen=True)
class Signature:
    kind: str
    oracle: str
    backends: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    dtype: str = ""
    # A failure of a layer above the program and the backends (the @jit cache's key for a
    # function): it names no op, dtype or backend family, so one entry covers it everywhere (a
    # planted key by id(fn) made one entry per backend family otherwise).
    program_free: bool = False
    # What a program-free failure depends on, where it is told apart so: the changes a jit
    # sequence's stale call made ("+"-joined: ``oracles.sequence.change_of``). A cache key that
    # forgets the dtypes is one bug whatever the program, and another than one that forgets
    # the statics; a call that changed the dtypes and the statics at once may be either.
    facet: str = ""

    def matches(self, other: Signature) -> bool:
        """The same judged failure: the same kind, found by the same oracle (and where both
        name the changes they depend on, one change in common: a minimizer that drops a call
        may leave fewer changes to the stale one)."""
        if self.kind != other.kind or self.oracle != other.oracle:
            return False
        return not (self.facet and other.facet) or bool(_facets(self) & _facets(other))

    def covers(self, other: Signature) -> bool:
        """Is ``other`` (a new finding) the bug this one (a known entry) describes?"""
        if self.program_free or other.program_free:
            # A known "dtype" covers a new "dtype+static": the cache forgetting the dtypes
            # explains it (the first such entry of a 60 s session was "dtype", and four more
            # followed: "dtype+structure", "dtype+static", "dtype+captured", ...).
            return (
                self.matches(other)
                and self.program_free == other.program_free
                and _facets(self) <= _facets(other)
            )
        return (
            self.matches(other)
            and self.dtype == other.dtype
            and set(self.ops) <= set(other.ops)
            and bool(
                {backend_family(b) for b in self.backends}
                & {backend_family(b) for b in other.backends}
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored form (corpus files): backends joined, ops sorted. Names that hold "+"
        themselves (``iree-cpu+host``, ``cpu-loops+mlir-runtime``) are listed as well, since the
        joined form cannot be split back; others are not, which keeps existing ids."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "backend": "+".join(sorted(self.backends)),
            "ops": sorted(set(self.ops)),
            "dtype": self.dtype,
            "oracle": self.oracle,
        }
        if any("+" in b for b in self.backends):
            data["backends"] = sorted(self.backends)
        if self.program_free:  # only where set, which keeps existing ids
            data["program_free"] = True
        if self.facet:
            data["facet"] = self.facet
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Signature:
        backend = data.get("backend", "")
        listed = data.get("backends")
        if isinstance(listed, list):
            backends = tuple(str(b) for b in listed if b)
        else:
            backends = tuple(b for b in str(backend).split("+") if b)
        return cls(
            kind=str(data.get("kind", "")),
            oracle=str(data.get("oracle", "")),
            backends=backends,
            ops=tuple(data.get("ops", ())),
            dtype=str(data.get("dtype", "")),
            program_free=data.get("program_free") is True,
            facet=str(data.get("facet", "")),
        )


def _facets(signature: Signature) -> set[str]:
    return set(filter(None, signature.facet.split("+")))


__all__ = ["Signature", "backend_family"]
