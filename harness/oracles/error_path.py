"""The error-path oracle: what a backend raises must be what NumPy's semantics call for.

- A valid program must compile: a verifier error, a failed pass or any other exception in the
  compiler is a finding (``verifier-error`` for a module that does not verify, ``pass-failure``
  for a stage that fails, ``internal-error`` otherwise).
- A program NumPy rejects must be rejected at trace time with an error of NumPy's class; one
  NumPy accepts must not be rejected.
- An invalid program (one planted violation) must be rejected with one of the violation's
  documented errors (NumPy's own class where NumPy rejects it), or with NumPy's own error.
- Errors match by class, as an ``except`` clause does: the compiler's error must be an instance
  of one (``BackendResult.error_classes``), not merely bear a name listed beside NumPy's.
- Known limitations (``UnsupportedFeature``) are counted, never findings, except when tracing
  refuses a valid program: the generator builds only programs the compiler's own result rules
  accept, so that refusal contradicts the primitive table.
"""

from __future__ import annotations

from ..run.references import Reference
from ..run.task import BackendResult
from .base import Finding, Observation, Oracle, group, register

# For each class of NumPy's errors, the classes a compiler's error must be an instance of (one
# of them) to be "the same kind of rejection": a caller's ``except`` written for NumPy's must
# catch it. NumPy's own subclasses count as their standard bases (an AxisError is a ValueError
# and an IndexError, a DTypePromotionError a TypeError).
REJECTIONS = {
    "ValueError": {"ValueError"},
    "AxisError": {"AxisError", "ValueError", "IndexError"},
    "IndexError": {"IndexError"},
    "TypeError": {"TypeError"},
    "OverflowError": {"OverflowError"},
    "DTypePromotionError": {"TypeError", "DTypePromotionError"},
    "UFuncTypeError": {"TypeError"},
    "UFuncNoLoopError": {"TypeError"},
}


#: The bases of the compiler's and NumPy's own error classes, by name, for a result that
#: recorded no classes (one made before ``BackendResult.error_classes``).
_BASES = {
    "InvalidIndex": {"InvalidIndex", "IndexError", "ValueError"},
    "AxisError": {"AxisError", "ValueError", "IndexError"},
    "UnsupportedFeature": {"UnsupportedFeature", "NotImplementedError"},
}


def catchable_as(result: BackendResult) -> set[str]:
    """The classes ``result``'s error is an instance of (``BackendResult.error_classes``; where
    those were not recorded, its name's known bases)."""
    return set(result.error_classes) or _BASES.get(result.error_type, {result.error_type})


def _raised(result: BackendResult) -> str:
    """``result``'s error as a finding names it: its class, and what else it is an instance of
    ("InvalidIndex (a ValueError)")."""
    classes = ", ".join(result.error_classes[1:])
    return f"{result.error_type} (a {classes})" if classes else result.error_type


def rejection_matches(numpy_error: str, result: BackendResult) -> bool:
    """Is ``result``'s error an instance of a class ``REJECTIONS`` accepts for NumPy's error?"""
    return bool(catchable_as(result) & REJECTIONS.get(numpy_error, {numpy_error}))


def compiler_failure_kind(result: BackendResult) -> str:
    """A module we built that does not verify, or a pipeline stage that failed."""
    return "verifier-error" if result.stage == "parse/verify" else "pass-failure"


def wrong_error(numpy_ref: Reference, result: BackendResult) -> str | None:
    """Why a valid program's ``result`` (ok, or ``rejected``) takes another path than NumPy's
    reference, while tracing or when run (None: the same path). Shared with the reproducers'
    verdict (``harness.verdict.error_path``)."""
    if not numpy_ref.ok:
        if result.ok:
            return (
                "compiler accepted a program NumPy rejects "
                f"({numpy_ref.error_type}: {numpy_ref.message})"
            )
        if not rejection_matches(numpy_ref.error_type, result):
            return f"compiler raised {_raised(result)}, NumPy raised {numpy_ref.error_type}"
        return None
    if result.status == "rejected":
        return f"compiler rejected a program NumPy accepts: {result.error_type}: {result.message}"
    return None


