"""Workarounds for upstream bugs, as named switches (all on by default).

Where the compiler emits something other than the natural IR only because MLIR or LLVM
mishandles the natural IR, the choice is registered here with the upstream issue it avoids, and
the emitter asks ``enabled(name)``. Turning a workaround off brings the upstream bug back, which
is how the harness keeps it honest: a corpus entry that needs it off (``Case.workarounds_off``)
replays ``still-open`` while the bug is upstream and ``fixed-now`` on the wheel that fixes it,
the day the workaround can go.

Off, for this thread: ``with compiler.workarounds.disabled("subview-rank-reduction"): ...``;
off, for a process and its children: ``COMPILER_DISABLE_WORKAROUNDS=name[,name]`` (read at each
check, so a reproducer may set it after importing the compiler). ``python -m compiler
workarounds`` lists them with their state. An unknown name is a ValueError naming the known
ones (a typo must not quietly leave the workaround on).

Caches that hold emitted IR key it by ``state()`` (compiler/driver.py); caches keyed by the IR
text itself need nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from .threadlocal import setting

#: The environment variable that turns workarounds off: comma-separated names.
ENV = "COMPILER_DISABLE_WORKAROUNDS"


@dataclass(frozen=True)
class Workaround:
    """One avoided upstream bug: its switch name, the upstream issue or PR, and what the
    compiler does instead (one line)."""

    name: str
    issue: str
    description: str
    # The upstream bug it avoids kills the process (an assertion, an abort in code
    # generation): turned off, a compile may take the process down, so only a caller that can
    # lose it does (``fatal``); the others give wrong answers or a raised compile error.
    fatal: bool = False
    # It changes every program's module as built (its kernel's attributes), so every cache keyed
    # by that text tells the configurations apart by it alone: the harness's check that caches
    # key the workarounds leaves it on, to see whether they key the others.
    emitted: bool = False


WORKAROUNDS: dict[str, Workaround] = {}


def register(
    name: str, issue: str, description: str, fatal: bool = False, emitted: bool = False
) -> Workaround:
    """Add a workaround (a plugin may register its own); names are unique. ``fatal``: the
    avoided bug kills the process; ``emitted``: it changes every program's module as built."""
    if name in WORKAROUNDS:
        raise ValueError(f"workaround {name!r} is already registered")
    if not name or "," in name or name != name.strip():
        raise ValueError(f"workaround names are non-empty, without commas or spaces: {name!r}")
    WORKAROUNDS[name] = workaround = Workaround(name, issue, description, fatal, emitted)
    return workaround


def survivable() -> tuple[str, ...]:
    """The workarounds a process may turn off and live: their bugs give wrong answers or
    compile errors (a harness that checks what caches key by ``state()`` compiles under
    them)."""
    return tuple(sorted(name for name, w in WORKAROUNDS.items() if not w.fatal))


register(
    "subview-rank-reduction",
    "llvm/llvm-project: this case not reported yet (related: #60091, #111244 / PR #183995, "
    "PR #184334)",
    "slices are never rank-reducing (a tensor.reshape drops the dims an integer index removes): "
    "a rank-reducing memref.subview with a non-unit step on a size-1 dim asserts in "
    "SubViewOp::getDroppedDims under expand-strided-metadata (MLIR 22.1.8)",
    fatal=True,
)


register(
    "bf16-power-of-two-vectors",
    "llvm/llvm-project: not reported yet (related: #63017, closed)",
    "cpu-vector gives ops on bfloat16 power-of-two vector sizes, masked past the extent: X86 "
    "codegen aborts on bfloat16 vector arithmetic of 9-15, 17, 31, 33... lanes where the CPU "
    "has AVX512-BF16 or AVX-NE-CONVERT (SoftPromoteHalfOperand of a v8bf16 scalar_to_vector: "
    "'Do not know how to soft promote this operator's operand!'; LLVM 22.1.8)",
    fatal=True,
)


register(
    "unmasked-minmax",
    "llvm/llvm-project PR #222275 (fixed on main, after MLIR 22.1.8)",
    "cpu-vector never masks a max or min reduction (chunks that divide the row): "
    "convert-vector-to-llvm gives a masked vector.reduction <maximumf>/<minimumf> the neutral "
    "-1.4e-45 / 1.4e-45 instead of -inf / +inf, so a float32 max of 300 negative numbers was "
    "-1e-45 and a masked bfloat16 max -0.0",
)


