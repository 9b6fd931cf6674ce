"""Minimization of a failing case: greedy delta debugging over the program model.

Hypothesis shrinks what it generated; this pass works on any case (a crash found outside
Hypothesis, a corpus entry, a leftover write-ahead record): end the program early, bypass
equations, drop unused inputs, shrink dimensions (one input, or one extent everywhere), simplify
values, drop entries of an ``mlir:`` pipeline variant, keeping each step only if the *same*
failure (``Signature.matches``) still happens. An invalid program keeps its violation through
every step. A jit-sequence finding shrinks its sequence instead: fewer calls, fewer equations
in its function, then simpler calls (``JitSequence.simpler``), then values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from compiler.primitives import SPELLINGS
from strategies.model import REJECTIONS, Input, InvalidProgram, Program, Ref, Subject
from strategies.model.gpt2 import ALL_INVALID, INVALID, ModelSpec
from strategies.model.rewrites import drop_unused_subject_inputs, rewrite_subject
from strategies.model.sequence import valid

from ..case import Case
from ..oracles.base import Finding
from ..oracles.gpt2 import NAME as GPT2_ORACLE
from ..oracles.sequence import NAME as SEQUENCE_ORACLE
from ..run.layouts import DEFAULT

Predicate = Callable[[Case], Finding | None]
_BUILD_ERRORS = (*REJECTIONS, KeyError)


@dataclass
class Minimized:
    case: Case
    finding: Finding
    steps: list[str] = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0


def _with(case: Case, subject: Subject, inputs: list[np.ndarray]) -> Case:
    return case.with_subject(subject, inputs)


def _dropped(case: Case, subject: Subject) -> Case:
    smaller, kept = drop_unused_subject_inputs(subject)
    return case.with_subject(smaller, [case.inputs[i] for i in kept], kept)


def _variants_structure(case: Case) -> list[tuple[str, Case]]:
    """Smaller programs: an earlier output (valid programs), a bypassed equation."""
    subject, program = case.subject, case.program
    found = []
    if not isinstance(subject, InvalidProgram):
        for index in range(len(program.nodes) - 1):
            try:
                smaller = rewrite_subject(subject, {}, Ref("node", index))
                found.append((f"output node {index}", _dropped(case, smaller)))
            except _BUILD_ERRORS:
                continue
    for index in reversed(range(len(program.nodes))):
        node = program.nodes[index]
        candidates = sorted(
            (a for a in node.args if isinstance(a, Ref)),
            key=lambda a: program.type_of(a) != node.type,
        )
        for ref in candidates:
            try:
                smaller = rewrite_subject(subject, {index: ref})
                found.append((f"bypass node {index} ({node.op})", _dropped(case, smaller)))
                break
            except _BUILD_ERRORS:
                continue
    return found


def _reshaped(subject: Subject, shapes: dict[int, list[int]]) -> Subject:
    """The subject with inputs ``i`` of new shapes (re-checked: may raise)."""
    base = subject.program if isinstance(subject, InvalidProgram) else subject
    data = base.to_dict()
    data = {**data, "inputs": [dict(x) for x in data["inputs"]]}
    for i, shape in shapes.items():
        data["inputs"][i]["shape"] = shape
    program = Program.from_dict(data)
    if not isinstance(subject, InvalidProgram):
        return program
    inputs = tuple(
        Input(p.shape, declared.dtype, declared.bound)
        for p, declared in zip(program.inputs, subject.inputs, strict=True)
    )
    return InvalidProgram(program, subject.violation, subject.node, inputs)


def _cropped(array: np.ndarray, axis_sizes: dict[int, int], end: bool = False) -> np.ndarray:
    """``array`` cut to ``axis_sizes``: its leading elements on each axis, or (``end``) its
    trailing ones."""

    def cut(axis: int) -> slice:
        if axis not in axis_sizes:
            return slice(None)
        size = axis_sizes[axis]
        return slice(array.shape[axis] - size, None) if end else slice(0, size)

    return np.require(array[tuple(cut(a) for a in range(array.ndim))], requirements="C")


def _windows(extent: int) -> list[tuple[int, bool, str]]:
    """(smaller extent, from the end?, how the step says so) for a dimension of ``extent``: each
    smaller extent keeps the leading elements, and extent 1 also the last one. An IREE sine of
    [-1.2, 89, -5.3e36] failed only on its last element and kept all three; with the window one
    shorter always on offer, an element anywhere becomes a window's last, then alone. Trailing
    windows of every size cost a failure that needs a width twice the evaluations (23 -> 41)."""
    found = []
    for smaller in _smaller(extent):
        found.append((smaller, False, ""))
        if smaller == 1:
            found.append((1, True, " (the last)"))
    return found


def _variants_shapes(case: Case) -> Iterator[tuple[str, Case]]:
    """The same program with one input dimension made smaller (where the program allows it);
    built as the greedy loop asks for them (it stops at the first that still fails)."""
    for i, inp in enumerate(case.program.inputs):
        if inp.bound is not None:
            continue
        for axis, extent in enumerate(inp.shape):
            for smaller, end, which in _windows(extent):
                shape = list(inp.shape)
                shape[axis] = smaller
                try:
                    subject = _reshaped(case.subject, {i: shape})
                except _BUILD_ERRORS:
                    continue
                inputs = list(case.inputs)
                inputs[i] = _cropped(inputs[i], {axis: smaller}, end)
                step = f"input {i} axis {axis}: {extent} -> {smaller}{which}"
                yield step, _with(case, subject, inputs)


def _smaller(extent: int) -> list[int]:
    """Smaller extents to try, the largest reduction first (1, 2, half, three quarters, one
    less): the greedy loop takes the first that still fails, and one less first made a 31-wide
    case take 30 evaluations (41 s of a minimization) to reach 1; three quarters keeps a failure
    that needs a minimum width (a vector's lanes) from stepping down one at a time."""
    candidates = {1, 2, extent // 2, (3 * extent) // 4, extent - 1}
    return sorted(e for e in candidates if 1 <= e < extent)


def _variants_joint(case: Case) -> Iterator[tuple[str, Case]]:
    """One extent made smaller in every input at once: the dims are distinct (rectangular), so
    an extent names one logical dimension, and shrinking it everywhere keeps the program valid
    (a matmul's contracted extent shrinks only this way). Every smaller extent is offered, the
    largest reduction first, built as the greedy loop asks for them."""
    inputs_meta = case.program.inputs
    extents = sorted({d for inp in inputs_meta for d in inp.shape if d > 1}, reverse=True)
    for extent in extents:
        for smaller, end, which in _windows(extent):
            shapes, inputs = {}, list(case.inputs)
            for i, inp in enumerate(inputs_meta):
                if extent in inp.shape and inp.bound is None:
                    shapes[i] = [smaller if d == extent else d for d in inp.shape]
                    axes = {a: smaller for a, d in enumerate(inp.shape) if d == extent}
                    inputs[i] = _cropped(inputs[i], axes, end)
            try:
                subject = _reshaped(case.subject, shapes)
            except _BUILD_ERRORS:
                continue
            step = f"extent {extent} -> {smaller}{which} in every input"
            yield step, _with(case, subject, inputs)


def _variants_values(case: Case) -> list[tuple[str, Case]]:
    found = []
    for i, array in enumerate(case.inputs):
        if array.dtype.kind != "f":
            continue
        for name, simpler in (
            ("rounded", np.round(array)),
            ("rounded to 1 decimal", np.round(array, 1)),
        ):
            with np.errstate(all="ignore"):
                simpler = np.asarray(simpler).astype(array.dtype)  # (a 0-d one: not a scalar)
            if np.array_equal(simpler, array, equal_nan=True):
                continue
            inputs = list(case.inputs)
            inputs[i] = simpler
            found.append((f"input {i} {name}", _with(case, case.subject, inputs)))
    return found


def _variants_sequence(case: Case) -> list[tuple[str, Case]]:
    """A jit sequence with fewer calls (a fed-back output whose call is gone becomes its own
    array), or one call simpler: its own arrays instead of aliases, positional arguments,
    default statics, the captured array unchanged, variant 0; unused variants and statics
    dropped; an equation of the function bypassed. Each candidate is re-checked (every call's
    program must build)."""
    sequence = case.sequence
    found = []
    for description, smaller in sequence.simpler():
        if valid(smaller):
            found.append((description, Case.from_sequence(smaller, case.backends, case.origin)))
    return found


def _variants_sequence_values(case: Case) -> list[tuple[str, Case]]:
    found = []
    for description, simpler in case.sequence.rounded():
        if valid(simpler):
            found.append((description, Case.from_sequence(simpler, case.backends, case.origin)))
    return found


def _variants_gpt2(case: Case) -> list[tuple[str, Case]]:
    """A smaller GPT-2 model of the same weights (each tensor has its own random stream): one
    block, one block fewer, one head, fewer tokens, the context cut to them, a smaller
    vocabulary (ids past it become 0), fewer generation steps; then each option of its
    checkpoint and call back to the plain one (a dict of float32 under bare names, no refused
    call); last, untied embeddings and a narrower model (new weights). The oracle judges only
    candidates its inputs fit."""
    spec, seed = case.gpt2
    ids, positions, wte, wpe = (np.asarray(a) for a in case.inputs[:4])
    found: list[tuple[str, Case]] = []

    def add(description: str, smaller: ModelSpec, leading: list | None = None) -> None:
        try:
            leading = [ids, positions, wte, wpe] if leading is None else leading
            made = Case.from_gpt2(smaller, seed, case.backends, case.origin, leading)
        except ValueError:
            return
        found.append((description, made))

    if spec.layers > 1:
        add("one block", replace(spec, layers=1))
        if spec.layers > 2:
            add(f"{spec.layers - 1} blocks", replace(spec, layers=spec.layers - 1))
    if spec.heads > 1:
        add("one head", replace(spec, heads=1))
    for length in dict.fromkeys((1, spec.length // 2, spec.length - 1)):
        if 1 <= length < spec.length:
            add(
                f"{length} tokens",
                replace(spec, length=length),
                [ids[:length], positions[:length], wte, wpe],
            )
    if spec.context > spec.length:
        add(
            f"context {spec.length}",
            replace(spec, context=spec.length),
            [ids, positions, wte, wpe[: spec.length]],
        )
    for vocab in dict.fromkeys((1, spec.vocab // 2, spec.vocab - 1)):
        if 1 <= vocab < spec.vocab:  # the ids past it become 0
            fewer = np.where(ids < vocab, ids, 0).astype(ids.dtype)
            add(
                f"vocabulary {vocab}",
                replace(spec, vocab=vocab),
                [fewer, positions, wte[:vocab], wpe],
            )
    for steps in dict.fromkeys((0, spec.steps - 1)):
        if 0 <= steps < spec.steps:
            add(f"{steps} generation steps", replace(spec, steps=steps))
    if spec.invalid == ALL_INVALID:  # the one call that fails, alone
        for kind in sorted(INVALID):
            add(f"only the {kind!r} invalid call", replace(spec, invalid=kind))
    plain = {"prefix": False, "lm_head": False, "buffers": False, "file": False, "order": 0,
             "invalid": "", "stored": "float32"}  # fmt: skip
    for field_name, value in plain.items():
        if getattr(spec, field_name) != value:
            add(f"{field_name} {value!r}", replace(spec, **{field_name: value}))
    # New embeddings (those the case holds are tied, or of the wider model).
    for description, smaller in (
        ("untied embeddings", replace(spec, ties=False) if spec.ties else None),
        (
            f"width {spec.heads}",
            replace(spec, width=spec.heads) if spec.width > spec.heads else None,
        ),
    ):
        if smaller is not None:
            found.append((description, Case.from_gpt2(smaller, seed, case.backends, case.origin)))
    return found


def _variants_pipeline(case: Case) -> list[tuple[str, Case]]:
    """An ``mlir:`` pipeline variant with one entry fewer (latest first), the case then run on
    that variant alone: the entries the failure needs are what is left."""
    from compiler.mlir_variants import is_variant, parse
    from compiler.pipelines import split_level

    found = []
    for backend in case.backends:
        if not is_variant(backend):
            continue
        try:
            variant = parse(backend).variant
        except ValueError:
            continue
        suffix = backend[len(split_level(backend)[0]) :]  # "@O<n>", kept
        for index in reversed(range(len(variant.entries))):
            smaller = variant.without(index).name + suffix
            found.append((f"{backend}: drop {variant.entries[index]}", case.on((smaller,))))
    return found


def _variants_spelling(case: Case) -> list[tuple[str, Case]]:
    """The program written in the default spelling (the array namespace and Python's
    operators): a spelling left is one the failure needs (NumPy's dispatch, a method)."""
    default = SPELLINGS[0]
    if case.spelling == default:
        return []
    return [(f"spelled {default}", case.respelled(default))]


def _variants_layouts(case: Case) -> list[tuple[str, Case]]:
    """Every input a plain array, then each input that is not one made plain: the layouts left
    are those the failure needs."""
    names = case.layouts
    if not names:
        return []
    found = [("plain inputs", case.with_layouts(()))]
    if sum(n != DEFAULT for n in names) < 2:
        return found  # one laid-out input: "plain inputs" is the only smaller choice
    for i, name in enumerate(names):
        if name != DEFAULT:
            plain = tuple(DEFAULT if j == i else n for j, n in enumerate(names))
            found.append((f"input {i} plain (not {name})", case.with_layouts(plain)))
    return found


GENERATORS = (
    _variants_spelling,
    _variants_layouts,
    _variants_pipeline,
    _variants_structure,
    _variants_joint,
    _variants_shapes,
    _variants_values,
)
#: A jit-sequence finding shrinks its sequence (its calls' programs are derived from it).
SEQUENCE_GENERATORS = (_variants_pipeline, _variants_sequence, _variants_sequence_values)
#: A gpt2-model finding shrinks its model (the subject is derived from it).
GPT2_GENERATORS = (_variants_gpt2,)
# Generators whose candidates are no smaller by ``Case.size`` (values; a shorter pipeline).
_VALUES = (
    _variants_values,
    _variants_sequence_values,
    _variants_pipeline,
    _variants_spelling,
    _variants_layouts,
)


def _of_the_model(case: Case, finding: Finding) -> bool:
    """Is ``finding`` about ``case``'s GPT-2 model: the gpt2-model oracle's, or a crash or hang
    in the worker's ``model`` step (a sublayer's compile)?"""
    if "gpt2" not in case.extra:
        return False
    if finding.oracle == GPT2_ORACLE:
        return True
    from ..replay import crashed_at  # (replay imports the triage)

    return finding.oracle == "isolation" and crashed_at(finding.detail)[1] == "model"


def generators(case: Case, finding: Finding) -> tuple[Callable[[Case], list], ...]:
    """The variant generators for ``finding`` on ``case``."""
    if finding.oracle == SEQUENCE_ORACLE and case.sequence is not None:
        return SEQUENCE_GENERATORS
    if _of_the_model(case, finding):
        return GPT2_GENERATORS
    return GENERATORS


def minimize(
    case: Case,
    finding: Finding,
    predicate: Predicate,
    budget_seconds: float = 60.0,
    max_evaluations: int = 200,
) -> Minimized:
    """Greedy fixpoint over the variant generators, within the budget. A finding on a case
    that carries a jit sequence (or a GPT-2 model) but is not the sequence's (the model's) own
    is about its subject alone: the sequence (the model) is dropped first."""
    start = time.perf_counter()
    own = finding.oracle == SEQUENCE_ORACLE and case.sequence is not None
    if case.carries_run and not (own or _of_the_model(case, finding)):
        case = case.without_sequence()
    best = Minimized(case, finding)
    chosen = generators(case, finding)
    progress = True
    while progress:
        progress = False
        for generator in chosen:
            for description, candidate in generator(best.case):
                if (
                    time.perf_counter() - start > budget_seconds
                    or best.evaluations >= max_evaluations
                ):
                    best.seconds = time.perf_counter() - start
                    return best
                if candidate.size >= best.case.size and generator not in _VALUES:
                    continue
                best.evaluations += 1
                result = predicate(candidate)
                if result is not None and result.signature.matches(finding.signature):
                    best.case, best.finding = candidate, result
                    best.steps.append(description)
                    progress = True
                    break
            if progress:
                break
    best.seconds = time.perf_counter() - start
    return best


__all__ = [
    "GENERATORS",
    "GPT2_GENERATORS",
    "SEQUENCE_GENERATORS",
    "Minimized",
    "Predicate",
    "generators",
    "minimize",
]