class ErrorPath(Oracle):
    name = "error-path"
    primary = True

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        case, numpy_ref = obs.case, obs.refs["numpy"]
        judgement = obs.judgement
        flagged: list[tuple[str, BackendResult, str]] = []
        for result in obs.results:
            if result.status == "compiler-error":
                kind = compiler_failure_kind(result)
                flagged.append((kind, result, f"{result.stage}: {result.message}"))
            elif result.status == "internal-error":
                flagged.append(("internal-error", result, f"{result.error_type}: {result.message}"))
            elif case.invalid is not None:
                self._invalid(obs, result, numpy_ref, flagged)
            elif result.status == "unsupported":
                if result.stage == "trace" and numpy_ref.ok:
                    # The program model builds none the compiler's result rules declare
                    # unsupported, but for a limitation by dtype that NumPy's result dtype does
                    # not explain (``DTYPE_LIMITATIONS``): tracing that refuses it contradicts
                    # the primitive table (a frontend regression), or the table NumPy (an int32
                    # mean typed by np.sum's rule), not a limit.
                    detail = (
                        "compiler refused, while tracing, a program its primitive table "
                        "declares supported (or declares unsupported by a dtype NumPy's "
                        f"result does not have): {result.message}"
                    )
                    flagged.append(("wrong-error", result, detail))
                else:
                    judgement.unsupported.append(f"{result.backend}: {result.message}")
            else:
                detail = wrong_error(numpy_ref, result)
                if detail is not None:
                    flagged.append(("wrong-error", result, detail))
                elif not numpy_ref.ok:
                    judgement.agreed_rejection = True
        return group(case, self.name, flagged, case.program.output_type.dtype)

    def _invalid(
        self,
        obs: Observation,
        result: BackendResult,
        numpy_ref: Reference,
        flagged: list[tuple[str, BackendResult, str]],
    ) -> None:
        """A program with one planted violation: the compiler must reject it at trace time with
        one of the violation's documented errors (where NumPy rejects it, the classes its own
        error is an instance of)."""
        invalid = obs.case.invalid
        allowed = {e.__name__ for e in invalid.errors}
        if result.ok and invalid.numpy_rejects and numpy_ref.ok:
            # Not invalid after all: NumPy takes it (an ambiguity), so may the compiler. (A
            # minimizer that shrank a broadcast violation's extents to 1 kept its "finding":
            # every backend accepting a program NumPy accepts.)
            obs.judgement.ambiguities.append(
                f"NumPy accepted a program labelled {invalid.violation}"
            )
            return
        if result.ok:
            said = f"raised {numpy_ref.error_type}" if not numpy_ref.ok else "has no such rule"
            detail = f"compiler accepted an invalid program ({invalid.violation}); NumPy {said}"
            flagged.append(("wrong-error", result, detail))
            return
        if result.status == "unsupported" and "NotImplementedError" in allowed:
            obs.judgement.agreed_rejection = True
            obs.judgement.unsupported.append(f"{result.backend}: {result.message}")
        elif result.status == "rejected" and (
            catchable_as(result) & allowed
            or (not numpy_ref.ok and rejection_matches(numpy_ref.error_type, result))
        ):
            # By the classes it is an instance of, as the reproducer's ``except`` judges it: an
            # out-of-range index must be an IndexError, whatever else it is (or NumPy's class
            # where NumPy took another path to its error: ``v[:len(v)]`` of a 0-d v is a
            # TypeError in both).
            obs.judgement.agreed_rejection = True
        else:
            numpy = f" or NumPy's {numpy_ref.error_type}" if not numpy_ref.ok else ""
            detail = (
                f"{invalid.violation}: compiler raised {_raised(result)} "
                f"({result.message[:200]}); expected an instance of one of {sorted(allowed)}{numpy}"
            )
            flagged.append(("wrong-error", result, detail))
        if invalid.numpy_rejects and numpy_ref.ok:
            obs.judgement.ambiguities.append(
                f"NumPy accepted a program labelled {invalid.violation}"
            )


register(ErrorPath())

__all__ = [
    "REJECTIONS",
    "ErrorPath",
    "catchable_as",
    "compiler_failure_kind",
    "rejection_matches",
    "wrong_error",
]
