"""GPT-2 model runs: the harness's own checkpoint writer, and the compiler's model code
(``compiler/model.py``: loader, forward passes, greedy generation, input checks) run on it.

The checkpoint is written here from HuggingFace's naming, never with ``compiler.model``'s own
``to_state_dict``: a loader and a writer that share a mistake would agree with each other. What
a run returns is judged by the gpt2-model oracle (``harness/oracles/gpt2.py``) and by the
standalone reproducers (``harness.verdict.gpt2_model``) with the same ``problems``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strategies.model.gpt2 import (
    ALL_INVALID,
    BLOCK_TENSORS,
    DAMAGES,
    INVALID,
    LEADING,
    ModelSpec,
    exact_in,
)

#: HuggingFace's prefix of the model's tensors in a ``GPT2LMHeadModel`` checkpoint (the tied
#: ``lm_head.weight`` sits outside it).
PREFIX = "transformer."


def checkpoint(spec: ModelSpec, inputs: list[np.ndarray], flaw: str = "") -> dict[str, np.ndarray]:
    """The weights among ``inputs`` under HuggingFace GPT-2 names, as ``spec`` says to write
    them (prefix, tied head, mask buffers, stored dtype, name order), with ``flaw`` (of
    ``DAMAGES``; "" none)."""
    named = _named(spec, inputs)
    return _ordered(spec, damaged(spec, named, flaw) if flaw else named)


def _named(spec: ModelSpec, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """``checkpoint``'s tensors by name, before any flaw and in HuggingFace's order."""
    tensors: dict[str, np.ndarray] = {}
    for name, array in zip(spec.names(), inputs, strict=True):
        if name:
            tensors[name] = np.ascontiguousarray(array.astype(spec.stored))
    if spec.buffers:
        n = spec.context
        for i in range(spec.layers):
            tril = np.tril(np.ones((n, n), np.float32)).reshape(1, 1, n, n)
            tensors[f"h.{i}.attn.bias"] = tril
            tensors[f"h.{i}.attn.masked_bias"] = np.array(-1e4, np.float32)
    named = {(PREFIX if spec.prefix else "") + k: v for k, v in tensors.items()}
    if spec.lm_head:
        named["lm_head.weight"] = tensors["wte.weight"]
    return named


def _ordered(spec: ModelSpec, named: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``named`` in the order ``spec.order`` draws (as it is for 0)."""
    if not spec.order:
        return named
    keys = list(named)
    order = np.random.default_rng(spec.order).permutation(len(keys))
    return {keys[i]: named[keys[i]] for i in order}


def damaged(spec: ModelSpec, named: dict[str, np.ndarray], flaw: str) -> dict[str, np.ndarray]:
    """``named`` (``spec``'s checkpoint) with ``flaw`` (``DAMAGES``), on a block tensor (or an
    element of ``wte``) picked by the spec's own checksum: different specs damage different
    tensors, one spec always the same."""
    prefix = PREFIX if spec.prefix else ""
    named = dict(named)
    pick = zlib.crc32(json.dumps(spec.to_dict(), sort_keys=True).encode())
    blocks = [prefix + name for name in spec.names() if name.startswith("h.")]
    block = blocks[pick % len(blocks)]
    if flaw == "untied-head":
        head = np.array(named[prefix + "wte.weight"], copy=True)
        flat = head.reshape(-1)
        # One ulp of what the model computes in (float32; float16's where it is stored so): a
        # float64 ulp is gone once the loader casts to float32, and rightly accepted.
        narrow = np.float16 if head.dtype == np.float16 else np.float32
        flat[pick % flat.size] = np.nextafter(narrow(flat[pick % flat.size]), narrow(np.inf))
        named["lm_head.weight"] = head
    elif flaw == "missing":
        del named[block]
    elif flaw == "unexpected":
        named[prefix + "h.0.mlp.c_gate.weight"] = np.array(named[prefix + "h.0.mlp.c_fc.weight"])
    elif flaw == "misshapen":
        array = named[block]
        named[block] = np.pad(array, [(0, 0)] * (array.ndim - 1) + [(0, 1)])
    elif flaw == "integer":
        named[block] = named[block].astype(np.int32)
    elif flaw == "gap":
        last = f"{prefix}h.{spec.layers - 1}."
        named = {
            (f"{prefix}h.{spec.layers}." + k[len(last) :] if k.startswith(last) else k): v
            for k, v in named.items()
        }
    elif flaw == "both-names":
        other = "wpe.weight" if spec.prefix else PREFIX + "wpe.weight"
        named[other] = np.array(named[prefix + "wpe.weight"])
    return named


