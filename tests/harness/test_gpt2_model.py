"""The GPT-2 model layer (``compiler/model.py``) as a fuzzing target: the gpt2-model oracle.

The harness writes a checkpoint under HuggingFace's names from the model's inputs (its own
writer), ``compiler.model`` loads and runs it, and the logits are judged against GPT-2 written
as one program. Checked here: the program is the model (NumPy's evaluation of it equals
``forward_numpy`` bit for bit), every checkpoint layout loads the same weights, the real
compiler passes, and bugs planted in the model layer (monkeypatched in this process) are each
found with the facet that says where they live; a wrong compiled sublayer is narrowed to its
own program; the minimizer shrinks a model; the reproducer fails exactly with the bug in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from compiler import model
from harness.case import Case
from harness.oracles.base import Finding
from harness.oracles.gpt2 import NAME, judge_logits, model_case, references_of, wrong_sublayer
from harness.report.reproducer import reproducer
from harness.run.gpt2 import checkpoint, full_inputs, problems, run_model, usable
from harness.run.references import references
from harness.selftest import MUTATIONS, apply, fuzz_command, scratch_environment
from harness.session.generate import gpt2_cases
from harness.triage.minimize import generators, minimize
from strategies.model.gpt2 import ALL_INVALID, DAMAGES, INVALID, ModelSpec, inputs, program

BACKEND = "cpu-loops@O0"
SPEC = ModelSpec(layers=2, heads=2, width=4, context=4, vocab=5, length=3, steps=2)


def _problems(spec: ModelSpec, seed: int = 3) -> tuple[list, object]:
    weights = inputs(spec, seed)
    forward = Case(program(spec), weights, (BACKEND,))
    run = run_model(spec, weights, BACKEND)
    return problems(spec, run, judge_logits(forward, references_of(forward))), run


def test_the_program_is_the_model() -> None:
    """NumPy evaluating the program equals compiler.model.forward_numpy on the loaded
    checkpoint bit for bit, float64 logits of (length, vocab); every layout of the checkpoint
    loads the very same tensors."""
    for spec in (SPEC, replace(SPEC, layers=12, heads=1, length=1, vocab=2)):
        weights = inputs(spec, 11)
        numpy_ref = references(Case(program(spec), weights, ()), False)["numpy"]
        config, params = model.from_state_dict(checkpoint(spec, weights), heads=spec.heads)
        eager = model.forward_numpy(params, config, weights[0])
        assert eager.dtype == np.float64 and eager.shape == (spec.length, spec.vocab)
        assert np.array_equal(eager, numpy_ref.output)
        layouts = dict(prefix=True, lm_head=True, buffers=True, stored="float16", order=7)
        other = replace(spec, **layouts)
        tensors = checkpoint(other, inputs(other, 11))
        assert "lm_head.weight" in tensors and "transformer.h.0.attn.bias" in tensors
        assert list(tensors) != sorted(tensors)
        _, loaded = model.from_state_dict(tensors, heads=spec.heads)
        assert np.array_equal(loaded.h[-1].mlp.c_proj.w, inputs(other, 11)[-4])


def test_inputs_fit_and_smaller_models_keep_their_weights() -> None:
    weights = inputs(SPEC, 5)
    assert usable(SPEC, weights)
    assert [tuple(w.shape) for w in weights] == SPEC.shapes()
    fewer = inputs(replace(SPEC, layers=1), 5)
    assert all(np.array_equal(a, b) for a, b in zip(fewer[:16], weights[:16], strict=True))
    half = replace(SPEC, stored="float16")
    assert not usable(half, weights) or all(
        np.array_equal(w.astype(np.float16).astype(np.float32), w) for w in weights[2:]
    )
    broken = list(weights)
    broken[1] = broken[1][::-1].copy()  # positions must be 0..length-1
    assert not usable(SPEC, broken)
    tied = inputs(replace(SPEC, ties=True), 5)[2]
    assert np.array_equal(tied[0], tied[1]) and np.array_equal(tied[2], tied[3])


def test_the_real_model_passes() -> None:
    for invalid in [*sorted(INVALID), ALL_INVALID]:
        spec = replace(SPEC, invalid=invalid, ties=True, file=invalid == "rank")
        found, run = _problems(spec)
        assert found == [], (invalid, found)
        kinds = sorted(INVALID) if invalid == ALL_INVALID else [invalid]
        assert run.refused == {k: (INVALID[k], INVALID[k]) for k in kinds}
        assert run.generated == run.greedy
        assert {c["name"] for c in run.calls} == {"embed", "attend", "feedforward", "final_logits"}


def test_loader_bugs_are_found_as_the_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    monkeypatch.setattr(model, "_BLOCK_KEY", re.compile(r"h\.(\d)\.(.+)"))
    found, _ = _problems(replace(SPEC, layers=11))
    assert [(k, f) for k, f, _ in found] == [("loader", "loader")]
    assert "h.10." in found[0][2]
    monkeypatch.undo()

    real = model.from_state_dict

    def swapped(tensors, heads=12):  # ln_1 and ln_2 of block 1 exchanged
        config, params = real(tensors, heads)
        block = params.h[1]
        block.ln_1, block.ln_2 = block.ln_2, block.ln_1
        return config, params

    monkeypatch.setattr(model, "from_state_dict", swapped)
    found, _ = _problems(SPEC)
    assert found[0][:2] == ("loader", "loader")
    assert (
        "h.1.ln_1.weight: loaded values differ from the checkpoint's (it holds h.1.ln_2.weight)"
        in found[0][2]
    )


@pytest.mark.parametrize("prefix", [False, True])
def test_every_damaged_checkpoint_is_refused_and_a_loader_that_takes_one_is_found(
    monkeypatch: pytest.MonkeyPatch, prefix: bool
) -> None:
    """Every model case offers the loader its checkpoint with each flaw (``DAMAGES``: an untied
    head one ulp away, a tensor missing, unknown, of another shape or of int32, a gap in the
    blocks, a tensor under both names): the real loader refuses each with a ValueError,
    through a dict and a file, in every stored dtype. A loader that checks the head's shape
    only (a held-out plant, which no session could see while every checkpoint was well
    formed) loads an untied head: a ``wrong-error`` of the ``loader`` facet, whatever else
    the case finds."""
    import re

    for stored, file in (("float32", False), ("float16", True), ("float64", False)):
        spec = replace(SPEC, stored=stored, file=file, prefix=prefix)
        found, run = _problems(spec)
        assert found == [] and run.unrefused == {}, (stored, run.unrefused)
    weights = inputs(SPEC, 3)
    for flaw in DAMAGES:  # each flaw changes the checkpoint, the same way every time
        one, two = checkpoint(SPEC, weights, flaw), checkpoint(SPEC, weights, flaw)
        assert one.keys() == two.keys() and all(np.array_equal(one[k], two[k]) for k in one)
        plain = checkpoint(SPEC, weights)
        assert one.keys() != plain.keys() or any(
            a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b)
            for a, b in zip(one.values(), plain.values(), strict=True)
        ), flaw
    layers = {int(m.group(1)) for k in checkpoint(SPEC, weights, "gap")
              if (m := re.match(r"h\.(\d+)\.", k))}  # fmt: skip
    assert layers == {0, 2}

    real = model.from_state_dict

    def shape_only(tensors, heads=12):  # the head compared with wte by its shape alone
        tensors = dict(tensors)
        head = tensors.pop("lm_head.weight", None)
        config, params = real(tensors, heads)
        if head is not None and np.shape(head) != params.wte.shape:
            raise ValueError("lm_head.weight differs from wte.weight")
        return config, params

    monkeypatch.setattr(model, "from_state_dict", shape_only)
    found, run = _problems(replace(SPEC, lm_head=True, prefix=prefix))
    assert run.unrefused == {"untied-head": "loaded it"} and run.logits is not None
    assert [(k, f) for k, f, _ in found] == [("wrong-error", "loader")], found
    assert "one ulp from wte.weight: the loader loaded it, owed a ValueError" in found[0][2]


def test_composition_generation_and_input_check_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    real_embed = model.embed

    def embed_reversed_positions(wte, wpe, ids, positions):
        return real_embed(wte, wpe, ids, positions[::-1])

    monkeypatch.setattr(model, "embed", embed_reversed_positions)
    found, _ = _problems(SPEC)
    assert ("mismatch", "composition") in [(k, f) for k, f, _ in found]
    monkeypatch.undo()

    real_greedy = model._greedy

    def greedy_shorter_window(logits_of, config, ids, steps):
        narrow = replace(config, context=max(config.context - 1, 1))
        return real_greedy(logits_of, narrow, ids, steps)

    monkeypatch.setattr(model, "_greedy", greedy_shorter_window)
    found, _ = _problems(replace(SPEC, length=4, steps=3))
    assert [(k, f) for k, f, _ in found] == [("generation", "generation")]
    monkeypatch.undo()

    real_tokens = model.token_array
    monkeypatch.setattr(
        model,
        "token_array",
        lambda ids, config: real_tokens(np.asarray(ids).astype(np.int64), config),
    )
    found, _ = _problems(replace(SPEC, invalid="float"))
    assert [(k, f) for k, f, _ in found] == [("wrong-error", "float")]
    assert "owed TypeError" in found[0][2]
    monkeypatch.undo()

    # Narrowed to int32 before the range check (a held-out plant): a valid id plus 2**32 wraps
    # into range and is taken, where a ValueError is owed.
    monkeypatch.setattr(
        model, "token_array", lambda ids, config: real_tokens(np.asarray(ids, np.int32), config)
    )
    found, _ = _problems(replace(SPEC, invalid=ALL_INVALID))  # every call made, each judged
    facets = {f: detail for k, f, detail in found if k == "wrong-error"}
    assert set(facets) == {"wide", "float"}, found  # (float ids cast to int32 too)
    assert "plus 2**32, int64) returned on the backend, owed ValueError" in facets["wide"]


def test_a_wrong_compiled_sublayer_is_narrowed_to_its_own_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled feedforward that is off by 1% (and right in NumPy): the finding is the
    differential oracle's, on the feedforward call as its own program on the backend."""
    real = model.feedforward_jit

    def off(*args, **kwargs):
        return real(*args, **kwargs) * 1.01

    monkeypatch.setattr(model, "feedforward_jit", off)
    found, run = _problems(SPEC)
    assert [(k, f) for k, f, _ in found] == [("mismatch", "compiled")]
    narrowed = wrong_sublayer(run.calls, BACKEND, references_of)
    assert [(f.oracle, f.kind, f.case.origin) for f in narrowed] == [
        ("differential", "mismatch", "gpt2/feedforward")
    ]
    assert narrowed[0].case.program.ops == ("feedforward",)
    monkeypatch.undo()
    assert wrong_sublayer(run.calls[:1], BACKEND, references_of) == []


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(gpt2_cases((BACKEND, "cpu-vector@O0")))
def test_drawn_models_are_cases_of_the_oracle(case: Case) -> None:
    spec, seed = case.gpt2
    assert model_case(case) is not None
    assert case.carries_run and not case.without_sequence().carries_run
    assert Case.from_dict(case.to_dict()).gpt2 == (spec, seed)
    assert len(case.backends) == 1 and spec.length <= spec.context
    assert usable(spec, full_inputs(spec, seed, case.inputs))


