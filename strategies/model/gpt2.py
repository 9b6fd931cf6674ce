"""A GPT-2 model as test data: its shape, its weights as program inputs, and its forward pass as
one program of the model's primitives, written from GPT-2's definition (HuggingFace's
``GPT2LMHeadModel``), not from the compiler's ``compiler/model.py``.

The program is the independent reference for that module: a checkpoint written by the harness
under HuggingFace's tensor names (``harness/run/gpt2.py``), loaded and run by the compiler's
model code, must give what the program gives on the same weights (NumPy, the extended-precision
truth and JAX evaluate it, through the fuzzer's error model). Its inputs are, in order: the token
ids (``length``,), their positions ``0 .. length - 1``, ``wte`` (vocab, C), ``wpe`` (context, C),
the twelve tensors of each block in ``BLOCK_TENSORS`` order, and ``ln_f``'s gain and bias.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from .program import Program, ProgramBuilder
from .types import Ref

#: A block's tensors, in input order, by their HuggingFace names (below ``h.<i>.``), with their
#: shapes in terms of the width C.
BLOCK_TENSORS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("ln_1.weight", (1,)),
    ("ln_1.bias", (1,)),
    ("attn.c_attn.weight", (1, 3)),
    ("attn.c_attn.bias", (3,)),
    ("attn.c_proj.weight", (1, 1)),
    ("attn.c_proj.bias", (1,)),
    ("ln_2.weight", (1,)),
    ("ln_2.bias", (1,)),
    ("mlp.c_fc.weight", (1, 4)),
    ("mlp.c_fc.bias", (4,)),
    ("mlp.c_proj.weight", (4, 1)),
    ("mlp.c_proj.bias", (1,)),
)
#: The inputs ahead of the blocks: ids, positions, wte, wpe.
LEADING = 4
#: How the harness's checkpoint stores the weights (the loader casts each to float32; the
#: weights are made exact in the stored dtype, so the cast loses nothing).
STORED = ("float32", "float64", "float16")
#: Calls the model must refuse (``ModelSpec.invalid``), and the error class NumPy-style input
#: checking owes each: ids past the context, an id equal to the vocabulary size (int64, checked
#: before the cast; int32, checked by the gather), an int64 id that is a valid one plus 2**32
#: (narrowed to int32 before its check, it is that valid id), a negative id, float ids, empty
#: ids, 2-D ids, and a negative generation length.
INVALID = {
    "context": "ValueError",
    "vocab": "ValueError",
    "vocab-int32": "ValueError",
    "wide": "ValueError",
    "negative": "ValueError",
    "float": "TypeError",
    "empty": "ValueError",
    "rank": "ValueError",
    "steps": "ValueError",
}

#: The flaws of a checkpoint the loader must refuse, each with a ValueError: every model case
#: also offers the loader its checkpoint with each of them (``harness.run.gpt2.damaged``).
#: GPT-2 ties its head to ``wte``, so a head one ulp away is a model the compiler cannot run as
#: written; a tensor missing, one it does not know, one of another shape or not floating point,
#: blocks numbered with a gap, one tensor under both of its names. A loader that kept only the
#: head's shape check loaded an untied head silently (a held-out plant that no session could
#: see: every checkpoint the harness wrote was well formed).
DAMAGES = {
    "untied-head": "an lm_head.weight one ulp from wte.weight",
    "missing": "a block tensor missing",
    "unexpected": "a tensor it does not know (h.0.mlp.c_gate.weight)",
    "misshapen": "a tensor one element too long",
    "integer": "a tensor of int32",
    "gap": "its last block numbered one past its place",
    "both-names": "one tensor both with and without the transformer. prefix",
}

#: ``ModelSpec.invalid`` for every call of ``INVALID``.
ALL_INVALID = "all"


#: The largest model a stored case may ask for (a corpus file is not trusted: a million blocks
#: or steps would exhaust memory or time before any oracle ran); the generator stays far below.
LIMITS = {
    "layers": 48, "heads": 64, "width": 1024, "context": 1024, "vocab": 4096, "length": 1024,
    "steps": 64, "weights": 1 << 24,
}  # fmt: skip


@dataclass(frozen=True)
class ModelSpec:
    """One GPT-2 model, one call of it and how its checkpoint is written.

    ``length`` tokens go through the forward pass; ``steps`` > 0 also extends them greedily
    (``compiler.model.generate``), past the context where ``length + steps`` exceeds it.
    ``prefix``: names under ``transformer.``; ``lm_head``: a tied ``lm_head.weight`` too;
    ``buffers``: the attention-mask buffers some checkpoints carry; ``stored``: the dtype on
    disk; ``file``: through a safetensors file, not a dict; ``order``: a seed for the order of
    the names (0: as HuggingFace writes them); ``invalid``: the calls the model must refuse,
    one of ``INVALID``, ``ALL_INVALID`` (every one: a refusal costs no compile) or "" (none);
    ``ties``: token embeddings in equal pairs (rows 2k and 2k+1 of ``wte``), so that logits tie
    and greedy generation must take the first maximum."""

    layers: int
    heads: int
    width: int
    context: int
    vocab: int
    length: int
    steps: int = 0
    prefix: bool = False
    lm_head: bool = False
    buffers: bool = False
    stored: str = "float32"
    file: bool = False
    order: int = 0
    invalid: str = ""
    ties: bool = False

    def __post_init__(self) -> None:
        for name in ("layers", "heads", "width", "context", "vocab", "length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ModelSpec.{name} must be a positive integer, got {value!r}")
            if value > LIMITS[name]:
                raise ValueError(f"ModelSpec.{name} {value} exceeds {LIMITS[name]}")
        for name in ("prefix", "lm_head", "buffers", "file", "ties"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ModelSpec.{name} must be a bool, got {getattr(self, name)!r}")
        if isinstance(self.order, bool) or not isinstance(self.order, int) or self.order < 0:
            raise ValueError(f"ModelSpec.order must be a non-negative integer, {self.order!r}")
        if self.width % self.heads:
            raise ValueError(f"ModelSpec: width {self.width} is not divisible by {self.heads}")
        if self.length > self.context:
            raise ValueError(f"ModelSpec: length {self.length} exceeds context {self.context}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"ModelSpec.steps must be a non-negative integer, {self.steps!r}")
        if self.steps > LIMITS["steps"]:
            raise ValueError(f"ModelSpec.steps {self.steps} exceeds {LIMITS['steps']}")
        if self.stored not in STORED:
            raise ValueError(f"ModelSpec.stored must be one of {STORED}, got {self.stored!r}")
        known = (*INVALID, ALL_INVALID, "")
        if not isinstance(self.invalid, str) or self.invalid not in known:
            raise ValueError(f"ModelSpec.invalid must be one of {sorted(known)}")
        weights = 12 * self.layers * self.width**2 + (self.vocab + self.context) * self.width
        if weights > LIMITS["weights"]:
            raise ValueError(f"ModelSpec: {weights} weights exceed {LIMITS['weights']}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSpec:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown ModelSpec fields {sorted(unknown)}")
        return cls(**data)

    def shapes(self) -> list[tuple[int, ...]]:
        """The program's input shapes, in order (module docstring)."""
        c = self.width
        block = [tuple(c * k for k in shape) for _, shape in BLOCK_TENSORS]
        return [
            (self.length,),
            (self.length,),
            (self.vocab, c),
            (self.context, c),
            *(block * self.layers),
            (c,),
            (c,),
        ]

    def names(self) -> list[str]:
        """HuggingFace's name of each weight input (the ids and positions have none: "")."""
        blocks = [f"h.{i}.{name}" for i in range(self.layers) for name, _ in BLOCK_TENSORS]
        return ["", "", "wte.weight", "wpe.weight", *blocks, "ln_f.weight", "ln_f.bias"]

    def with_length(self, length: int) -> ModelSpec:
        return replace(self, length=length)