register(
    "unmasked-nd-extract",
    "llvm/llvm-project #206209 (fixed by PR #206207, after MLIR 22.1.8)",
    "cpu-vector never masks a gather whose ids have rank 2 or more (chunks that divide the "
    "row): the vectorizer's contiguous read of a tensor.extract from a table of fewer dims than "
    "the loops got a mask of the loop rank ('vector.mask' op expects a 'vector<1x4xi1>' mask), "
    "and the compile failed; a bfloat16 gather from a 1x3 table by 5x6 ids, or an int32 one "
    "from 1x17 (MLIR 22.1.8)",
)


register(
    "bf16-rounding-in-integers",
    "llvm/llvm-project PR #221052 (open; the same bug: JuliaMath/BFloat16s.jl#125, worked around "
    "by JuliaLang/julia PR #63012)",
    "float32 is rounded to bfloat16 with integer operations (nearest, ties to even; a NaN stays "
    "a NaN), not arith.truncf: on CPUs with AVX512-BF16 or AVX-NE-CONVERT, X86 codegen selects "
    "vcvtneps2bf16 for fptrunc float to bfloat, which flushes subnormal inputs and results to "
    "zero, so sin(x) of a bfloat16 subnormal x was 0 on every target (LLVM 22.1.8); and "
    "kernels with bfloat16 in them (gpu-emulated's, every CPU target's) are compiled without "
    "those two features (-avx512bf16, -avxneconvert, as Julia does): InstCombine narrows a "
    "float32 maximum of two extended bfloat16 values to a bfloat16 one, whose promotion "
    "truncates with vcvtneps2bf16 again, so a bfloat16 max over rows of 9.2e-41 and -3.45 was "
    "0 (gpu-emulated), and the min of (1.62, 0.637, 9.18e-41) on cpu-vector at -O2",
)


register(
    "one-restrict-output",
    "llvm/llvm-project: not reported yet",
    "only a kernel's last result is materialized into its output buffer with `restrict` (the "
    "one eliminate-empty-tensors may compute in place): where two results shared a filled init "
    "(CSE merges the fills), empty tensor elimination and one-shot-bufferize computed one in the "
    "other's output buffer and overwrote it before copying it out; (x.sum(), y.sum()) returned "
    "the first sum twice (MLIR 22.1.8)",
)


register(
    "optnone-half-vectors",
    "llvm/llvm-project: not reported yet (tests/upstream/test_llvm_22_1_8.py)",
    "an \"@O0\" kernel's functions are marked optnone (clang -O0's marking, which gives them -O0 "
    "code generation) except those with a vector of float16 or bfloat16: X86 code generation "
    "asserts in APInt on a masked load or gather of 8 or more halves, and on a bfloat16 "
    "extension of 4 lanes, in an optnone function at -O1..-O3 (LLVM 22.1.8), and the JIT "
    "generates code at -O2",
    fatal=True,
)


register(
    "emulation-without-avx512",
    "llvm/llvm-project #179489 (fixed by PR #179853 on main, not in LLVM 22.1.8)",
    "gpu-emulated's kernel is compiled without AVX-512 (-avx512f): X86 codegen stores a "
    "truncating masked store with one lane set (the loop vectorizer's folded tail, its mask "
    "constant once the loop is unrolled) as a store of the whole wide lane, 4 bytes for a 2-byte "
    "bfloat16 (vmovss/vmovd), so the emulated x.mean(axis=-2) of a bfloat16 (4, 1, 9) wrote 2 "
    "bytes past a 72-byte buffer and glibc aborted at a later free (LLVM 22.1.8; truncating "
    "masked stores need AVX-512)",
    fatal=True,
)


register(
    "nan-operands-selected",
    "llvm/llvm-project: not reported yet (tests/upstream/test_llvm_22_1_8.py)",
    "NumPy's maximum and minimum of floats select a NaN operand explicitly after "
    "arith.maximumf/minimumf (a NaN first operand, else a NaN second one): X86 code generation "
    "of llvm.maximum/llvm.minimum with one operand it knows is never NaN (an integer converted "
    "to float) and a signaling NaN in the other returns the number, where a quiet NaN gives "
    "NaN, so np.maximum(x, y) of an int32 x and a float64 y holding 0x7ff0000000000001 was x "
    "at -O2 and -O3 (LLVM 22.1.8; for a generic x86-64 CPU and AVX-512 ones alike)",
)


