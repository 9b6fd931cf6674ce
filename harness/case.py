"""A case: what to try (a program, or an invalid program), on which inputs and backends.

A case is plain data (``to_dict``/``from_dict``) so it can be written ahead to disk before it runs,
sent to an isolated worker, stored in the corpus and replayed bit-exactly. Small inputs are stored
inline (raw little-endian bytes, zlib, base64); large ones as the seed and scale that regenerate
them. Anything that decides a verdict beyond the case's data (which optional checks run) is drawn
from the case's own content hash without its backends (``draw``, ``toggle``, ``pick``), so a
replay or a shrink step sees the same checks on whichever of its backends it runs.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ml_dtypes
import numpy as np

from compiler.primitives import SPELLINGS
from strategies.model import InvalidProgram, Program, Subject, canonical
from strategies.model.gpt2 import LEADING as GPT2_LEADING
from strategies.model.gpt2 import ModelSpec, embedding
from strategies.model.gpt2 import inputs as gpt2_inputs
from strategies.model.sequence import JitSequence

INLINE_LIMIT = 1 << 16  # elements; beyond this inputs are stored as a generator recipe

#: Every case of a default session runs on these: each CPU target, with LLVM at -O0 (the JIT is
#: most of a case's time, and at -O3 it costs three times as much; the bugs of this compiler's
#: own stages show at any level). Identical lowered modules are JIT-compiled once.
CPU_BACKENDS = (
    "cpu-loops@O0",
    "cpu-blas@O0",
    "cpu-loops-unfused@O0",
    "cpu-blas-unfused@O0",
    "cpu-vector@O0",
)
#: ...and a share of cases (SAMPLED_SHARE) also on targets as shipped, so LLVM's optimizer
#: stays covered: cpu-blas and cpu-vector at -O3 (their kernels JIT-compiled together, as
#: ``JitFunction.prepare`` links a level's kernels), and ``cpu``, the @jit default (cpu-vector
#: at LLVM -O2: what a user's program runs unless it names a target; no session had run the
#: default itself).
SAMPLED_BACKENDS = ("cpu-blas", "cpu-vector", "cpu")
SAMPLED_SHARE = 0.25
#: ...and another share (its own coin) also on the GPU lowering, run on the CPU where no device
#: is (``gpu-emulated``: every stage, ptxas on each kernel, the mapped stage run sequentially),
#: so a bug of the GPU layer is met by default sessions. It costs about 0.2 s a case (stages,
#: ptxas and the emulated run alike): an eighth of the cases, ~10% of a session's rate.
GPU_SAMPLED = "gpu-emulated"
GPU_SHARE = 0.125
#: ...and another share (its own coin) also on one of the triage variants attribution asks
#: (``compiler.backends.VARIANT_SUFFIXES``), judged like any backend: a variant wrong where
#: the backend it varies is right makes attribution lie, and none ran in a session (a held-out
#: plant had ``+poison-checks`` abort on the float -2**31 converted to int32, which is defined).
#: An -O0 compile more on a sixteenth of the cases.
TRIAGE_SAMPLED = (
    "cpu-loops+poison-checks@O0",
    "cpu-vector+poison-checks@O0",
    "cpu-loops+generic-cpu@O0",
    "cpu-vector+generic-cpu@O0",
    "cpu-loops+mlir-runtime@O0",
    "cpu-vector+copied-gathers@O0",
    "cpu-loops+plain-libm@O0",
    "cpu-loops+optimized-codegen@O0",
)
TRIAGE_SHARE = 0.0625
#: ...and a share of the cases (a coin each) also on the backends no default session had run,
#: whose bugs only sessions that named them met (a held-out plant in ``graph-numpy`` survived
#: every 60 s session; three in the ``mlir:*`` known-broken machinery still do, which only
#: ``mlir:known-broken:*`` sessions reach): ``graph-numpy``, the traced graph interpreted by
#: NumPy, which attribution takes for the truth of our frontend (wrong, it makes triage lie;
#: about a tenth of a compile a case), and a drawn ``mlir:*`` pipeline variant at -O0
#: (upstream passes around our bufferization, as ``compiler.mlir_variants``' catalog builds
#: them: one -O0 compile more).
GATEWAY_SAMPLED = {"graph-numpy": 0.25, "mlir:*@O0": 0.125}

#: The targets users run (the sampled ones): named as users name them (no ``@O<n>``, no stage
#: prefix), a backend runs its kernels as users get them, not instrumented
#: (``instrumented_backend``).
AS_SHIPPED = SAMPLED_BACKENDS


def instrumented_backend(name: str) -> bool:
    """Does the worker run backend ``name``'s kernels instrumented (``compiler.runtime.
    instrumented``: poisoned memory, guards, counted heap blocks and gemm calls, which the
    memory and blas oracles read)? Every backend but those named as users run them
    (``AS_SHIPPED``, and their triage variants ``NAME+variant``): instrumentation changes what
    LLVM's optimizer is given (cpu-vector's static temporaries get a poisoned initializer and
    a guard whose address escapes, so LLVM keeps them in memory), and an optimization that only
    the user's kernel meets would go unseen: a bfloat16 min reduction that LLVM narrowed to
    AVX512-BF16's conversion, which flushes subnormals, gave 0 for 9.2e-41 on cpu-vector
    uninstrumented and the right answer instrumented. The ``@O<n>`` backends that every case
    runs keep the memory and blas oracles' checks."""
    family = name.split("+", 1)[0]
    return "@" in name or "[" in name or family not in AS_SHIPPED


