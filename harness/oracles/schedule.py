"""The schedule oracle: ``cpu-vector`` keeps its promise to vectorize.

A planner that stops tiling (every op judged untileable), takes an int32 matmul for a BLAS one
or loses an op on the way changes no answer: the ops run as scalar loops, correctly and slowly,
and no oracle of values sees it (four of nine surviving mutants of a mutation run were such).
This oracle states the target's contract from the IR alone, apart from the planner's code
(``compiler/vector/schedule.py``), and checks it on the ``vectorized`` stage of every case:
each structured op is gone (tiled and vectorized), except

- float32/float64 ``matmul``/``batch_matmul`` (one element type): the BLAS stage takes them;
- ``linalg.fill`` (the zero fill before a BLAS call, which gemm overwrites);
- ops without a loop to vectorize: rank 0, a dynamic or zero extent;
- ``linalg.generic`` ops whose indexing maps have a negative coefficient (``x[::-2]``): tiling
  them aborts in linalg (llvm-project #113021), so the target runs them as loops on purpose.

The worker reports each op left as a coverage cell (``unvectorized:<op>|<elements>|<why>``;
``untagged``: the planner left it out, ``refused``: it was planned, and the transform
interpreter's vectorizer declined it, its failures suppressed); a case with one is a
``not-vectorized`` finding on that backend.
"""

from __future__ import annotations

import re

from .base import Finding, Observation, Oracle, register

#: The stage whose text is checked, the planner's stage before it, and the attribute the planner
#: tags planned ops with.
STAGE, PLANNER_STAGE = "vectorized", "vector-planned"
_TAG = "vec.id"
_STRUCTURED = re.compile(
    r"=\s*linalg\.(generic|reduce|transpose|map|broadcast|matmul|batch_matmul|elementwise)\b"
)
_TENSOR = re.compile(r"(?:tensor|memref)<([^>]*)>")
_ALIAS = re.compile(r"^(#map\d*)\s*=\s*affine_map<(.*)>\s*$", re.M)
_NEGATIVE = re.compile(r"(?<![\w)])-\s*d\d|\*\s*-\s*\d")
_BLAS_ELEMENTS = ({"f32"}, {"f64"})
PREFIX = "unvectorized:"


def _shape_and_element(tensor: str) -> tuple[list[str], str]:
    parts = tensor.split(",")[0].strip().split("x")
    return parts[:-1], parts[-1]


def _negative_maps(line: str, aliases: dict[str, str]) -> bool:
    """Whether a ``linalg.generic`` line's indexing maps hold a negative coefficient."""
    found = re.search(r"indexing_maps\s*=\s*\[(.*?)\]\s*,\s*iterator_types", line)
    if not found:
        return False
    maps = found.group(1)
    texts = [aliases.get(name, "") for name in re.findall(r"#map\d*", maps)]
    texts += re.findall(r"affine_map<(.*?)>", maps)
    return any(_NEGATIVE.search(text.split("->", 1)[-1]) for text in texts)


def left_as_loops(text: str) -> list[str]:
    """``<op>|<elements>|<untagged or refused>`` for each structured op of a ``vectorized``
    stage's text that the contract (the module docstring) says is vectorized."""
    aliases = dict(_ALIAS.findall(text))
    left = []
    for line in text.splitlines():
        match = _STRUCTURED.search(line)
        if match is None:
            continue
        op = match.group(1)
        tensors = [_shape_and_element(t) for t in _TENSOR.findall(line)]
        if not tensors:
            continue
        shapes = [shape for shape, _ in tensors]
        elements = sorted({element for _, element in tensors})
        if not any(shapes) or any(d == "?" or d == "0" for shape in shapes for d in shape):
            continue  # rank 0 (no loop), or a dynamic or empty extent
        if op in ("matmul", "batch_matmul") and set(elements) in _BLAS_ELEMENTS:
            continue  # the BLAS stage's
        if op == "generic" and _negative_maps(line, aliases):
            continue  # run as loops on purpose (llvm-project #113021)
        why = "refused" if _TAG in line else "untagged"
        left.append(f"linalg.{op}|{','.join(elements)}|{why}")
    return left


class Schedule(Oracle):
    """Findings from the ``unvectorized:`` cells the worker computed on ``cpu-vector``."""

    name = "schedule"

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        findings = []
        for result in obs.results:
            left = [c[len(PREFIX) :] for c in result.cells if c.startswith(PREFIX)]
            if not result.ok or not left:
                continue
            detail = (
                f"{len(left)} structured op(s) left as scalar loops after the {STAGE!r} stage: "
                + "; ".join(left)
                + " (untagged: compiler/vector/schedule.py's planner left it out; refused: "
                "planned, and MLIR's vectorizer declined it)"
            )
            # The stage it lives in: the planner's where it left an op untagged, else the
            # vectorizer's (attribution reads it; the corpus entry keeps it as evidence).
            untagged = any(item.endswith("|untagged") for item in left)
            findings.append(
                Finding("not-vectorized", (result.backend,), self.name, detail, obs.case,
                        result=result, stage=PLANNER_STAGE if untagged else STAGE)  # fmt: skip
            )
        return findings


register(Schedule())

__all__ = ["PLANNER_STAGE", "PREFIX", "STAGE", "Schedule", "left_as_loops"]
