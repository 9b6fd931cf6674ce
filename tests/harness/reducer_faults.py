"""A candidate maker that dies in the bindings' way (an abort) for the reducer's isolation test:
importable by the isolated process, which runs what the test hands it."""

from __future__ import annotations

import os
import sys


def abort_on_erasing_the_first_op(text: str, transform: str, i: int) -> str | None:
    """``mlir_reduce._candidate``, except that erasing op 0 aborts the process, as the MLIR
    bindings do when a mutated module fails an assertion while printing."""
    from harness.triage.mlir_reduce import TRANSFORMS, _candidate

    if transform == next(iter(TRANSFORMS)) and i == 0:
        sys.stderr.write("Assertion `detail::isPresent(Val)' failed.\n")
        os.abort()
    return _candidate(text, transform, i)