def _parameter(params: Any, name: str) -> Any:
    """The loaded ``compiler.model.GPT2Params`` field that HuggingFace's ``name`` denotes."""
    if name == "wte.weight":
        return params.wte
    if name == "wpe.weight":
        return params.wpe
    parts = name.split(".")
    if parts[0] == "ln_f":
        return params.ln_f.g if parts[1] == "weight" else params.ln_f.b
    block = params.h[int(parts[1])]
    owner: Any = block
    for part in parts[2:-1]:
        owner = getattr(owner, part)
    if parts[-1] == "weight":
        return owner.g if hasattr(owner, "g") else owner.w
    return owner.b


@dataclass
class ModelRun:
    """What the compiler's model code did with one checkpoint on one backend. Errors are
    ``"Type: message"``; arrays are None where the step raised or did not run."""

    loaded: str = ""  # "" where the loader returned, else its error
    config: str = ""  # "" where the inferred config is the checkpoint's, else the difference
    params: list[str] = field(default_factory=list)  # loaded tensors that differ from written
    eager: Any = None  # compiler.model.forward_numpy's logits
    eager_error: str = ""
    logits: Any = None  # compiler.model.forward's logits on the backend
    error: str = ""
    generated: list[int] | None = None  # compiler.model.generate's tokens
    generation_error: str = ""
    greedy: list[int] | None = None  # the same steps, each an argmax of forward's logits here
    # Each flaw (``DAMAGES``) whose checkpoint the loader did not refuse with a ValueError:
    # what it did instead ("loaded it", "raised TypeError: ...").
    unrefused: dict[str, str] = field(default_factory=dict)
    # What each invalid call made (``invalid_kinds``) did on the backend and to forward_numpy:
    # the error's type, or "returned".
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The compiled sublayer calls ``forward`` made for the logits, and for each invalid call:
    # each {"name", "args", "kwargs", and "output" or "error" (a BackendResult)}.
    calls: list[dict[str, Any]] = field(default_factory=list)
    invalid_calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:600]


def _load(spec: ModelSpec, tensors: dict[str, np.ndarray]) -> tuple[Any, Any]:
    from compiler import model

    if not spec.file:
        return model.from_state_dict(tensors, heads=spec.heads)
    from safetensors.numpy import save_file

    with tempfile.TemporaryDirectory(prefix="gpt2-") as directory:
        path = os.path.join(directory, "model.safetensors")
        save_file(tensors, path)
        return model.load_safetensors(path, heads=spec.heads)


def _compare(
    spec: ModelSpec, inputs: list[np.ndarray], config: Any, params: Any, run: ModelRun
) -> None:
    expected = (spec.layers, spec.heads, spec.width, spec.context, spec.vocab)
    got = tuple(getattr(config, k, None) for k in ("layers", "heads", "width", "context", "vocab"))
    if got != expected:
        run.config = f"config (layers, heads, width, context, vocab) {got}, the checkpoint's is"
        run.config += f" {expected}"
        return
    names = spec.names()
    written = {name: array for name, array in zip(names, inputs, strict=True) if name}
    for name, array in written.items():
        try:
            loaded = np.asarray(_parameter(params, name))
        except Exception as error:  # noqa: BLE001 - a missing field is the finding
            run.params.append(f"{name}: not loaded ({_error(error)})")
            continue
        if loaded.dtype != np.float32 or loaded.shape != array.shape:
            run.params.append(f"{name}: {loaded.dtype}{list(loaded.shape)}, written float32"
                              f"{list(array.shape)}")  # fmt: skip
        elif not np.array_equal(loaded, array, equal_nan=True):
            holds = [n for n, a in written.items() if n != name and a.shape == loaded.shape]
            holds = [n for n in holds if np.array_equal(written[n], loaded, equal_nan=True)]
            where = f" (it holds {holds[0]})" if holds else ""
            run.params.append(f"{name}: loaded values differ from the checkpoint's{where}")
    run.params = _by_block(run.params)