def test_the_minimizer_shrinks_the_model() -> None:
    """With a failure that needs only mask buffers in the checkpoint, the model shrinks to one
    block, one head, one token, context 1, the vocabulary of its id, no generation, the plain
    layout but the buffers."""
    spec = ModelSpec(3, 2, 6, 6, 9, 4, 2, prefix=True, buffers=True, stored="float16", order=5,
                     invalid="rank", ties=True)  # fmt: skip
    case = Case.from_gpt2(spec, 1, (BACKEND,))
    finding = Finding("loader", (BACKEND,), NAME, "", case, program_free=True, facet="loader")
    assert generators(case, finding)[0].__name__ == "_variants_gpt2"

    def predicate(candidate: Case) -> Finding | None:
        if model_case(candidate) is None or not candidate.gpt2[0].buffers:
            return None
        return Finding("loader", (BACKEND,), NAME, "", candidate, program_free=True, facet="loader")

    best = minimize(case, finding, predicate, budget_seconds=60, max_evaluations=400).case
    small = best.gpt2[0]
    assert (small.layers, small.heads, small.width, small.length, small.context) == (1, 1, 1, 1, 1)
    assert small.vocab == 1 and small.steps == 0 and small.buffers
    assert not (small.prefix or small.order or small.invalid or small.ties)
    assert small.stored == "float32"


