"""GPT-2 on ``compiler.ops``: config, seeded init, compiled and plain-NumPy forward passes,
greedy generation and a safetensors loader for HuggingFace GPT-2 checkpoints.

The forward pass is written once (``_forward``) over four sublayer functions. The compiled path
hands it ``@jit`` functions, one per sublayer kind, so a specialization traced for block 0 is
reused by every later block of the same shapes and dtypes; the NumPy path hands it the very same
``ops`` source evaluated eagerly, which is what the compiled logits are checked against.

Dtypes follow NumPy (NEP 50): ``ops.attention`` divides by a strong NumPy float64 scalar, so with
float32 parameters the residual stream is float64 from the first attention on and the logits are
float64. Block 0's attention therefore has its own (float32-input) specialization and blocks
1.. share a float64 one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import ops
from .api import jit

DEFAULT_HEADS = 12


# --------------------------------------------------------------------------------------------
# Configuration and parameters


@dataclass(frozen=True)
class GPT2Config:
    """Shape of a GPT-2 model; frozen so it can be a static (hashable) jit argument."""

    layers: int
    heads: int
    width: int
    context: int
    vocab: int

    def __post_init__(self) -> None:
        for name in ("layers", "heads", "width", "context", "vocab"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"GPT2Config.{name} must be a positive integer, got {value!r}")
        if self.width % self.heads:
            raise ValueError(
                f"GPT2Config: width {self.width} is not divisible by heads={self.heads}"
            )


def gpt2_small() -> GPT2Config:
    """The 124M-parameter GPT-2 ("gpt2" on HuggingFace)."""
    return GPT2Config(layers=12, heads=12, width=768, context=1024, vocab=50257)


@dataclass
class LayerNormParams:
    """Layer-norm gain ``g`` and bias ``b``, both (C,)."""

    g: np.ndarray
    b: np.ndarray


@dataclass
class LinearParams:
    """A GPT-2 Conv1D: weight ``w`` laid out (in, out), bias ``b`` (out,)."""

    w: np.ndarray
    b: np.ndarray


@dataclass
class AttentionParams:
    """``c_attn`` packs q, k, v: (C, 3C); ``c_proj`` is (C, C)."""

    c_attn: LinearParams
    c_proj: LinearParams


@dataclass
class MLPParams:
    """``c_fc`` is (C, 4C), ``c_proj`` is (4C, C)."""

    c_fc: LinearParams
    c_proj: LinearParams


@dataclass
class BlockParams:
    """One transformer block, named as in HuggingFace's ``GPT2Block``."""

    ln_1: LayerNormParams
    attn: AttentionParams
    ln_2: LayerNormParams
    mlp: MLPParams


@dataclass
class GPT2Params:
    """All weights; the output head is tied to ``wte`` (logits are ``h @ wte.T``)."""

    wte: np.ndarray
    wpe: np.ndarray
    h: list[BlockParams]
    ln_f: LayerNormParams


