"""The memory oracle: a kernel frees every heap block it allocates before it returns.

Our kernels write their results into buffers the caller hands them (``compiler.runtime``), so
whatever they ``malloc`` is a temporary, and the ownership-based deallocation of bufferization
(``buffer-deallocation-pipeline`` in ``compiler/pipelines.py``) must free it by the end of the
call. A temporary it leaves behind changes no answer, so no oracle of values sees it: a
dropped deallocation stage leaked on half the cases of a session, every call, and only memory
that grows without end would have shown it. The worker counts the blocks an instrumented
kernel's first call allocates and frees (``compiler.runtime.live_blocks``) and sets
``BackendResult.leaked``; more than zero is a ``leak`` finding, fewer a ``bad-free`` one (it
freed a block it did not allocate, which the allocator often survives).
"""

from __future__ import annotations

from .base import Finding, Observation, Oracle, register


class Memory(Oracle):
    """Findings from ``BackendResult.leaked``, set by the worker."""

    name = "memory"

    def judge(self, obs: Observation, derived: list) -> list[Finding]:
        findings = []
        for result in obs.results:
            leaked = getattr(result, "leaked", None)
            if not result.ok or not leaked:
                continue
            if leaked > 0:
                kind = "leak"
                detail = (
                    f"{leaked} heap block(s) the kernel allocated were still allocated when the "
                    "call returned: a temporary that is never freed (the deallocation of "
                    "bufferization, its place in compiler/pipelines.py, or a later stage that "
                    "allocates)"
                )
            else:
                kind = "bad-free"
                detail = (
                    f"the kernel freed {-leaked} more heap block(s) than it allocated: it frees "
                    "memory it does not own"
                )
            findings.append(
                Finding(kind, (result.backend,), self.name, detail, obs.case, result=result)
            )
        return findings


register(Memory())

__all__ = ["Memory"]