def test_the_reproducer_fails_exactly_with_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    case = Case.from_gpt2(replace(SPEC, lm_head=True), 2, (BACKEND,))
    finding = Finding("loader", (BACKEND,), NAME, "x", case, program_free=True, facet="loader")
    text = reproducer(case, finding)
    assert "gpt2_model(MODEL, 2, [x0, x1, x2, x3], 'cpu-loops@O0')" in text

    def status() -> int:
        with pytest.raises(SystemExit) as stop:
            exec(compile(text, "reproducer.py", "exec"), {"__name__": "__main__"})
        return stop.value.code

    assert status() == 0
    real = model.from_state_dict
    monkeypatch.setattr(
        model,
        "from_state_dict",
        lambda t, heads=12: real({k: v for k, v in t.items() if k != "lm_head.weight"}, heads),
    )
    # Dropping the head unread loads an untied one too, which each case now offers it.
    assert status() == 1
    monkeypatch.setattr(model, "from_state_dict", lambda t, heads=12: real(t, 1))
    assert status() == 1


@pytest.mark.long
@pytest.mark.slow
def test_a_models_session_finds_minimizes_and_attributes_a_planted_loader_bug(
    tmp_path: Path,
) -> None:
    """``model-blocks-in-name-order`` (the loader takes h.10 before h.2) planted in a scratch
    copy: a ``--mix models`` session finds it as the loader's, minimized to 11 blocks of the
    plainest checkpoint, layer ``model``; its reproducer fails there and passes on the real
    compiler."""
    mutation = next(m for m in MUTATIONS if m.name == "model-blocks-in-name-order")
    scratch = apply(mutation, tmp_path / "src")
    summary = tmp_path / "summary.json"
    command = fuzz_command(
        tmp_path / "corpus", 240, 1, "--workers", "1", "--stop-on-first", "--no-database",
        "--mix", "models", "--summary-json", str(summary), "--minimize-seconds", "90",
        "--shrink-seconds", "10",
    )  # fmt: skip
    proc = subprocess.run(
        command, cwd=tmp_path, env=scratch_environment(scratch), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert summary.exists(), proc.stderr[-3000:]
    entries = [json.loads(p.read_text()) for p in (tmp_path / "corpus").glob("*.json")]
    mine = [e for e in entries if e["case"]["oracle"] == NAME]
    assert mine, [e["case"]["oracle"] for e in entries]
    entry = mine[0]
    spec = ModelSpec.from_dict(entry["case"]["case"]["extra"]["gpt2"]["spec"])
    assert (spec.layers, spec.heads, spec.length, spec.steps) == (11, 1, 1, 0), spec
    assert not (spec.prefix or spec.order or spec.invalid or spec.file)
    assert entry["evidence"]["attribution"]["layer"] == "model"
    assert "h.2: all its tensors hold h.10's" in entry["detail"]
    script = tmp_path / "repro.py"
    script.write_text(entry["reproducer"])
    planted = subprocess.run(
        [sys.executable, str(script)], env=scratch_environment(scratch), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert planted.returncode == 1, planted.stdout + planted.stderr
    real = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600,
        cwd=tmp_path,
    )  # fmt: skip
    assert real.returncode == 0, real.stdout + real.stderr


def test_a_crash_in_the_model_step_keeps_the_model_and_is_narrowed_to_sublayers() -> None:
    """A worker that died in the ``model`` step is the model's (minimized as a model, its
    oracle forced on replay); attribution runs each sublayer call, interpreted arguments, as
    its own program."""
    from harness.replay import oracles_of
    from harness.triage.attribution import _sublayer_cases

    case = Case.from_gpt2(SPEC, 4, (BACKEND,))
    crash = Finding("crash", (BACKEND,), "isolation", f"killed by SIGABRT [stage {BACKEND} model]",
                    case)  # fmt: skip
    assert generators(case, crash)[0].__name__ == "_variants_gpt2"
    assert oracles_of(crash.signature, crash.detail) == (NAME,)
    other = Finding("crash", (BACKEND,), "isolation", f"killed [stage {BACKEND} lowered]", case)
    assert generators(case, other)[0].__name__ != "_variants_gpt2"
    subs = _sublayer_cases(case, BACKEND)
    names = [c.origin for c in subs]
    assert names == ["gpt2/embed"] + ["gpt2/attend", "gpt2/feedforward"] * 2 + ["gpt2/final_logits"]
    assert all(c.backends == (BACKEND,) for c in subs)
    assert [a.dtype for a in subs[1].inputs][:2] == [np.float32, np.float32]  # block 0
    assert subs[3].inputs[0].dtype == np.float64  # block 1's attention: the float64 stream


def test_a_stored_model_is_checked_before_anything_runs() -> None:
    """A corpus file is not trusted: a malformed or huge model is a ValueError, and a case
    that carries one is not the oracle's (nothing is allocated or run)."""
    good = SPEC.to_dict()
    for change in ({"layers": 10**6}, {"steps": 10**9}, {"width": 1024, "layers": 48},
                   {"prefix": "yes"}, {"invalid": ["x"]}, {"order": -1}, {"stored": "int8"},
                   {"length": 9}, {"heads": 3}, {"bogus": 1}):  # fmt: skip
        with pytest.raises(ValueError):
            ModelSpec.from_dict({**good, **change})
        case = Case.from_gpt2(SPEC, 1, (BACKEND,))
        case.extra["gpt2"]["spec"] = {**good, **change}
        assert model_case(case) is None and case.size > 0
    case = Case.from_gpt2(SPEC, 1, (BACKEND,))
    case.extra["gpt2"]["seed"] = -3
    assert model_case(case) is None