#: How many siblings a case has: the same program, backends, spelling and layouts on values of
#: another regime, each at the edges of one of its ops (``session.generate.siblings``). Judging
#: one reuses every stage and kernel the worker compiled for the case (a compile and run is
#: ~90% of a case): 6.4 ms against 90 ms in the worker (8 against 93 with NumPy's and the
#: truth's references), two cost ~14% of the case rate in all
#: (README, Speed); without them a regime is one draw of eleven per compile (a max whose
#: identity is 0 shows only on a row of negatives).
SIBLINGS = 2


#: Stored dtypes beyond NumPy's numeric kinds: ml_dtypes' bfloat16 (compiler/dtypes.py).
EXTENSION_DTYPES = {"bfloat16": ml_dtypes.bfloat16}


def encode_array(array: np.ndarray) -> dict[str, Any]:
    # np.require keeps a 0-d array 0-d (np.ascontiguousarray makes it 1-d: the harness once
    # reported its own shape change as a compiler bug).
    array = np.require(np.asarray(array), requirements="C")
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "zlib": base64.b64encode(zlib.compress(raw, 6)).decode("ascii"),
    }


def generated_array(shape: tuple[int, ...], dtype: str, seed: int, scale: float) -> np.ndarray:
    """A normal array that the same (seed, scale) regenerates bit-exactly anywhere."""
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    return values.astype(dtype)