def init_params(
    config: GPT2Config, seed: int = 0, *, std: float = 0.02, jitter: float = 0.0
) -> GPT2Params:
    """Seeded float32 weights with GPT-2's initialization.

    Weights are N(0, std), residual projections scaled by 1/sqrt(2 * layers) as in GPT-2.
    ``jitter`` > 0 adds N(0, jitter) noise to the biases (otherwise zero) and layer-norm gains
    (otherwise one): tests use it so that no two tensors are interchangeable and a mix-up in
    the loader or the forward pass cannot go unnoticed.
    """
    rng = np.random.default_rng(seed)
    c = config.width

    def normal(shape: tuple[int, ...], scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def bias(size: int) -> np.ndarray:
        return normal((size,), jitter) if jitter else np.zeros(size, np.float32)

    def norm() -> LayerNormParams:
        gain = np.ones(c, np.float32) + (normal((c,), jitter) if jitter else 0)
        return LayerNormParams(gain.astype(np.float32), bias(c))

    residual = std / np.sqrt(2 * config.layers)
    blocks = [
        BlockParams(
            ln_1=norm(),
            attn=AttentionParams(
                c_attn=LinearParams(normal((c, 3 * c), std), bias(3 * c)),
                c_proj=LinearParams(normal((c, c), residual), bias(c)),
            ),
            ln_2=norm(),
            mlp=MLPParams(
                c_fc=LinearParams(normal((c, 4 * c), std), bias(4 * c)),
                c_proj=LinearParams(normal((4 * c, c), residual), bias(c)),
            ),
        )
        for _ in range(config.layers)
    ]
    return GPT2Params(
        wte=normal((config.vocab, c), std),
        wpe=normal((config.context, c), std / 2),
        h=blocks,
        ln_f=norm(),
    )


# --------------------------------------------------------------------------------------------
# Sublayers (namespace-generic, like ops) and their compiled forms


def embed(wte: Any, wpe: Any, ids: Any, positions: Any) -> Any:
    """Token plus position embedding: (T,) int32 ids and positions -> (T, C)."""
    return ops.gather(wte, ids) + ops.gather(wpe, positions)


def final_logits(x: Any, gain: Any, bias: Any, wte: Any) -> Any:
    """Final layer norm, then logits through the tied embedding: (T, C) -> (T, vocab)."""
    return ops.layer_norm(x, gain, bias) @ wte.T


# One JitFunction per sublayer kind: their `.traces` counters show specialization reuse.
embed_jit = jit(embed)
attend_jit = jit(ops.attend)
feedforward_jit = jit(ops.feedforward)
final_logits_jit = jit(final_logits)


def jitted() -> dict[str, Any]:
    """The compiled sublayers by name (for inspecting ``.traces`` or clearing them)."""
    return {
        "embed": embed_jit,
        "attend": attend_jit,
        "feedforward": feedforward_jit,
        "final_logits": final_logits_jit,
    }


# --------------------------------------------------------------------------------------------
# Forward passes


def token_array(ids: Any, config: GPT2Config) -> np.ndarray:
    """``ids`` as a non-empty 1-D int32 array, of any length (generation crops it later).

    Wider integer input is range-checked before the cast, so it cannot wrap into range; int32
    input is left to ``ops.gather``, which raises ValueError for an id outside [0, vocab)
    eagerly and in compiled code alike.
    """
    array = np.asarray(ids)
    if array.dtype.kind not in "iu":
        raise TypeError(f"token ids must be integers, got dtype {array.dtype}")
    if array.ndim != 1 or array.shape[0] == 0:
        raise ValueError(f"token ids must be one non-empty sequence (1-D), got shape {array.shape}")
    if array.dtype != np.int32:
        if array.min() < 0 or array.max() >= config.vocab:
            raise ValueError(
                f"token ids must lie in [0, {config.vocab}), got {array.min()}..{array.max()}"
            )
        array = array.astype(np.int32)
    return np.ascontiguousarray(array)


def check_ids(ids: Any, config: GPT2Config) -> np.ndarray:
    """``token_array(ids)``, which must also fit the context: one forward pass sees at most
    ``config.context`` positions (``wpe`` has no rows beyond it)."""
    array = token_array(ids, config)
    if array.shape[0] > config.context:
        raise ValueError(
            f"sequence length {array.shape[0]} exceeds the context length {config.context}"
        )
    return array


def _forward(
    params: GPT2Params,
    config: GPT2Config,
    ids: Any,
    embed_fn: Callable[..., Any],
    attend_fn: Callable[..., Any],
    feedforward_fn: Callable[..., Any],
    logits_fn: Callable[..., Any],
) -> np.ndarray:
    tokens = check_ids(ids, config)
    positions = np.arange(tokens.shape[0], dtype=np.int32)
    x = embed_fn(params.wte, params.wpe, tokens, positions)
    for block in params.h:
        x = attend_fn(
            x,
            block.ln_1.g,
            block.ln_1.b,
            block.attn.c_attn.w,
            block.attn.c_attn.b,
            block.attn.c_proj.w,
            block.attn.c_proj.b,
            heads=config.heads,
        )
        x = feedforward_fn(
            x,
            block.ln_2.g,
            block.ln_2.b,
            block.mlp.c_fc.w,
            block.mlp.c_fc.b,
            block.mlp.c_proj.w,
            block.mlp.c_proj.b,
        )
    return logits_fn(x, params.ln_f.g, params.ln_f.b, params.wte)


def forward(
    params: GPT2Params, config: GPT2Config, ids: Any, *, target: str | None = None
) -> np.ndarray:
    """(T, vocab) logits, each sublayer compiled by ``compiler.jit`` for ``target`` (None: the
    compiler's default, ``"cpu"`` = ``"cpu-vector"``); dtype as NumPy promotes it (float64 here)."""
    return _forward(
        params,
        config,
        ids,
        lambda *a, **k: embed_jit(*a, target=target, **k),
        lambda *a, **k: attend_jit(*a, target=target, **k),
        lambda *a, **k: feedforward_jit(*a, target=target, **k),
        lambda *a, **k: final_logits_jit(*a, target=target, **k),
    )


def forward_numpy(params: GPT2Params, config: GPT2Config, ids: Any) -> np.ndarray:
    """(T, vocab) logits from the same ``ops`` source evaluated eagerly by NumPy: the reference."""
    return _forward(params, config, ids, embed, ops.attend, ops.feedforward, final_logits)


# --------------------------------------------------------------------------------------------
# Greedy generation


def _greedy(
    logits_of: Callable[[np.ndarray], np.ndarray], config: GPT2Config, ids: Any, steps: int
) -> list[int]:
    prompt = token_array(ids, config)
    if prompt.min() < 0 or prompt.max() >= config.vocab:  # also ids the window will crop away
        raise ValueError(
            f"token ids must lie in [0, {config.vocab}), got {prompt.min()}..{prompt.max()}"
        )
    tokens = [int(t) for t in prompt]
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    for _ in range(steps):
        # Beyond the context only the most recent `context` tokens are visible (as in GPT-2).
        window = np.asarray(tokens[-config.context :], dtype=np.int32)
        logits = logits_of(window)
        tokens.append(int(np.argmax(logits[-1])))  # first maximum on ties, like NumPy
    return tokens


def generate(
    params: GPT2Params, config: GPT2Config, ids: Any, steps: int, *, target: str | None = None
) -> list[int]:
    """``ids`` extended by ``steps`` greedy tokens, recomputing the full window each step.

    The window is the last ``config.context`` tokens, so prompts and outputs may be longer than
    the context, as in GPT-2's own sampling loop.

    Each distinct window length is its own specialization, so a long generation compiles once
    per length until the window reaches the context length.
    """
    return _greedy(lambda w: forward(params, config, w, target=target), config, ids, steps)


def generate_numpy(params: GPT2Params, config: GPT2Config, ids: Any, steps: int) -> list[int]:
    """``generate`` on the plain-NumPy forward pass: the reference for the compiled one."""
    return _greedy(lambda w: forward_numpy(params, config, w), config, ids, steps)


# --------------------------------------------------------------------------------------------
# HuggingFace GPT-2 checkpoints (safetensors)

_BLOCK_KEY = re.compile(r"h\.(\d+)\.(.+)")
# Buffers some GPT-2 checkpoints carry (the causal-mask constants): not parameters.
_IGNORED_BLOCK_TENSORS = ("attn.bias", "attn.masked_bias")
PREFIX = "transformer."


def to_state_dict(params: GPT2Params, prefix: str = "") -> dict[str, np.ndarray]:
    """HuggingFace GPT-2 tensor names -> arrays (Conv1D weights stay (in, out))."""
    tensors = {"wte.weight": params.wte, "wpe.weight": params.wpe}
    for i, block in enumerate(params.h):
        parts = {
            "ln_1": block.ln_1,
            "attn.c_attn": block.attn.c_attn,
            "attn.c_proj": block.attn.c_proj,
            "ln_2": block.ln_2,
            "mlp.c_fc": block.mlp.c_fc,
            "mlp.c_proj": block.mlp.c_proj,
        }
        for name, part in parts.items():
            weight, bias = _weight_bias(part)
            tensors[f"h.{i}.{name}.weight"] = weight
            tensors[f"h.{i}.{name}.bias"] = bias
    tensors["ln_f.weight"] = params.ln_f.g
    tensors["ln_f.bias"] = params.ln_f.b
    return {prefix + name: array for name, array in tensors.items()}


def _weight_bias(part: LayerNormParams | LinearParams) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(part, LayerNormParams):
        return part.g, part.b
    return part.w, part.b


def from_state_dict(
    tensors: Mapping[str, np.ndarray], heads: int = DEFAULT_HEADS
) -> tuple[GPT2Config, GPT2Params]:
    """Config and float32 params from HuggingFace GPT-2 names, with or without ``transformer.``.

    Layers, width, context and vocab are read off the tensor shapes. The head count is not
    recorded in any shape (it only splits C into heads x C/heads), so it must be given; the
    default 12 is right for gpt2 (small) only - gpt2-medium/large/xl use 16/20/25.
    A ``lm_head.weight`` must equal ``wte`` (GPT-2 ties them); mask buffers are ignored; any
    other unknown or missing tensor is a ValueError.
    """
    names: dict[str, np.ndarray] = {}
    for key, value in tensors.items():
        name = key[len(PREFIX) :] if key.startswith(PREFIX) else key
        if name in names:
            raise ValueError(f"tensor {name!r} appears both with and without the {PREFIX!r} prefix")
        names[name] = value

    def take(name: str) -> np.ndarray:
        if name not in names:
            raise ValueError(f"checkpoint is missing tensor {name!r}")
        array = np.asarray(names.pop(name))
        if array.dtype.kind != "f":
            raise ValueError(f"tensor {name!r} must be floating point, got {array.dtype}")
        return np.ascontiguousarray(array, dtype=np.float32)

    wte, wpe = take("wte.weight"), take("wpe.weight")
    if wte.ndim != 2 or wpe.ndim != 2 or wte.shape[1] != wpe.shape[1]:
        raise ValueError(f"wte {wte.shape} and wpe {wpe.shape} must be (vocab, C) and (context, C)")
    indices = {int(m.group(1)) for m in map(_BLOCK_KEY.fullmatch, names) if m}
    layers = len(indices)
    if indices != set(range(layers)):
        raise ValueError(f"block indices must be 0..n-1, got {sorted(indices)}")
    config = GPT2Config(
        layers=layers, heads=heads, width=wte.shape[1], context=wpe.shape[0], vocab=wte.shape[0]
    )
    c = config.width
    expected = {
        "ln_1.weight": (c,),
        "ln_1.bias": (c,),
        "attn.c_attn.weight": (c, 3 * c),
        "attn.c_attn.bias": (3 * c,),
        "attn.c_proj.weight": (c, c),
        "attn.c_proj.bias": (c,),
        "ln_2.weight": (c,),
        "ln_2.bias": (c,),
        "mlp.c_fc.weight": (c, 4 * c),
        "mlp.c_fc.bias": (4 * c,),
        "mlp.c_proj.weight": (4 * c, c),
        "mlp.c_proj.bias": (c,),
        "ln_f.weight": (c,),
        "ln_f.bias": (c,),
    }

    def shaped(name: str, kind: str) -> np.ndarray:
        array = take(name)
        if array.shape != expected[kind]:
            raise ValueError(f"tensor {name!r} has shape {array.shape}, expected {expected[kind]}")
        return array

    def linear(prefix: str, kind: str) -> LinearParams:
        return LinearParams(
            shaped(f"{prefix}.weight", f"{kind}.weight"), shaped(f"{prefix}.bias", f"{kind}.bias")
        )

    def norm(prefix: str, kind: str) -> LayerNormParams:
        return LayerNormParams(
            shaped(f"{prefix}.weight", f"{kind}.weight"), shaped(f"{prefix}.bias", f"{kind}.bias")
        )

    blocks = []
    for i in range(layers):
        p = f"h.{i}"
        blocks.append(
            BlockParams(
                ln_1=norm(f"{p}.ln_1", "ln_1"),
                attn=AttentionParams(
                    c_attn=linear(f"{p}.attn.c_attn", "attn.c_attn"),
                    c_proj=linear(f"{p}.attn.c_proj", "attn.c_proj"),
                ),
                ln_2=norm(f"{p}.ln_2", "ln_2"),
                mlp=MLPParams(
                    c_fc=linear(f"{p}.mlp.c_fc", "mlp.c_fc"),
                    c_proj=linear(f"{p}.mlp.c_proj", "mlp.c_proj"),
                ),
            )
        )
        for buffer in _IGNORED_BLOCK_TENSORS:
            names.pop(f"{p}.{buffer}", None)
    params = GPT2Params(wte=wte, wpe=wpe, h=blocks, ln_f=norm("ln_f", "ln_f"))
    head = names.pop("lm_head.weight", None)
    if head is not None and not np.array_equal(np.asarray(head, np.float32), wte):
        raise ValueError("lm_head.weight differs from wte.weight: only tied heads are supported")
    if names:
        raise ValueError(f"checkpoint has unexpected tensors: {sorted(names)[:8]}")
    return config, params


def load_safetensors(
    path: str | os.PathLike[str], heads: int = DEFAULT_HEADS
) -> tuple[GPT2Config, GPT2Params]:
    """Read a local HuggingFace GPT-2 ``model.safetensors`` (no network); see ``from_state_dict``
    for how the config is inferred and why ``heads`` must be given for non-small models."""
    from safetensors.numpy import load_file

    return from_state_dict(load_file(os.fspath(path)), heads=heads)


def save_safetensors(params: GPT2Params, path: str | os.PathLike[str], *, prefix: str = "") -> None:
    """Write ``params`` under HuggingFace GPT-2 names (``prefix="transformer."`` for the
    GPT2LMHeadModel layout), so a test can round-trip a checkpoint through the loader."""
    from safetensors.numpy import save_file

    tensors = {k: np.ascontiguousarray(v) for k, v in to_state_dict(params, prefix).items()}
    save_file(tensors, os.fspath(path))


__all__ = [
    "GPT2Config",
    "gpt2_small",
    "GPT2Params",
    "BlockParams",
    "AttentionParams",
    "MLPParams",
    "LinearParams",
    "LayerNormParams",
    "init_params",
    "embed",
    "final_logits",
    "embed_jit",
    "attend_jit",
    "feedforward_jit",
    "final_logits_jit",
    "jitted",
    "token_array",
    "check_ids",
    "forward",
    "forward_numpy",
    "generate",
    "generate_numpy",
    "to_state_dict",
    "from_state_dict",
    "load_safetensors",
    "save_safetensors",
    "DEFAULT_HEADS",
]