register(
    "emulation-at-o1",
    "llvm/llvm-project: not reported yet (tests/upstream/test_llvm_22_1_8.py)",
    "gpu-emulated's kernel is JIT-compiled at LLVM -O1, not -O2 (no SLP vectorizer): for this "
    "CPU less AVX-512 (emulation-without-avx512) the SLP vectorizer turns the emulated copy of "
    "a transposed operand into one <24 x float> load and shuffles, right as IR, which X86 code "
    "generation for AVX2 CPUs (x86-64-v3 to v4; not znver4) miscompiles: gpu-emulated's float32 "
    "x @ y.T of two (4, 6) arrays gave 231 where NumPy gives 235 (LLVM 22.1.8)",
)


register(
    "libm-calls-kept",
    "llvm/llvm-project: not reported yet (tests/upstream/test_llvm_22_1_8.py)",
    "a kernel's functions are marked \"no-builtins\" (MLIR's passthrough attribute), so LLVM "
    "keeps its libm calls as calls: without a fast-math flag, LLVM's library call simplifier "
    "turns pow(2**n, x) into exp2(n * x) wherever the library has exp2, and n * x rounds "
    "before exp2 sees it unless n is a power of two, so pow(8.0, x) became exp2(3.0 * x), 355 "
    "ulps off NumPy at x = 300.33251 in float64 at -O3 (the same pipeline at -O0 calls pow; "
    "LLVM 22.1.8)",
    emitted=True,
)


register(
    "expm1-log1p-libm",
    "llvm/llvm-project: not reported yet (tests/upstream/test_mlir_22_1_8.py)",
    "every CPU target's libm stage (compiler/lower/libm.py) calls libm's expm1 and log1p for "
    "math.expm1 and math.log1p, a vector lane by lane: convert-math-to-llvm lowers them as "
    "exp(x) - 1 and log(1 + x) (approximate-log1p is on by default), which cancel near zero, "
    "expm1(1e-10) 1.00000008e-10 in float64 (MLIR 22.1.8)",
)


def check(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` (sorted, distinct), each a registered workaround; else a ValueError that
    lists the known ones."""
    names = tuple(names)
    unknown = [n for n in names if n not in WORKAROUNDS]
    if unknown:
        raise ValueError(
            f"unknown workaround {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(sorted(WORKAROUNDS)) or 'none'}"
        )
    return tuple(sorted(set(names)))


def parse(text: str) -> tuple[str, ...]:
    """Names from ``name[,name]`` (blanks ignored), checked."""
    return check([n.strip() for n in text.split(",") if n.strip()])


_LOCAL = threading.local()


def _env() -> tuple[str, ...]:
    text = os.environ.get(ENV, "")
    if not text.strip():
        return ()
    try:
        return parse(text)
    except ValueError as error:
        raise ValueError(f"{ENV}={text!r}: {error}") from None


def state() -> tuple[str, ...]:
    """The workarounds off here and now (the environment's and this thread's), sorted: the key
    of anything built under them."""
    local: tuple[str, ...] = getattr(_LOCAL, "off", ())
    env = _env()
    return tuple(sorted(set(env) | set(local))) if local or env else ()


def enabled(name: str) -> bool:
    """Is workaround ``name`` on (the default)?"""
    check((name,))
    return name not in state()


def disabled(*names: str) -> contextlib.AbstractContextManager[None]:
    """Turn the named workarounds off inside this block, in this thread (nests; ``disabled()``
    with no names changes nothing)."""
    names = check(names)
    before: tuple[str, ...] = getattr(_LOCAL, "off", ())
    return setting(_LOCAL, "off", tuple(sorted(set(before) | set(names))), ())


def describe() -> list[dict[str, str]]:
    """Every workaround with its state here: name, issue, description, ``on``/``off``, and
    what turning it off risks."""
    off = state()
    return [
        {
            "name": w.name,
            "issue": w.issue,
            "description": w.description,
            "state": "off" if w.name in off else "on",
            "off": "kills the process where its bug hits" if w.fatal else "wrong answers",
        }
        for w in WORKAROUNDS.values()
    ]


__all__ = [
    "ENV",
    "WORKAROUNDS",
    "Workaround",
    "check",
    "describe",
    "disabled",
    "enabled",
    "parse",
    "register",
    "state",
    "survivable",
]
