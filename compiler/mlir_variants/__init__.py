"""``mlir:<variant>`` backends: upstream MLIR pass pipelines around our own stages.

A variant is an ordered list of catalog entries; its name spells them, ``mlir:`` + the entry ids
joined by ``.`` (``mlir:fold-unit-extent-dims.fuse-elementwise.to-affine-loops.affine-loop-fusion``;
``.`` because ``+`` already joins backend names in signatures and ``+mlir-runtime``). Each entry
is a pass-pipeline fragment (or a transform-dialect script) and the point where it runs:

    built module --[tensor entries]--> bufferized (one-shot-bufferize options may be replaced by a
    "bufferize" entry) --[buffer entries]--> [one "lower" entry --[loops entries]]
    --> vector-fixup (only when a vectorizing entry is in the variant) --> lowered

``bufferized`` and ``lowered`` are our own stages (``compiler.pipelines``). Every entry is one
stage named after it, so a crash or a wrong answer is attributed to the entry by the harness.
An entry's precondition (IR features: op names, ``unit-dim``, ``dynamic``...) is checked on the
IR the stage receives; where it does not hold the stage passes its input through and the reason
is kept in ``Artifacts.notes["skipped"]``. ``known_broken`` notes name the upstream bugs an entry
hits on some IR (found by the research campaign, see ``tests/upstream/``): such IR skips the
entry unless the variant is spelled ``mlir:known-broken:...``, which confirms they still occur.

Stage commands are plain ``mlir-opt --pass-pipeline=...`` runs on the previous stage's saved
text; a transform script is written next to the module by the command itself (a here-document)
and applied with ``transform-preload-library`` + ``transform-interpreter``; a skipped entry's
command copies its input. ``python -m compiler.mlir_variants`` prints the catalog.

The package: ``catalog`` (the table of entries), ``scripts`` (IR features, transform scripts),
``variants`` (registry, names, stages, backends); the catalog is registered here, on import.

The variants JIT at LLVM -O0 by default (``@O3`` asks for more): they test MLIR's passes, and
LLVM's optimizer is covered by the shipped targets.
"""

from __future__ import annotations

from . import catalog
from .catalog import STAGES, Entry, KnownBroken
from .scripts import (
    DYNAMIC,
    LinalgOp,
    features,
    linalg_ops,
    lower_pack,
    tile_fuse,
    tile_vectorize,
    vectorize_children,
)
from .variants import (
    CATALOG,
    DEFAULT_LEVEL,
    DRAW,
    KNOWN_BROKEN,
    PREFIX,
    RUNTIME_SUFFIX,
    SEPARATOR,
    VARIANT_COMPLETE,
    VARIANT_COMPLETED,
    VECTOR_FIXUP,
    EntryStage,
    MlirVariantBackend,
    Name,
    Plan,
    Variant,
    annotate,
    backend,
    catalog_markdown,
    drawable,
    family,
    is_draw,
    is_variant,
    parse,
    register,
    stage_command,
    stages,
    target,
    unregister,
    validate,
    variant_of,
)

for _entry in catalog.entries():
    register(_entry)
CATALOG_SIZE = len(CATALOG)

__all__ = [
    "CATALOG",
    "CATALOG_SIZE",
    "DEFAULT_LEVEL",
    "DRAW",
    "DYNAMIC",
    "Entry",
    "EntryStage",
    "KNOWN_BROKEN",
    "KnownBroken",
    "LinalgOp",
    "MlirVariantBackend",
    "Name",
    "PREFIX",
    "Plan",
    "RUNTIME_SUFFIX",
    "SEPARATOR",
    "STAGES",
    "VARIANT_COMPLETE",
    "VARIANT_COMPLETED",
    "VECTOR_FIXUP",
    "Variant",
    "annotate",
    "backend",
    "catalog_markdown",
    "drawable",
    "family",
    "features",
    "is_draw",
    "is_variant",
    "linalg_ops",
    "lower_pack",
    "parse",
    "register",
    "stage_command",
    "stages",
    "target",
    "tile_fuse",
    "tile_vectorize",
    "unregister",
    "validate",
    "variant_of",
    "vectorize_children",
]