_HOLDS = re.compile(
    r"(h\.(\d+))\.(\S+): loaded values differ from the checkpoint's \(it holds h\.(\d+)\.(\S+)\)"
)


def _by_block(lines: list[str]) -> list[str]:
    """``lines`` with each block whose every tensor holds the same other block's said once
    ("h.2: all its tensors hold h.10's"): a loader that takes the blocks in another order."""
    moved: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for line in lines:
        match = _HOLDS.fullmatch(line)
        if match and match.group(3) == match.group(5):
            moved.setdefault(match.group(1), set()).add(match.group(4))
            count[match.group(1)] = count.get(match.group(1), 0) + 1
    complete = len(BLOCK_TENSORS)
    whole = {b: next(iter(o)) for b, o in moved.items() if len(o) == 1 and count[b] == complete}
    out = [
        f"{b}: all its tensors hold h.{o}'s (the blocks in another order)" for b, o in whole.items()
    ]
    for line in lines:
        match = _HOLDS.fullmatch(line)
        if not (match and match.group(1) in whole):
            out.append(line)
    return out


#: What each invalid call (``strategies.model.gpt2.INVALID``) gives the model.
INVALID_CALLS = {
    "context": "one longer than the context, int64",
    "vocab": "one equal to the vocabulary size, int64",
    "vocab-int32": "one equal to the vocabulary size, int32",
    "wide": "one a valid id plus 2**32, int64",
    "negative": "-1, int64",
    "float": "as float32",
    "empty": "none",
    "rank": "as one row of a 2-D array",
    "steps": "valid; -1 generation steps",
}


def invalid_kinds(spec: ModelSpec) -> list[str]:
    """The invalid calls ``spec`` makes (``ModelSpec.invalid``)."""
    if spec.invalid == ALL_INVALID:
        return sorted(INVALID)
    return [spec.invalid] if spec.invalid else []


def _invalid_call(kind: str, spec: ModelSpec, ids: np.ndarray) -> tuple[Any, int]:
    """The ids (and generation steps) of the ``kind`` call."""
    if kind == "context":
        return np.resize(ids, spec.context + 1).astype(np.int64), 0
    if kind in ("vocab", "vocab-int32"):
        bad = ids.astype(np.int64 if kind == "vocab" else np.int32)
        bad[-1] = spec.vocab
        return bad, 0
    if kind == "wide":
        bad = ids.astype(np.int64)
        bad[-1] += 2**32
        return bad, 0
    if kind == "negative":
        bad = ids.astype(np.int64)
        bad[0] = -1
        return bad, 0
    if kind == "float":
        return ids.astype(np.float32), 0
    if kind == "empty":
        return ids[:0], 0
    if kind == "rank":
        return ids.reshape(1, -1), 0
    return ids, -1  # "steps"


#: ``compiler.model``'s compiled sublayers, which ``forward`` calls through the module.
_JITTED = ("embed_jit", "attend_jit", "feedforward_jit", "final_logits_jit")


def _recorded(call: Any, backend: str, calls: list[dict[str, Any]]) -> Any:
    """``forward`` with each compiled sublayer call it makes recorded in ``calls`` (arguments,
    and output or failure): a wrong forward pass is narrowed to the sublayer call that was
    wrong, which is an ordinary program (``strategies.model.gpt2.sublayer``)."""
    from compiler import model

    from .worker import failure

    saved = {name: getattr(model, name) for name in _JITTED}

    def recording(name: str, inner: Any) -> Any:
        def sublayer(*args: Any, **kwargs: Any) -> Any:
            entry: dict[str, Any] = {
                "name": name.removesuffix("_jit"),
                "args": [np.array(a, copy=True) for a in args],
                "kwargs": {k: v for k, v in kwargs.items() if k != "target"},
            }
            calls.append(entry)
            try:
                out = inner(*args, **kwargs)
            except Exception as error:
                entry["error"] = failure(backend, error)
                raise
            entry["output"] = np.array(out, copy=True)
            return out

        return sublayer

    try:
        for name, inner in saved.items():
            setattr(model, name, recording(name, inner))
        return call()
    finally:
        for name, inner in saved.items():
            setattr(model, name, inner)


