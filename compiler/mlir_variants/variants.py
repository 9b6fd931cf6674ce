"""Variants: the registered catalog, variant names, their stages and the ``mlir:`` backends."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from typing import Any

from .. import backends, pipelines, tools
from ..driver import Artifacts
from ..frontend.graph import Graph
from ..pipelines import BUFFERIZE, BUFFERIZED, LIBM, LOWERED, Stage, Target
from .catalog import STAGES, Entry
from .scripts import features

PREFIX = "mlir:"
KNOWN_BROKEN = "known-broken:"
SEPARATOR = "."
#: ``mlir:*`` in ``--backends``: a variant drawn per case (the harness draws it).
DRAW = PREFIX + "*"
RUNTIME_SUFFIX = "+mlir-runtime"
DEFAULT_LEVEL = 0

# Lowers what vectorizing entries leave (LOWER has no vector conversion): masks and
# multi-reductions first, transfers to loops of loads, math on vectors (a libm function with no
# LLVM intrinsic, cbrt or asinh, is called lane by lane: vector.extract and vector.insert), then
# the vector dialect to LLVM.
VECTOR_FIXUP = (
    "builtin.module(func.func(lower-vector-mask, lower-vector-multi-reduction), "
    "convert-vector-to-scf{full-unroll=true}, canonicalize, convert-math-to-llvm, "
    "convert-math-to-libm, convert-vector-to-llvm, convert-ub-to-llvm, canonicalize)"
)
# pipelines.COMPLETE plus vectors: what finishes a prefix of a variant (attribution).
VARIANT_COMPLETE = (
    "builtin.module(one-shot-bufferize, bufferization-lower-deallocations, "
    "convert-bufferization-to-memref, func.func(lower-vector-mask, lower-vector-multi-reduction), "
    "convert-vector-to-scf{full-unroll=true}, func.func(convert-linalg-to-loops), "
    "expand-strided-metadata, lower-affine, convert-scf-to-cf, convert-vector-to-llvm, "
    "finalize-memref-to-llvm, convert-math-to-llvm, convert-math-to-libm, convert-vector-to-llvm, "
    "convert-arith-to-llvm, convert-ub-to-llvm, convert-index-to-llvm, convert-func-to-llvm, "
    "convert-cf-to-llvm, reconcile-unrealized-casts)"
)
VARIANT_COMPLETED = Stage("complete", VARIANT_COMPLETE, description="completion of a variant")


# --------------------------------------------------------------------------------------------
# The registry (``compiler.mlir_variants`` registers ``catalog.entries()`` on import)

CATALOG: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    """Add an entry (a test plants a broken one this way); ids are unique and plain."""
    if entry.id in CATALOG:
        raise ValueError(f"catalog entry {entry.id!r} is already registered")
    if entry.stage not in STAGES:
        raise ValueError(f"entry {entry.id!r}: stage {entry.stage!r} is not one of {STAGES}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", entry.id) or entry.id in _RESERVED:
        raise ValueError(f"entry id {entry.id!r}: lower-case letters, digits and '-' only")
    CATALOG[entry.id] = entry
    _backend.cache_clear()
    return entry


def unregister(entry_id: str) -> None:
    CATALOG.pop(entry_id, None)
    _backend.cache_clear()


_RESERVED = {"module", "bufferized", "vector-fixup", "lowered", "llvm", "complete", "trace", "run"}


def drawable() -> list[Entry]:
    """The entries a random variant may use, in catalog order (``loose`` ones are only named)."""
    return [e for e in CATALOG.values() if not e.loose]


# --------------------------------------------------------------------------------------------
# Variant names


@dataclass(frozen=True)
class Variant:
    """An ordered list of entries (valid: ``validate``) and whether known-broken IR runs."""

    entries: tuple[str, ...]
    known_broken: bool = False

    @property
    def name(self) -> str:
        return PREFIX + (KNOWN_BROKEN if self.known_broken else "") + SEPARATOR.join(self.entries)

    def without(self, index: int) -> Variant:
        """This variant less entry ``index`` (still valid: loops entries lose their lowering
        entry with it)."""
        kept = [e for i, e in enumerate(self.entries) if i != index]
        lowering = [e for e in kept if CATALOG[e].stage == "lower"]
        kept = [e for e in kept if not CATALOG[e].after or set(CATALOG[e].after) & set(lowering)]
        return Variant(tuple(kept), self.known_broken)


def validate(entries: tuple[str, ...] | list[str]) -> None:
    """A ValueError unless ``entries`` are known, distinct, in stage order, with at most one
    bufferize and one lower entry, and every loops entry after a lower entry it names."""
    unknown = [e for e in entries if e not in CATALOG]
    if unknown:
        raise ValueError(
            f"unknown catalog entries {', '.join(unknown)} (python -m compiler.mlir_variants "
            "lists the catalog)"
        )
    if len(set(entries)) != len(entries):
        raise ValueError(f"an entry appears twice in {SEPARATOR.join(entries)}")
    order = [STAGES.index(CATALOG[e].stage) for e in entries]
    if order != sorted(order):
        raise ValueError(f"entries must come in stage order {' < '.join(STAGES)}: {entries}")
    for stage in ("bufferize", "lower"):
        if sum(CATALOG[e].stage == stage for e in entries) > 1:
            raise ValueError(f"at most one {stage} entry in a variant: {entries}")
    lowering = [e for e in entries if CATALOG[e].stage == "lower"]
    for e in entries:
        after = CATALOG[e].after
        if after and not set(after) & set(lowering):
            raise ValueError(f"{e} runs after one of {', '.join(after)}, not in {entries}")


def is_variant(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def is_draw(name: str) -> bool:
    """``mlir:*`` or ``mlir:known-broken:*`` (with an optional ``@O<n>``): a variant per case."""
    base = name.partition("@")[0] if isinstance(name, str) else ""
    return base in (DRAW, PREFIX + KNOWN_BROKEN + "*")


@dataclass(frozen=True)
class Name:
    """A backend name of the family, taken apart: the variant and its suffixes (as
    ``compiler.backends`` spells them for our CPU targets)."""

    variant: Variant
    stage: str | None = None
    steps: int | None = None
    level: int | None = None
    runtime: bool = False


def parse(name: str) -> Name:
    """``mlir:[known-broken:]A.B.C[[:stage#k]][+mlir-runtime][@O<n>]``; a ValueError if it is
    not a valid variant."""
    if not is_variant(name):
        raise ValueError(f"{name!r} is not an mlir:<variant> name")
    rest, runtime, level = name, False, None
    for _ in range(2):  # the two suffixes, in either order
        if rest.endswith(RUNTIME_SUFFIX):
            rest, runtime = rest[: -len(RUNTIME_SUFFIX)], True
        match = re.search(r"@O([0-3])$", rest)
        if match:
            rest, level = rest[: match.start()], int(match.group(1))
    if "@" in rest:
        raise ValueError(f"bad optimization level in {name!r} (O0-O3)")
    rest, stage, steps = pipelines.split_stage(rest, repr(name))
    body = rest[len(PREFIX) :]
    known_broken = body.startswith(KNOWN_BROKEN)
    body = body.removeprefix(KNOWN_BROKEN)
    if body == "*":
        raise ValueError(f"{name!r} draws a variant per case (the harness does); name one")
    entries = tuple(e for e in body.split(SEPARATOR)) if body else ()
    validate(entries)
    return Name(Variant(entries, known_broken), stage, steps, level, runtime)


def variant_of(name: str) -> Variant:
    return parse(name).variant


def family(name: str) -> str:
    """What a report groups a backend under: every variant under ``mlir:*`` (or
    ``mlir:known-broken:*``, with its ``@O<n>``), any other backend under its own name."""
    if not is_variant(name):
        return name
    base, at, level = name.partition("@")
    broken = KNOWN_BROKEN if base[len(PREFIX) :].startswith(KNOWN_BROKEN) else ""
    return f"{PREFIX}{broken}*{at}{level}"


# --------------------------------------------------------------------------------------------
# Stages


@dataclass(frozen=True)
class Plan:
    """What a stage does to one input: ``pipeline`` ("" = pass the input through), why the
    entry was skipped (``reason``), and the transform library it reads (``library``)."""

    pipeline: str
    reason: str = ""
    library: str | None = None


def _allow_known_broken(module: Any) -> None:
    """Never called (``EntryStage.run`` decides): as a stage's ``transform`` it keys the
    driver's stage cache apart for ``mlir:known-broken:`` variants."""


def _apply(module: Any, plan: Plan) -> None:
    """Run ``plan`` on a parsed module in place. In process, a script is appended to the module
    for the interpreter and removed after: ``transform-preload-library`` would keep it in the
    (reused) MLIR context, where the next script's ``@__transform_main`` is then defined
    twice."""
    from mlir import ir, passmanager

    if not plan.pipeline:
        return
    if plan.library is None:
        passmanager.PassManager.parse(plan.pipeline).run(module.operation)
        return
    steps = [s for s in pipelines.pipeline_steps(plan.pipeline) if "preload-library" not in s]
    if not steps:
        return
    module.body.append(ir.Operation.parse(plan.library))
    try:
        passmanager.PassManager.parse(pipelines.join_steps(steps)).run(module.operation)
    finally:
        for op in list(module.body.operations):
            if "transform.with_named_sequence" in op.operation.attributes:
                op.operation.erase()


@functools.lru_cache(maxsize=64)
def _trial(entry_id: str, plan: Plan, text: str) -> str:
    """The known bug (``Entry.broken_output``) that running ``plan`` on ``text`` hits, by a run
    in a context of its own ("" if none, or if the run fails: the stage's own run reports
    that)."""
    from mlir import ir

    with ir.Context():
        module = ir.Module.parse(text)
        try:
            _apply(module, plan)
        except ir.MLIRError:
            return ""
        after = str(module)
    return CATALOG[entry_id].broken_output(text, after)


_LIBRARY_PATH = re.compile(r"transform-library-paths=[^,}\s]+")


@dataclass(frozen=True)
class EntryStage(Stage):
    """A stage running one catalog entry, where its precondition holds on the stage's input.

    ``pipeline`` is what the stage runs (a prefix ``[:stage#k]`` truncates it, and the stage
    then runs those steps); ``fallback`` runs instead when the entry is skipped."""

    entry: str = ""
    known_broken: bool = False
    fallback: str = ""

    def plan(self, text: str) -> Plan:
        entry = _FIXUP_ENTRY if self.entry == _FIXUP else CATALOG[self.entry]
        found = features(text)
        reason = entry.check(found, self.known_broken)
        if reason:
            return Plan(self.fallback, reason)
        plan = Plan(self.pipeline)
        if entry.script is not None and "transform-library-paths=" in self.pipeline:
            plan = Plan(self.pipeline, library=entry.script(text, entry.id))
        if not self.known_broken and any(b.tried(found) for b in entry.known_broken):
            reason = _trial(entry.id, plan, text)
            if reason:
                return Plan(self.fallback, reason)
        return plan

    def standalone(self, text: str) -> tuple[str, str]:
        """(pipeline, input) that redo this stage on ``text`` in one ``mlir-opt`` run on one
        file, for crash pinning and reduction: a script is nested in the input, as in
        process."""
        plan = self.plan(text)
        if plan.library is None:
            return plan.pipeline, text
        steps = [s for s in pipelines.pipeline_steps(plan.pipeline) if "preload-library" not in s]
        end = text.rstrip().rfind("}")
        return pipelines.join_steps(steps), text[:end] + plan.library + text[end:]

    def run(self, module: Any) -> None:
        _apply(module, self.plan(str(module)))


def _vector_fixup(known_broken: bool) -> EntryStage:
    return EntryStage(
        "vector-fixup", VECTOR_FIXUP, description="vector ops left by vectorizing entries -> LLVM",
        entry=_FIXUP, known_broken=known_broken,
    )  # fmt: skip


# The fix-up stage as a (hidden) catalog entry: it runs only when vector ops remain.
_FIXUP = "vector-fixup"
_FIXUP_ENTRY = Entry(_FIXUP, "loops", requires=("vector",))


def stages(variant: Variant) -> tuple[Stage, ...]:
    """The variant's stages: one per entry (named after it), our bufferization (or a bufferize
    entry's), the vector fix-up if a vectorizing entry is in it, our lowering."""
    marker = _allow_known_broken if variant.known_broken else None
    entries = [CATALOG[e] for e in variant.entries]

    def stage_of(entry: Entry, pipeline: str, fallback: str = "") -> EntryStage:
        description = entry.note or f"{entry.stage} entry: {entry.pipeline or 'a transform script'}"
        return EntryStage(
            entry.id, pipeline, marker, description, entry=entry.id,
            known_broken=variant.known_broken, fallback=fallback,
        )  # fmt: skip

    out: list[Stage] = []
    for entry in entries:
        if entry.stage == "tensor":
            out.append(stage_of(entry, f"builtin.module({entry.fragment(entry.id)})"))
    bufferize = [e for e in entries if e.stage == "bufferize"]
    if bufferize:
        replaced = BUFFERIZE.replace("one-shot-bufferize,", bufferize[0].pipeline + ",", 1)
        out.append(stage_of(bufferize[0], replaced, fallback=BUFFERIZE))
    else:
        out.append(BUFFERIZED)
    for entry in entries:
        if entry.stage in ("buffer", "lower", "loops"):
            out.append(stage_of(entry, f"builtin.module({entry.fragment(entry.id)})"))
    out.append(LIBM)  # (before the fix-up: it would lower a vector expm1 as exp(x) - 1)
    if any(e.vector for e in entries):
        out.append(_vector_fixup(variant.known_broken))
    out.append(LOWERED)
    return tuple(out)


def target(variant: Variant) -> Target:
    described = ", ".join(variant.entries) or "no entries (our bufferization and lowering)"
    return Target(
        variant.name, stages(variant), DEFAULT_LEVEL, f"upstream MLIR passes: {described}",
        completion=(LIBM, VARIANT_COMPLETED),
    )  # fmt: skip


def stage_command(stage: Stage, plan: Plan | None, source: str, output: str) -> str:
    """``mlir-opt`` on ``source`` (a script first written next to it), or a copy (skipped)."""
    pipeline = stage.pipeline if plan is None else plan.pipeline
    if not pipeline:
        reason = plan.reason if plan is not None else ""
        why = f"  # {stage.name} skipped: {reason}".replace("\n", " ") if reason else ""
        return f"cp {shlex.quote(source)} {shlex.quote(output)}{why}"
    if plan is None or plan.library is None:
        return tools.command("mlir-opt", f"--pass-pipeline={pipeline}", source, "-o", output)
    library = f"{stage.name}.transform.mlir"
    pipeline = _LIBRARY_PATH.sub(lambda _: f"transform-library-paths={library}", pipeline)
    text = plan.library if plan.library.endswith("\n") else plan.library + "\n"
    return (
        f"cat > {shlex.quote(library)} <<'TRANSFORM_LIBRARY'\n{text}TRANSFORM_LIBRARY\n"
        + tools.command("mlir-opt", f"--pass-pipeline={pipeline}", source, "-o", output)
    )


def annotate(artifacts: Artifacts, stages_run: tuple[Stage, ...]) -> Artifacts:
    """Each entry stage's real command (its script, or a copy when skipped) and the notes:
    ``applied`` and ``skipped`` entries (with why)."""
    applied, skipped = [], []
    for stage in stages_run:
        if not isinstance(stage, EntryStage) or stage.name not in artifacts.stages:
            continue
        previous = artifacts.previous(stage.name)
        plan = stage.plan(artifacts.stages[previous])
        artifacts.commands[stage.name] = stage_command(
            stage, plan, f"{previous}.mlir", f"{stage.name}.mlir"
        )
        if stage.entry == _FIXUP:
            continue
        (skipped if plan.reason else applied).append(
            f"{stage.entry}: {plan.reason}" if plan.reason else stage.entry
        )
    artifacts.notes["applied"] = ",".join(applied)
    if skipped:
        artifacts.notes["skipped"] = "; ".join(skipped)
    return artifacts


# --------------------------------------------------------------------------------------------
# The backend


class MlirVariantBackend(backends.MlirCpuBackend):
    """Our CPU backend running a variant's stages; commands and notes say what each entry did."""

    def compile(self, graph: Graph) -> Artifacts:
        return annotate(super().compile(graph), self.target.stages)

    def stage_texts(self, graph: Graph, before: str) -> Artifacts:
        return annotate(super().stage_texts(graph, before), self.target.stages)


@functools.lru_cache(maxsize=512)
def _backend(name: str) -> MlirVariantBackend:
    parsed = parse(name)
    made = target(parsed.variant)
    if parsed.stage is not None:
        made = made.prefix(parsed.stage, parsed.steps)
    if parsed.level is not None:
        made = made.with_opt_level(parsed.level)
    return MlirVariantBackend(made, "mlir" if parsed.runtime else "ours")


def backend(name: str) -> MlirVariantBackend:
    """The backend for ``mlir:...`` (with ``[:stage#k]``, ``+mlir-runtime``, ``@O<n>``)."""
    return _backend(name)


# --------------------------------------------------------------------------------------------
# The catalog as a table


def catalog_markdown() -> str:
    rows = [
        "| id | stage | pipeline fragment | precondition | known broken (excluded by default) |",
        "|---|---|---|---|---|",
    ]
    for entry in CATALOG.values():
        fragment = entry.pipeline or ""
        if entry.script is not None:
            fragment = f"{fragment}, transform script" if fragment else "transform script"
        broken = "; ".join(
            f"{', '.join(b.features) or 'its output'}: {b.issue}" for b in entry.known_broken
        )
        notes = "; ".join(x for x in (broken, entry.note, "loose: never drawn" * entry.loose) if x)
        rows.append(
            f"| {entry.id} | {entry.stage} | `{fragment.replace('|', '/')}` | "
            f"{entry.precondition()} | {notes or '-'} |"
        )
    return "\n".join(rows)