def decode_array(data: dict[str, Any], max_bytes: int = 64 << 20) -> np.ndarray:
    """The array stored by ``encode_array`` (or regenerated from its recipe).

    Stored arrays come from untrusted corpus files, so everything is checked before memory is
    spent: a plain numeric dtype spelled as NumPy names it, a non-negative shape whose bytes
    (shape x itemsize) are at most ``max_bytes`` (the corpus's ``MAX_ARRAY_BYTES``), and a zlib
    stream that inflates to exactly that many bytes (inflated with a ``max_length``, so a bomb
    stops one byte past the shape). Any problem is a ValueError.
    """
    import binascii
    import math

    if not isinstance(data, dict):
        raise ValueError(f"a stored array is an object, not {type(data).__name__}")
    name = data.get("dtype")
    try:
        dtype = np.dtype(name) if isinstance(name, str) else None
    except TypeError:
        dtype = None
    if name in EXTENSION_DTYPES:  # ml_dtypes' (kind "V" to NumPy), by name only
        dtype = np.dtype(EXTENSION_DTYPES[name])
    elif dtype is None or dtype.kind not in "biufc" or dtype.name != name:
        raise ValueError(f"dtype {name!r} is not a plain numeric NumPy dtype name")
    shape = data.get("shape")
    if not isinstance(shape, list | tuple) or len(shape) > 32:
        raise ValueError(f"shape must be a list of at most 32 extents, got {shape!r:.80}")
    integer = (int, np.integer)
    if not all(isinstance(n, integer) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"shape extents must be non-negative integers, got {shape!r:.80}")
    shape = tuple(int(n) for n in shape)
    expected = math.prod(shape) * dtype.itemsize
    if expected > max_bytes:
        raise ValueError(f"shape {shape} of {name} is {expected} bytes, over {max_bytes}")
    if "generator" in data:
        recipe = data["generator"]
        seed = recipe.get("seed") if isinstance(recipe, dict) else None
        scale = recipe.get("scale") if isinstance(recipe, dict) else None
        number = (int, float, np.integer, np.floating)
        if (
            not isinstance(seed, integer)
            or isinstance(seed, bool)
            or seed < 0
            or not isinstance(scale, number)
            or isinstance(scale, bool)
            or not math.isfinite(scale)
        ):
            raise ValueError(f"generator recipe needs a seed >= 0 and a scale, got {recipe!r:.80}")
        return generated_array(shape, dtype.name, int(seed), float(scale))
    text = data.get("zlib")
    if not isinstance(text, str):
        raise ValueError("a stored array needs 'zlib' (a base64 string) or 'generator'")
    try:
        packed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"inline bytes are not base64 ({error})") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, expected + 1)  # max_length 0 would mean "no limit"
    except zlib.error as error:
        raise ValueError(f"inline bytes are not a zlib stream ({error})") from None
    if len(raw) > expected or inflater.unconsumed_tail:
        raise ValueError(f"inline bytes inflate past the {expected} bytes of shape {shape}")
    if not inflater.eof:
        raise ValueError("inline zlib stream is truncated")
    if inflater.unused_data:
        raise ValueError("inline zlib stream is followed by other bytes")
    if len(raw) != expected:
        raise ValueError(
            f"inline bytes are {len(raw)} bytes, shape {shape} of {name} needs {expected}"
        )
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _number(name: str, content: str) -> int:
    key = hashlib.sha256(f"{name}:{content}".encode()).digest()
    return int.from_bytes(key[:8], "big")


def parse_gpt2(data: Any) -> tuple[ModelSpec, int]:
    """A stored GPT-2 model (``Case.extra["gpt2"]``: its spec and seed); ValueError where it is
    malformed or beyond ``strategies.model.gpt2.LIMITS``."""
    if not isinstance(data, dict) or not isinstance(data.get("spec"), dict):
        raise ValueError(f"malformed gpt2 model {data!r:.200}")
    seed = data.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"gpt2 model seed must be a non-negative integer, got {seed!r:.40}")
    try:
        return ModelSpec.from_dict(data["spec"]), seed
    except TypeError as error:  # an unhashable field value
        raise ValueError(f"malformed gpt2 model spec: {error}") from None