def run_model(spec: ModelSpec, inputs: list[np.ndarray], backend: str) -> ModelRun:
    """Write the checkpoint, load it with ``compiler.model``, compare what was loaded, run the
    forward pass in NumPy and on ``backend``, generate ``spec.steps`` tokens, and make the call
    the model must refuse (``spec.invalid``)."""
    from compiler import model

    run = ModelRun()
    named = _named(spec, inputs)  # (written once, each flaw on a copy)
    for flaw in DAMAGES:  # (a few small loads: no compile)
        try:
            _load(spec, _ordered(spec, damaged(spec, named, flaw)))
        except ValueError:
            continue
        except Exception as error:  # noqa: BLE001 - another error class is the finding
            run.unrefused[flaw] = f"raised {_error(error)}"
        else:
            run.unrefused[flaw] = "loaded it"
    try:
        config, params = _load(spec, _ordered(spec, named))
    except Exception as error:  # noqa: BLE001 - the loader's failure is the finding
        run.loaded = _error(error)
        return run
    _compare(spec, inputs, config, params, run)
    if run.config:
        return run
    ids = np.asarray(inputs[0])
    try:
        run.eager = np.asarray(model.forward_numpy(params, config, ids))
    except Exception as error:  # noqa: BLE001
        run.eager_error = _error(error)
    try:
        logits = _recorded(
            lambda: model.forward(params, config, ids, target=backend), backend, run.calls
        )
        run.logits = np.array(logits, copy=True)
    except Exception as error:  # noqa: BLE001
        run.error = _error(error)
    if spec.steps and not run.error:
        try:
            run.generated = [int(t) for t in model.generate(params, config, ids, spec.steps,
                                                            target=backend)]  # fmt: skip
        except Exception as error:  # noqa: BLE001
            run.generation_error = _error(error)
        tokens = [int(t) for t in ids]
        try:
            for _ in range(spec.steps):
                window = np.asarray(tokens[-spec.context :], np.int32)
                logits = np.asarray(model.forward(params, config, window, target=backend))
                tokens.append(int(np.argmax(logits[-1])))
            run.greedy = tokens
        except Exception:  # noqa: BLE001 - forward's own failure is judged on the logits
            run.greedy = None
    for kind in invalid_kinds(spec):
        recorded = run.invalid_calls.setdefault(kind, [])
        run.refused[kind] = _invalid_refusals(kind, spec, params, config, ids, backend, recorded)
    return run


def _invalid_refusals(
    kind: str, spec: ModelSpec, params: Any, config: Any, ids: np.ndarray, backend: str,
    recorded: list[dict[str, Any]],
) -> tuple[str, str]:  # fmt: skip
    """What the ``kind`` call did on ``backend`` (its sublayer calls into ``recorded``) and to
    the model in NumPy: "returned", or its error's class."""
    from compiler import model

    bad, steps = _invalid_call(kind, spec, ids)
    if steps < 0:
        return (
            _refusal(lambda: model.generate(params, config, ids, steps, target=backend)),
            _refusal(lambda: model.generate_numpy(params, config, ids, steps)),
        )
    forward = lambda: model.forward(params, config, bad, target=backend)  # noqa: E731
    return (
        _refusal(lambda: _recorded(forward, backend, recorded)),
        _refusal(lambda: model.forward_numpy(params, config, bad)),
    )