def program(spec: ModelSpec) -> Program:
    """GPT-2's forward pass over ``spec.length`` tokens as one program: token plus position
    embedding, each block's pre-norm attention and MLP with their residuals (the ``attend`` and
    ``feedforward`` primitives), the final layer norm, and logits through the tied embedding.
    NumPy's promotions hold as in any program: the attention's float64 scale makes the residual
    stream float64 from block 0's attention on."""
    embedded = embedding(spec)  # its inputs are the program's first (``LEADING``)
    b = ProgramBuilder.from_program(embedded)
    c, x, wte = spec.width, embedded.output, Ref("input", 2)
    for _ in range(spec.layers):
        w = [b.input(tuple(c * k for k in shape), "float32") for _, shape in BLOCK_TENSORS]
        x = b.node("attend", x, *w[:6], heads=spec.heads)
        x = b.node("feedforward", x, *w[6:])
    gain, bias = b.input((c,), "float32"), b.input((c,), "float32")
    normed = b.node("layer_norm", x, gain, bias)
    return b.build(b.node("matmul", normed, b.node("transpose", wte)))


def embedding(spec: ModelSpec) -> Program:
    """The model's first sublayer, token plus position embedding, on its first ``LEADING``
    inputs: the subject a GPT-2 case is also an ordinary case of (the whole forward pass as one
    program compiles for seconds; the model's own code compiles it sublayer by sublayer)."""
    b = ProgramBuilder()
    ids = b.input((spec.length,), "int32", bound=spec.vocab)
    positions = b.input((spec.length,), "int32", bound=spec.context)
    wte = b.input((spec.vocab, spec.width), "float32")
    wpe = b.input((spec.context, spec.width), "float32")
    return b.build(b.node("add", b.node("gather", wte, ids), b.node("gather", wpe, positions)))