@dataclass
class Case:
    """What to run: ``subject`` (a Program, or an InvalidProgram for the error-path oracle) on
    ``inputs`` with each of ``backends``.

    ``checks`` name structural oracles that apply on top of the differential one (``causal``);
    ``origin`` says which strategy made it (for statistics only: no oracle reads it);
    ``recipes`` optionally hold, per input, the generator recipe it came from (large inputs are
    then stored as the recipe instead of their bytes); ``workarounds_off`` names compiler
    workarounds for upstream bugs (``compiler.workarounds``) that the worker turns off around
    compiling it, so a finding that needs the upstream bug back replays with it off.
    """

    subject: Subject
    inputs: list[np.ndarray]
    backends: tuple[str, ...] = CPU_BACKENDS
    checks: tuple[str, ...] = ()
    origin: str = ""
    recipes: list[dict[str, Any] | None] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    workarounds_off: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Arrays, as stored: a NumPy scalar (np.round of a 0-d array is one) is stored as a 0-d
        # array, so a case holding one judged another program than its stored copy replays (a
        # minimized "nested" finding needed the scalar and replayed fixed-now)
        if any(isinstance(a, np.generic) for a in self.inputs):
            self.inputs = [np.asarray(a) if isinstance(a, np.generic) else a for a in self.inputs]

    # ---- the subject

    @property
    def invalid(self) -> InvalidProgram | None:
        return self.subject if isinstance(self.subject, InvalidProgram) else None

    @property
    def program(self) -> Program:
        """The valid program (an invalid program's valid part)."""
        return self.subject.program if isinstance(self.subject, InvalidProgram) else self.subject

    @property
    def spelling(self) -> str:
        """How the program is written (``compiler.primitives.SPELLINGS``; ``extra["spelling"]``,
        absent for the default "array-api"): the compiler traces it so and its reproducer prints
        it so. NumPy's semantics do not depend on it (ndarray methods and operators are NumPy's
        functions), so the references evaluate the default spelling: the extended-precision
        truth keeps its own ``xp.astype``, which a method call would bypass."""
        spelling = self.extra.get("spelling", SPELLINGS[0])
        if spelling not in SPELLINGS:
            raise ValueError(f"unknown spelling {spelling!r} (one of {SPELLINGS})")
        return spelling

    def function(self, namespace: Any) -> Any:
        """The case's function with ``xp`` bound to ``namespace`` (a reference's), in the
        default spelling."""
        return self.subject.as_function(namespace)

    def traced_function(self) -> Any:
        """The function ``compiler.jit`` traces: ``xp`` is the traced tensors' namespace, or
        NumPy's module in the "numpy" spelling (which traced tensors take over)."""
        return self.subject.as_function(None, self.spelling)

    def respelled(self, spelling: str) -> Case:
        """The same case written in ``spelling``."""
        return self._with_option("spelling", spelling if spelling != SPELLINGS[0] else None)

    @property
    def layouts(self) -> tuple[str, ...]:
        """The memory layout each input is handed to the compiler in (``run/layouts.py``;
        ``extra["layouts"]``, absent when every input is a plain C-contiguous array)."""
        from .run.layouts import DEFAULT, LAYOUTS

        names = tuple(self.extra.get("layouts", ()))
        if len(names) > len(self.inputs) or any(n != DEFAULT and n not in LAYOUTS for n in names):
            raise ValueError(f"bad input layouts {names!r} for {len(self.inputs)} inputs")
        return names

    def with_layouts(self, names: tuple[str, ...] | list[str]) -> Case:
        """The same case with inputs handed over in ``names`` (all default: none stored)."""
        from .run.layouts import DEFAULT

        return self._with_option("layouts", list(names) if set(names) - {DEFAULT} else None)

    def _with_option(self, key: str, value: Any) -> Case:
        """A copy whose ``extra[key]`` is ``value`` (absent for None: the default is not stored,
        so cases without the option keep their digests)."""
        extra = {k: v for k, v in self.extra.items() if k != key}
        if value is not None:
            extra[key] = value
        return self._carrying_sequence(replace(self, extra=extra))

    def _carrying_sequence(self, copy: Case) -> Case:
        """``copy`` with this case's decoded jit sequence (its ``extra["sequence"]`` is the same
        object, so the decoding still applies)."""
        if "_sequence" in self.__dict__:
            copy.__dict__["_sequence"] = self.__dict__["_sequence"]
        return copy

    def arranged(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """``inputs`` (the case's, or a set of the same types) in the case's layouts."""
        from .run.layouts import arranged

        return arranged(list(inputs), self.layouts)

    @property
    def sequence(self) -> JitSequence | None:
        """The jit sequence the case also runs (``extra["sequence"]``; its first call is the
        subject on the inputs), or None. A malformed stored sequence is a ValueError."""
        data = self.extra.get("sequence")
        if data is None:
            return None
        cached = self.__dict__.get("_sequence")
        if cached is None or cached[0] is not data:
            cached = (data, JitSequence.from_dict(data, decode_array))
            self.__dict__["_sequence"] = cached
        return cached[1]

    @classmethod
    def from_sequence(
        cls, sequence: JitSequence, backends: tuple[str, ...], origin: str = "jit-sequence"
    ) -> Case:
        """The case of a jit sequence: its first call's program and inputs as the subject (an
        ordinary case for every other oracle), the whole sequence in ``extra``."""
        extra = {"sequence": sequence.to_dict(encode_array)}
        case = cls(sequence.program(0), sequence.inputs(0), tuple(backends), (), origin, [], extra)
        case.__dict__["_sequence"] = (extra["sequence"], sequence)  # decoded: the same data
        return case

    def without_sequence(self) -> Case:
        """The same case as a plain program case (a jit sequence's first call alone; a GPT-2
        model case's embedding alone)."""
        dropped = ("sequence", "gpt2")
        return replace(self, extra={k: v for k, v in self.extra.items() if k not in dropped})

    @property
    def carries_run(self) -> bool:
        """Does the case carry a run of its own beyond its program (a jit sequence, a GPT-2
        model)? Such a case is not respelled, laid out, given siblings or sampled backends: its
        subject is only the first step of what it runs, which those would leave behind."""
        return "sequence" in self.extra or "gpt2" in self.extra

    @property
    def gpt2(self) -> tuple[ModelSpec, int] | None:
        """The GPT-2 model the case also runs through ``compiler.model`` (``extra["gpt2"]``: its
        spec, and the seed of the weights past the subject's inputs), or None. A malformed
        stored spec is a ValueError."""
        data = self.extra.get("gpt2")
        return None if data is None else parse_gpt2(data)

    @classmethod
    def from_gpt2(
        cls,
        spec: ModelSpec,
        seed: int,
        backends: tuple[str, ...],
        origin: str = "gpt2",
        leading: list[np.ndarray] | None = None,
    ) -> Case:
        """The case of a GPT-2 model: its embedding (``strategies.model.gpt2.embedding``) on
        the model's first inputs (``leading``, else made from ``seed``) as the subject, an
        ordinary case for every other oracle; the model in ``extra``."""
        if leading is None:
            leading = gpt2_inputs(spec, seed)[:GPT2_LEADING]
        extra = {"gpt2": {"spec": spec.to_dict(), "seed": int(seed)}}
        return cls(embedding(spec), list(leading), tuple(backends), (), origin, [], extra)

    def with_subject(
        self,
        subject: Subject,
        inputs: list[np.ndarray] | None = None,
        kept: tuple[int, ...] | None = None,
    ) -> Case:
        """A copy running ``subject`` (on ``inputs``); recipes and a jit sequence no longer
        apply, nor input layouts when the inputs are others in number, unless ``kept`` says
        which of this case's inputs they are (each keeps its layout)."""
        inputs = list(self.inputs if inputs is None else inputs)
        copy = replace(self.without_sequence(), subject=subject, inputs=inputs, recipes=[])
        if len(inputs) != len(self.inputs) and "layouts" in copy.extra:
            names = self.layouts
            if kept is None or len(kept) != len(inputs):
                return copy.with_layouts(())
            from .run.layouts import DEFAULT

            copy = copy.with_layouts([names[i] if i < len(names) else DEFAULT for i in kept])
        return copy

    def on(self, backends: tuple[str, ...]) -> Case:
        return self._carrying_sequence(replace(self, backends=tuple(backends)))

    # ---- identity

    def to_dict(self) -> dict[str, Any]:
        encoded = []
        for i, array in enumerate(self.inputs):
            recipe = self.recipes[i] if i < len(self.recipes) else None
            if recipe is not None and array.size > INLINE_LIMIT:
                encoded.append(
                    {"dtype": array.dtype.name, "shape": list(array.shape), "generator": recipe}
                )
            else:
                encoded.append(encode_array(array))
        data: dict[str, Any] = {
            "inputs": encoded,
            "backends": list(self.backends),
            "checks": list(self.checks),
            "origin": self.origin,
            "extra": self.extra,
        }
        if self.workarounds_off:  # absent when empty: older cases keep their digests
            data["workarounds_off"] = sorted(self.workarounds_off)
        if isinstance(self.subject, InvalidProgram):
            data["invalid"] = self.subject.to_dict()
        else:
            data["program"] = self.subject.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Case:
        recipes = [a.get("generator") for a in data["inputs"]]
        subject: Subject
        if "invalid" in data:
            subject = InvalidProgram.from_dict(data["invalid"])
        else:
            subject = Program.from_dict(data["program"])
        checks = data.get("checks")
        if checks is None:  # format 1 wrote one "check" name; "differential" meant none extra
            checks = [c for c in [data.get("check", "")] if c and c != "differential"]
        return cls(
            subject=subject,
            inputs=[decode_array(a) for a in data["inputs"]],
            backends=tuple(data.get("backends", CPU_BACKENDS)),
            checks=tuple(checks),
            origin=data.get("origin", ""),
            recipes=recipes if any(recipes) else [],
            extra=dict(data.get("extra", {})),
            workarounds_off=tuple(data.get("workarounds_off", ())),
        )

    def digest(self) -> str:
        """Content hash of what decides the verdict: subject, input bytes, backends, checks."""
        data = self.to_dict()
        data["inputs"] = [encode_array(a) for a in self.inputs]
        data.pop("origin")
        return hashlib.sha256(canonical(data).encode("ascii")).hexdigest()

    def content_digest(self) -> str:
        """The digest of the case without its backends: what every draw of an oracle (does it
        run, which backend it recompiles, which input it changes) is made from. The minimizer
        judges a case on its failing backends and stores it on all of them; a draw that saw the
        backends was another draw in the replay, which judged it fixed with the bug still in."""
        return self.on(()).digest()

    def draw(self, name: str) -> int:
        """A deterministic 64-bit number named ``name``, drawn from the case's content: the
        same case, the same number, in every run, replay and shrink step, on any backends."""
        return _number(name, self.content_digest())

    def toggle(self, name: str, probability: float) -> bool:
        """A deterministic coin drawn from the case's content (``draw``)."""
        return self.draw(name) / 2**64 < probability

    def pick(self, name: str, options: Sequence[str]) -> str:
        """One of ``options`` (backend names), drawn from the case's content so that the one
        picked among many is picked again among any of them that holds it (rendezvous hashing):
        a case minimized on its failing backend picks it there and once stored on all of them."""
        if not options:
            raise ValueError(f"nothing to pick {name!r} from")
        content = self.content_digest()
        return min(options, key=lambda option: _number(f"{name}:{option}", content))

    @property
    def size(self) -> int:
        """Smaller is simpler: program nodes first, then total input elements (then, for a jit
        sequence, its calls, features and elements)."""
        size = len(self.subject) * 1_000_000 + sum(int(a.size) for a in self.inputs)
        sequence = self.sequence
        if sequence is not None:
            size += sequence.size
        try:
            model = self.gpt2
        except (ValueError, TypeError):  # a malformed stored model: no oracle runs it
            model = None
        if model is not None:
            spec = model[0]
            flags = (spec.prefix, spec.lm_head, spec.buffers, spec.file, spec.order, spec.invalid)
            flags += (spec.ties,)
            size += 10_000 * spec.layers + 1_000 * spec.width + 100 * (spec.heads + spec.steps)
            size += 10 * (spec.vocab + spec.context + spec.length)
            size += sum(map(bool, flags)) + (spec.stored != "float32")
        return size


@dataclass(frozen=True)
class Earlier:
    """One evaluation a worker process ran before a case: the case, the oracles it was judged
    with (``only``: None for every one that wanted it) and whether its main task compiled past
    the worker's memos (``fresh``). A failure that needs what earlier compiles left in the
    process (a memo's key too coarse, a symbol two kernels share) recurs only after them."""

    case: Case
    only: tuple[str, ...] | None = None
    fresh: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"case": self.case.to_dict()}
        if self.only is not None:
            data["only"] = list(self.only)
        if self.fresh:
            data["fresh"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Earlier:
        only = data.get("only")
        return cls(
            Case.from_dict(data["case"]),
            None if only is None else tuple(only),
            bool(data.get("fresh", False)),
        )


__all__ = [
    "CPU_BACKENDS",
    "GATEWAY_SAMPLED",
    "GPU_SAMPLED",
    "GPU_SHARE",
    "SAMPLED_BACKENDS",
    "TRIAGE_SAMPLED",
    "TRIAGE_SHARE",
    "SAMPLED_SHARE",
    "INLINE_LIMIT",
    "Case",
    "Earlier",
    "decode_array",
    "encode_array",
    "generated_array",
    "parse_gpt2",
]
