"""The memory oracle: a kernel frees every heap block it allocates before it returns, and
writes nothing outside the buffers it owns.

Our kernels write their results into buffers the caller hands them (``compiler.runtime``), so
whatever they ``malloc`` is a temporary, and the ownership-based deallocation of bufferization
(``buffer-deallocation-pipeline`` in ``compiler/pipelines.py``) must free it by the end of the
call. A temporary it leaves behind changes no answer, so no oracle of values sees it: a
dropped deallocation stage leaked on half the cases of a session, every call, and only memory
that grows without end would have shown it. The worker counts the blocks an instrumented
kernel's first call allocates and frees (``compiler.runtime.live_blocks``) and sets
``BackendResult.leaked``; more than zero is a ``leak`` finding, fewer a ``bad-free`` one (it
freed a block it did not allocate, which the allocator often survives).

Out-of-bounds stores change no answer either while nothing reads what lies past the end (a loop
bound one too far, a vector tail written unmasked, a tile that is not clipped): an instrumented
kernel gets its inputs copied and its outputs in slabs with ``GUARD_BYTES`` of a known byte on
both sides, its own heap blocks are guarded alike and checked when freed, and its static
temporaries (cpu-vector's globals) get a guard after their end (``compiler.runtime``:
``memory_faults``). A changed guard byte is an ``overrun`` finding; a changed
input (NumPy never writes into an operand) an ``input-written`` one; an output that shares
memory with an argument (on any backend: each returns arrays of its own) an ``aliased-input``
one. A kernel of ours that comes
back uninstrumented though the worker compiled it inside ``compiler.runtime.instrumented()`` is
an ``uninstrumented`` finding: every check above, and the blas oracle's, would pass blind.
"""

from __future__ import annotations

from .base import Finding, Observation, Oracle, register

#: The kinds of ``compiler.runtime.memory_faults`` lines (their prefix), each a finding kind; the
#: worker adds ``aliased-input`` on any backend (``worker._aliased_inputs``).
FAULT_KINDS = ("overrun", "input-written", "aliased-input")
#: The kind, and the line the worker writes into ``BackendResult.memory_faults``, for a kernel
#: of ours made without the instrumentation it asked for (``compiler.runtime.instrumented``).
UNINSTRUMENTED = "uninstrumented"
UNINSTRUMENTED_LINE = (
    f"{UNINSTRUMENTED}: the kernel was compiled inside compiler.runtime.instrumented() but is "
    "not instrumented: its leaks, stores outside its buffers and gemm calls cannot be counted"
)


class Memory(Oracle):
    """Findings from ``BackendResult.leaked`` and ``BackendResult.memory_faults``, set by the
    worker."""

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
        blind = [
            r for r in obs.results
            if r.ok and any(f.startswith(UNINSTRUMENTED + ":") for f in r.memory_faults or ())
        ]  # fmt: skip
        if blind:  # one finding: the setting is the process's, not the case's dtype or backend
            detail = blind[0].memory_faults[0].partition(": ")[2]
            backends = tuple(dict.fromkeys(r.backend for r in blind))
            findings.append(
                Finding(UNINSTRUMENTED, backends, self.name, detail, obs.case, "any", blind[0])
            )
        for result in obs.results:
            faults = getattr(result, "memory_faults", None) or ()
            for kind in FAULT_KINDS:
                lines = [f.partition(": ")[2] for f in faults if f.startswith(kind + ":")]
                if lines and result.ok:
                    detail = "; ".join(lines[:3]) + (
                        f"; {len(lines) - 3} more" if len(lines) > 3 else ""
                    )
                    findings.append(
                        Finding(kind, (result.backend,), self.name, detail, obs.case, result=result)
                    )
        return findings


register(Memory())

__all__ = ["FAULT_KINDS", "UNINSTRUMENTED", "UNINSTRUMENTED_LINE", "Memory"]