#: The model's sublayers, as ``compiler.model`` compiles them one by one, by name: their
#: arguments in call order (the attention's heads are a keyword).
SUBLAYERS = {
    "embed": ("wte", "wpe", "ids", "positions"),
    "attend": ("x", "ln_1.weight", "ln_1.bias", "c_attn.weight", "c_attn.bias", "c_proj.weight",
               "c_proj.bias"),
    "feedforward": ("x", "ln_2.weight", "ln_2.bias", "c_fc.weight", "c_fc.bias",
                    "c_proj.weight", "c_proj.bias"),
    "final_logits": ("x", "ln_f.weight", "ln_f.bias", "wte"),
}  # fmt: skip


def sublayer(name: str, arrays: list[np.ndarray], heads: int = 1) -> Program:
    """One sublayer call as its own program, on its arguments in call order (``SUBLAYERS``):
    what a wrong compiled forward pass is narrowed to, the sublayer whose call was wrong."""
    if name not in SUBLAYERS or len(arrays) != len(SUBLAYERS[name]):
        raise ValueError(f"no sublayer {name!r} of {len(arrays)} arguments")
    b = ProgramBuilder()
    if name == "embed":
        wte, wpe, ids, positions = arrays
        refs = [b.input(wte.shape, wte.dtype.name), b.input(wpe.shape, wpe.dtype.name)]
        refs.append(b.input(ids.shape, "int32", bound=wte.shape[0]))
        refs.append(b.input(positions.shape, "int32", bound=wpe.shape[0]))
        gathered = b.node("gather", refs[0], refs[2]), b.node("gather", refs[1], refs[3])
        return b.build(b.node("add", *gathered))
    refs = [b.input(a.shape, a.dtype.name) for a in arrays]
    if name == "attend":
        return b.build(b.node("attend", *refs, heads=heads))
    if name == "feedforward":
        return b.build(b.node("feedforward", *refs))
    x, gain, bias, wte = refs
    return b.build(b.node("matmul", b.node("layer_norm", x, gain, bias), b.node("transpose", wte)))


def inputs(spec: ModelSpec, seed: int) -> list[np.ndarray]:
    """Seeded inputs for ``program(spec)``: ids in [0, vocab), positions 0..length-1, and
    weights on GPT-2's scales but with no two tensors alike (layer-norm gains around one,
    biases nonzero), so that a tensor loaded in another's place, or a block in another's, changes
    the logits; each weight is exact in ``spec.stored``. Each tensor has a random stream of its
    own (by its name), so a smaller model of the same seed (fewer blocks, tokens or heads) keeps
    the weights it still has."""
    c = spec.width

    def stream(name: str) -> np.random.Generator:
        return np.random.default_rng([seed, *name.encode("ascii")])

    ids = stream("ids").integers(0, spec.vocab, spec.length, dtype=np.int64).astype(np.int32)
    out = [ids, np.arange(spec.length, dtype=np.int32)]
    for name, shape in zip(spec.names()[2:], spec.shapes()[2:], strict=True):
        values = stream(name).standard_normal(shape)
        if name in ("wte.weight", "wpe.weight"):
            values = values * (1.0 if name == "wte.weight" else 0.5)
        elif ".ln_" in f".{name}" and name.endswith(".weight"):
            values = 1.0 + 0.2 * values
        elif name.endswith("mlp.c_proj.weight"):
            values = values / np.sqrt(4 * c)
        elif name.endswith(".bias"):
            values = values * 0.2
        else:
            values = values / np.sqrt(c)
        array = values.astype(spec.stored).astype(np.float32)
        if name == "wte.weight" and spec.ties:
            array[1::2] = array[: spec.vocab // 2 * 2 : 2]
        out.append(np.ascontiguousarray(array))
    return out


def exact_in(spec: ModelSpec, weights: list[np.ndarray]) -> bool:
    """Are ``weights`` (the float inputs) exact in ``spec.stored``, so that a checkpoint in that
    dtype holds them (a minimizer's rounded values may not be)?"""
    with np.errstate(over="ignore"):
        return all(
            np.array_equal(w.astype(spec.stored).astype(np.float32), w, equal_nan=True)
            for w in weights
        )


__all__ = [
    "ALL_INVALID",
    "BLOCK_TENSORS",
    "DAMAGES",
    "INVALID",
    "LEADING",
    "LIMITS",
    "STORED",
    "SUBLAYERS",
    "ModelSpec",
    "embedding",
    "exact_in",
    "inputs",
    "program",
    "sublayer",
]
