"""Pipeline bisection: which single change to the pipeline makes a failure disappear.

Each alternative runs the minimized case on a variant of the failing backend (fusion off, BLAS
off, LLVM at -O0) and asks whether the *same failure* (``Signature.matches``: same kind and
oracle, whatever the backend is called) still happens there.
"""

from __future__ import annotations

from ..case import Case
from ..oracles.base import Finding
from .minimize import Predicate
from .signature import backend_family


def alternatives(backend: str) -> list[tuple[str, str]]:
    """(change, variant backend) pairs for one of our CPU backends."""
    base = backend_family(backend)
    found = []
    if not base.endswith("-unfused"):
        found.append(("fusion off", f"{base}-unfused"))
    if "blas" in base:
        found.append(("BLAS off", base.replace("blas", "loops")))
    found.append(("LLVM -O0", f"{base}@O0"))
    return found


def bisect_pipeline(case: Case, finding: Finding, predicate: Predicate) -> dict[str, str]:
    """Per failing backend: the single changes that make the failure disappear."""
    changes = {}
    for backend in sorted(set(finding.backends)):
        outcome = {}
        for name, variant in alternatives(backend):
            result = predicate(case.on((variant,)))
            same = result is not None and result.signature.matches(finding.signature)
            outcome[name] = "still fails" if same else "passes"
        fixes = [name for name, verdict in outcome.items() if verdict == "passes"]
        summary = (
            f"disappears with: {', '.join(fixes)}"
            if fixes
            else "fails under every single change (frontend or builder)"
        )
        changes[backend] = summary + " [" + "; ".join(f"{k}: {v}" for k, v in outcome.items()) + "]"
    return changes


__all__ = ["alternatives", "bisect_pipeline"]