def _refusal(call: Any) -> str:
    """What ``call`` did, as the invalid call is judged: "returned", or its error's class."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the class is judged
        return type(error).__name__
    return "returned"


def full_inputs(spec: ModelSpec, seed: int, leading: list[np.ndarray]) -> list[np.ndarray]:
    """The model program's inputs: the case's own ``leading`` ones (ids, positions, wte, wpe)
    and the blocks' and ``ln_f``'s weights made from ``seed``."""
    from strategies.model.gpt2 import inputs

    return [*leading[:LEADING], *inputs(spec, seed)[LEADING:]]


def usable(spec: ModelSpec, inputs: list[np.ndarray]) -> bool:
    """Do ``inputs`` fit ``spec`` (shapes; positions 0..length-1; ids in range; weights exact in
    the stored dtype)? A minimizer's candidate that breaks one is not this model's call."""
    if [tuple(a.shape) for a in inputs] != spec.shapes():
        return False
    ids, positions = np.asarray(inputs[0]), np.asarray(inputs[1])
    if ids.dtype != np.int32 or positions.dtype != np.int32:
        return False
    if not np.array_equal(positions, np.arange(spec.length)):
        return False
    if ids.min() < 0 or ids.max() >= spec.vocab:
        return False
    weights = inputs[2:]
    if any(w.dtype != np.float32 or not np.all(np.isfinite(w)) for w in weights):
        return False
    return exact_in(spec, weights)


def problems(spec: ModelSpec, run: ModelRun, judge: Any) -> list[tuple[str, str, str]]:
    """(kind, facet, detail) of everything wrong with ``run``; ``judge(logits)`` is the error
    model's (kind, reason) for logits that are wrong against the model program's references,
    or None. Facets: ``loader`` (the loader raised, inferred another config, loaded other
    values, or did not refuse a damaged checkpoint with a ValueError), ``composition`` (the
    forward pass evaluated by NumPy is wrong: the model's own Python), ``compiled`` (only the
    compiled forward pass is wrong), ``generation`` and the invalid call's name."""
    found = [
        ("wrong-error", "loader", f"a checkpoint with {DAMAGES[flaw]}: the loader {did}, owed "
                                  "a ValueError")
        for flaw, did in run.unrefused.items()
    ]  # fmt: skip
    if run.loaded:
        return [*found, ("loader", "loader", f"loading the checkpoint raised {run.loaded}")]
    if run.config or run.params:
        lines = [run.config] if run.config else run.params[:6]
        more = len(run.params) - 6
        if more > 0:
            lines.append(f"... and {more} more")
        return [*found, ("loader", "loader", "\n".join(lines))]
    eager_wrong = judge(run.eager) if run.eager is not None else None
    if run.eager_error:
        found.append(("wrong-error", "composition", f"forward_numpy raised {run.eager_error}"))
    elif eager_wrong is not None:
        kind, reason = eager_wrong
        found.append((kind, "composition", f"forward_numpy (the model in NumPy): {reason}"))
    if run.error:
        if not run.eager_error:
            found.append(("wrong-error", "compiled", f"forward raised {run.error}"))
    elif run.logits is not None and not found:
        wrong = judge(run.logits)
        if wrong is not None:
            found.append((wrong[0], "compiled", f"forward: {wrong[1]}"))
    if spec.steps and not run.error:
        if run.generation_error:
            found.append(("generation", "generation", f"generate raised {run.generation_error}"))
        elif run.greedy is not None and run.generated != run.greedy:
            found.append(
                (
                    "generation",
                    "generation",
                    f"generate({spec.steps} steps) gave {run.generated}; each step's argmax of "
                    f"forward's logits on the last {spec.context} tokens gives {run.greedy}",
                )
            )
    for kind, (refused, eager) in run.refused.items():
        owed = INVALID[kind]
        if refused != owed:
            did = "returned" if refused == "returned" else f"raised {refused}"
            eager = "returned" if eager == "returned" else f"raised {eager}"
            found.append(
                (
                    "wrong-error",
                    kind,
                    f"the {kind!r} call (ids {INVALID_CALLS[kind]}) {did} on the backend, owed "
                    f"{owed}; forward_numpy {eager}",
                )
            )
    return found


__all__ = [
    "PREFIX",
    "ModelRun",
    "checkpoint",
    "full_inputs",
    "problems",
    "run_model",
    "usable",
]
