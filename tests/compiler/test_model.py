"""GPT-2 on the compiler: compiled logits against the eager NumPy forward pass of the same weights,
the safetensors loader, greedy generation, causality, id checks and specialization reuse.

Every dimension of the test config is distinct (layers 2, heads 3, width 24, context 16, vocab 40,
sequence 7), so a transposed or swapped tensor cannot line up by accident.
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from compiler import model

CONFIG = model.GPT2Config(layers=2, heads=3, width=24, context=16, vocab=40)
IDS = np.array([3, 17, 0, 39, 17, 8, 25], dtype=np.int32)
TARGETS = ["cpu-blas", "cpu-loops", "cpu-vector"]


@pytest.fixture(scope="module")
def params() -> model.GPT2Params:
    # jitter: non-trivial biases and gains, so every tensor of the checkpoint matters.
    return model.init_params(CONFIG, seed=7, std=0.05, jitter=0.1)


@pytest.fixture(scope="module")
def reference(params: model.GPT2Params) -> np.ndarray:
    return model.forward_numpy(params, CONFIG, IDS)


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    """rtol 1e-5, plus an atol of 1e-6 of the logits' scale for logits that happen to be near 0.

    The float32 prefix (embedding, block 0's layer norm and qkv matmul) rounds differently from
    NumPy's pairwise sums and BLAS blocking: about 2e-8 of the logits' scale, which is over
    rtol 1e-5 of a logit that is 1e-4 of the largest one (seed 5 of this config has one).
    """
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())


def textbook_forward(
    params: model.GPT2Params, config: model.GPT2Config, ids: np.ndarray
) -> np.ndarray:
    """GPT-2 written out directly in NumPy, independent of ``compiler.ops``."""

    def norm(x, p):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * p.g + p.b

    t, c, heads = len(ids), config.width, config.heads
    x = params.wte[ids] + params.wpe[np.arange(t)]
    for block in params.h:
        qkv = norm(x, block.ln_1) @ block.attn.c_attn.w + block.attn.c_attn.b
        q, k, v = (part.reshape(t, heads, -1).swapaxes(0, 1) for part in np.split(qkv, 3, -1))
        scores = q @ k.swapaxes(1, 2) / np.sqrt(c // heads)
        scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        context = (weights @ v).swapaxes(0, 1).reshape(t, c)
        x = x + context @ block.attn.c_proj.w + block.attn.c_proj.b
        hidden = norm(x, block.ln_2) @ block.mlp.c_fc.w + block.mlp.c_fc.b
        hidden = 0.5 * hidden * (1 + np.tanh(np.sqrt(2 / np.pi) * (hidden + 0.044715 * hidden**3)))
        x = x + hidden @ block.mlp.c_proj.w + block.mlp.c_proj.b
    return norm(x, params.ln_f) @ params.wte.T


# --------------------------------------------------------------------------------------------
# Config and initialization


def test_gpt2_small_preset() -> None:
    config = model.gpt2_small()
    assert (config.layers, config.heads, config.width, config.context, config.vocab) == (
        12,
        12,
        768,
        1024,
        50257,
    )


def test_config_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="divisible"):
        model.GPT2Config(layers=2, heads=5, width=24, context=16, vocab=40)
    with pytest.raises(ValueError, match="positive"):
        model.GPT2Config(layers=0, heads=3, width=24, context=16, vocab=40)


def test_init_layout_and_seed(params: model.GPT2Params) -> None:
    c = CONFIG.width
    expected = {"wte.weight": (40, c), "wpe.weight": (16, c), "ln_f.weight": (c,)}
    for i in range(CONFIG.layers):
        expected |= {
            f"h.{i}.ln_1.bias": (c,),
            f"h.{i}.attn.c_attn.weight": (c, 3 * c),
            f"h.{i}.attn.c_attn.bias": (3 * c,),
            f"h.{i}.attn.c_proj.weight": (c, c),
            f"h.{i}.mlp.c_fc.weight": (c, 4 * c),
            f"h.{i}.mlp.c_fc.bias": (4 * c,),
            f"h.{i}.mlp.c_proj.weight": (4 * c, c),
        }
    state = model.to_state_dict(params)
    assert len(state) == 4 + 12 * CONFIG.layers
    for name, shape in expected.items():
        assert state[name].shape == shape, name
    assert all(a.dtype == np.float32 for a in state.values())
    again = model.to_state_dict(model.init_params(CONFIG, seed=7, std=0.05, jitter=0.1))
    other = model.to_state_dict(model.init_params(CONFIG, seed=8, std=0.05, jitter=0.1))
    assert all(np.array_equal(state[k], again[k]) for k in state)
    assert not np.array_equal(state["wte.weight"], other["wte.weight"])
    plain = model.init_params(CONFIG, seed=7)  # GPT-2's own init: unit gains, zero biases
    assert np.all(plain.h[0].ln_1.g == 1) and np.all(plain.h[1].mlp.c_fc.b == 0)


# --------------------------------------------------------------------------------------------
# Forward passes


def test_numpy_forward_is_gpt2(params: model.GPT2Params, reference: np.ndarray) -> None:
    assert_close(reference, textbook_forward(params, CONFIG, IDS))


@pytest.mark.parametrize("target", TARGETS)
def test_compiled_matches_numpy(
    params: model.GPT2Params, reference: np.ndarray, target: str
) -> None:
    logits = model.forward(params, CONFIG, IDS, target=target)
    assert logits.shape == (len(IDS), CONFIG.vocab)
    # NEP 50: attention's strong float64 scale promotes the float32 residual stream.
    assert reference.dtype == np.float64
    assert logits.dtype == reference.dtype
    assert_close(logits, reference)


def test_python_int_ids_are_accepted(params: model.GPT2Params, reference: np.ndarray) -> None:
    logits = model.forward(params, CONFIG, IDS.tolist(), target="cpu-blas")
    assert_close(logits, reference)


@pytest.mark.parametrize("target", [*TARGETS, "numpy"])
def test_causality(params: model.GPT2Params, target: str) -> None:
    changed = IDS.copy()
    changed[-1] = (changed[-1] + 1) % CONFIG.vocab

    def run(ids: np.ndarray) -> np.ndarray:
        if target == "numpy":
            return model.forward_numpy(params, CONFIG, ids)
        return model.forward(params, CONFIG, ids, target=target)

    before, after = run(IDS), run(changed)
    np.testing.assert_array_equal(before[:-1], after[:-1])
    assert not np.allclose(before[-1], after[-1])


@pytest.mark.parametrize("target", [*TARGETS, "numpy"])
@pytest.mark.parametrize("bad", [CONFIG.vocab, -1])
def test_out_of_range_id_raises(params: model.GPT2Params, target: str, bad: int) -> None:
    ids = IDS.copy()
    ids[2] = bad
    with pytest.raises(ValueError, match="gather"):
        if target == "numpy":
            model.forward_numpy(params, CONFIG, ids)
        else:
            model.forward(params, CONFIG, ids, target=target)


def test_bad_id_sequences_raise(params: model.GPT2Params) -> None:
    with pytest.raises(ValueError, match="lie in"):
        model.forward(params, CONFIG, np.array([1, 2**32 + 1], np.int64))  # must not wrap to 1
    with pytest.raises(ValueError, match="context"):
        model.forward(params, CONFIG, np.zeros(CONFIG.context + 1, np.int32))
    with pytest.raises(ValueError, match="non-empty"):
        model.forward(params, CONFIG, np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="1-D"):
        model.forward(params, CONFIG, IDS[None])
    with pytest.raises(TypeError, match="integers"):
        model.forward(params, CONFIG, IDS.astype(np.float32))


def test_specializations_are_reused() -> None:
    # Its own shapes, so no other test in this process has compiled them already.
    config = model.GPT2Config(layers=4, heads=2, width=10, context=12, vocab=30)
    params = model.init_params(config, seed=3, jitter=0.1)
    ids = np.array([1, 5, 29, 0, 7, 7], np.int32)
    functions = model.jitted()
    counts = {name: fn.traces for name, fn in functions.items()}
    first = model.forward(params, config, ids, target="cpu-blas")
    traced = {name: fn.traces - counts[name] for name, fn in functions.items()}
    # Block 0's attention sees float32, blocks 1..3 share one float64 specialization.
    assert traced == {"embed": 1, "attend": 2, "feedforward": 1, "final_logits": 1}
    counts = {name: fn.traces for name, fn in functions.items()}
    second = model.forward(params, config, ids[::-1].copy(), target="cpu-blas")
    assert {name: fn.traces for name, fn in functions.items()} == counts
    assert not np.array_equal(first, second)
    assert_close(second, model.forward_numpy(params, config, ids[::-1]))


# --------------------------------------------------------------------------------------------
# Generation


@pytest.mark.slow
def test_generate_is_greedy_and_respects_the_context(params: model.GPT2Params) -> None:
    prompt = np.array([5, 1, 38, 2, 9, 11, 30, 4, 4, 19, 0, 22, 7, 13], np.int32)  # 14 of 16
    steps = 4  # windows of 14, 15, 16, then the last 16 of 17
    out = model.generate(params, CONFIG, prompt, steps, target="cpu-blas")
    assert isinstance(out, list) and all(isinstance(t, int) for t in out)
    assert len(out) == len(prompt) + steps
    assert out[: len(prompt)] == prompt.tolist()
    assert all(0 <= t < CONFIG.vocab for t in out)
    assert model.generate(params, CONFIG, prompt, steps, target="cpu-blas") == out
    assert model.generate_numpy(params, CONFIG, prompt, steps) == out
    # The last token, checked without the shared greedy loop: argmax over the cropped window.
    window = np.asarray(out[-1 - CONFIG.context : -1], np.int32)
    assert out[-1] == int(np.argmax(model.forward_numpy(params, CONFIG, window)[-1]))
    assert model.generate(params, CONFIG, prompt, 0, target="cpu-blas") == prompt.tolist()
    # A prompt longer than the context is cropped too (window 16 is compiled already).
    long = out + out[:2]
    longer = model.generate(params, CONFIG, long, 1, target="cpu-blas")
    window = np.asarray(long[-CONFIG.context :], np.int32)
    assert longer[:-1] == long
    assert longer[-1] == int(np.argmax(model.forward_numpy(params, CONFIG, window)[-1]))
    with pytest.raises(ValueError, match="lie in"):  # even where the window would crop it away
        model.generate(params, CONFIG, [CONFIG.vocab] + long, 1, target="cpu-blas")


# --------------------------------------------------------------------------------------------
# safetensors


@pytest.mark.parametrize("prefix", ["", "transformer."])
def test_loader_round_trip(
    params: model.GPT2Params, reference: np.ndarray, tmp_path, prefix: str
) -> None:
    path = tmp_path / "model.safetensors"
    model.save_safetensors(params, path, prefix=prefix)
    assert all(name.startswith(prefix) for name in load_file(path))
    config, loaded = model.load_safetensors(path, heads=CONFIG.heads)
    assert config == CONFIG
    original, restored = model.to_state_dict(params), model.to_state_dict(loaded)
    assert original.keys() == restored.keys()
    for name in original:
        assert restored[name].dtype == np.float32
        np.testing.assert_array_equal(restored[name], original[name], err_msg=name)
    np.testing.assert_array_equal(model.forward_numpy(loaded, config, IDS), reference)
    np.testing.assert_array_equal(
        model.forward(loaded, config, IDS, target="cpu-blas"),
        model.forward(params, CONFIG, IDS, target="cpu-blas"),
    )


def test_loader_accepts_hf_extras_and_defaults_to_12_heads(
    params: model.GPT2Params, tmp_path
) -> None:
    tensors = model.to_state_dict(params, prefix="transformer.")
    for i in range(CONFIG.layers):  # the causal-mask buffers older GPT-2 checkpoints carry
        tensors[f"transformer.h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 16, 16), np.float32))
        tensors[f"transformer.h.{i}.attn.masked_bias"] = np.array(-1e4, np.float32)
    tensors["lm_head.weight"] = params.wte
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    config, _ = model.load_safetensors(path)
    assert config == model.GPT2Config(layers=2, heads=12, width=24, context=16, vocab=40)


def test_loader_rejects_broken_checkpoints(params: model.GPT2Params, tmp_path) -> None:
    def check(tensors: dict[str, np.ndarray], message: str) -> None:
        path = tmp_path / "broken.safetensors"
        save_file(tensors, str(path))
        with pytest.raises(ValueError, match=message):
            model.load_safetensors(path, heads=CONFIG.heads)

    state = model.to_state_dict(params)
    check({k: v for k, v in state.items() if k != "h.1.ln_2.bias"}, "missing")
    check(state | {"h.0.attn.c_attn.weight": state["h.0.attn.c_attn.weight"].T.copy()}, "shape")
    check(state | {"h.0.attn.extra": np.zeros(3, np.float32)}, "unexpected")
    check(state | {"lm_head.weight": state["wte.weight"] + 1}, "tied")
    check({k: v for k, v in state.items() if not k.startswith("h.0.")}, "block indices")
