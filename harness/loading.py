"""Does the compiler under test import? Asked before anything of the harness imports it.

Nearly every harness module imports the compiler (its primitive table is the generator's
specification), so a compiler that fails while it is imported would stop ``python -m harness``
with a traceback and exit 1, the status that means "findings": a lie, and one that points at
the harness. This module imports nothing of the compiler itself: it imports the compiler's
startup modules under a guard and, when one fails, says where in the compiler it failed, with
a command that reproduces it anywhere.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
from pathlib import Path

#: Exit status of a harness command when the compiler under test does not import (1 is kept
#: for findings and regressions, 2 for the harness's own errors).
COMPILER_DOES_NOT_IMPORT = 3

#: The compiler modules every harness command imports before its first case: the package, its
#: primitive table, the backends' registry and the MLIR pipeline variants.
STARTUP_MODULES = ("compiler", "compiler.primitives", "compiler.backends", "compiler.mlir_variants")


def compiler_failure(modules: tuple[str, ...] = STARTUP_MODULES) -> str | None:
    """None if ``modules`` import; else what failed, where in the compiler, and how to see it
    again (``python -c "import MODULE"``)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - whatever the compiler raises is the finding
            return describe(name, error)
    return None


def describe(module: str, error: BaseException) -> str:
    """The message for ``error``, raised while importing ``module``: the innermost frame in the
    compiler's own files, named relative to the package (never a machine path)."""
    frames = traceback.extract_tb(error.__traceback__)
    root = _compiler_root()
    where = "outside the compiler's files"
    for frame in reversed(frames):
        relative = _inside(frame.filename, root)
        if relative is not None:
            where = f"compiler/{relative}:{frame.lineno} in {frame.name}"
            break
    text = f"{type(error).__name__}: {error}".strip()
    return (
        f"the compiler under test does not import ({text}); raised at {where}, while importing "
        f"{module}. This is the compiler's failure, not the harness's: no case was run.\n"
        f'reproduce: python -c "import {module}"'
    )


def _compiler_root() -> Path | None:
    try:
        spec = importlib.util.find_spec("compiler")
    except Exception:  # noqa: BLE001 - a package that fails this early has no root to name
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _inside(filename: str, root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        return Path(os.path.realpath(filename)).relative_to(root).as_posix()
    except ValueError:
        return None


__all__ = ["COMPILER_DOES_NOT_IMPORT", "STARTUP_MODULES", "compiler_failure", "describe"]
