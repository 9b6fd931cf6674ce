"""The persistent compilation cache (``compiler.persist``): a second process loads the kernel a
first one stored and runs no stage and no JIT; every input of the code is in the key; a damaged
or untrusted cache costs a compile, never a wrong answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from compiler import driver, jit, ops, persist
from compiler.runtime import instrumented

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("ld") is None, reason="no linker (ld) to store with")

#: A program with a gemm (OpenBLAS) and a transcendental (cpu-vector's own exp), run in a fresh
#: process: prints its output's bits, the compile's notes and the stages that ran.
PROCESS = textwrap.dedent("""
    import json, sys
    import numpy as np
    from compiler import driver, jit, ops

    ran = []
    driver.STAGE_LISTENERS.append(lambda backend, stage: ran.append(stage))
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(6, 8), (8, 5), (5,)])
    compiled = jit(lambda x, w, b: ops.gelu(ops.linear(x, w, b))).compile(
        x, w, b, target=sys.argv[1]
    )
    out = compiled(x, w, b)
    print(json.dumps({
        "bits": out.tobytes().hex(), "dtype": str(out.dtype), "shape": out.shape,
        "notes": compiled.artifacts.notes,
        "ran": ran,
        "lowered": "llvm.func" in compiled.stages["lowered"],
        "mlir_loaded": "mlir._mlir_libs._mlir" in sys.modules,
    }))
    """)


def _process(cache: Path, target: str = "cpu-vector") -> dict:
    env = {**os.environ, persist.ENVIRONMENT: str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROCESS, target],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith("."))


def test_a_second_process_loads_the_kernel_and_runs_no_stage(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _process(cache)
    assert (
        "persisted" not in first["notes"] and "lowered" in first["ran"] and "llvm" in first["ran"]
    )
    [entry] = _entries(cache)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    second = _process(cache)
    assert second["notes"]["persisted"] == entry.name
    assert second["ran"] == [], "no stage ran, nor the JIT"
    assert not second["mlir_loaded"], "no MLIR context, pass or JIT in the second process"
    assert second["lowered"], "the stage texts come with the kernel"
    assert second["bits"] == first["bits"], "the stored code is the code"
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(6, 8), (8, 5), (5,)])
    got = np.frombuffer(bytes.fromhex(second["bits"]), second["dtype"]).reshape(second["shape"])
    want = ops.gelu(ops.linear(x, w, b))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Another target is another entry.
    assert "persisted" not in _process(cache, "cpu-blas")["notes"]
    assert len(_entries(cache)) == 2


@pytest.fixture
def cache(tmp_path: Path):
    """The persistent cache on, in-process caches empty, for one test."""
    previous = persist.set_cache_dir(tmp_path / "cache")
    driver.clear_caches()
    yield tmp_path / "cache"
    persist.set_cache_dir(previous)
    driver.clear_caches()


def _compile(rng_seed: int = 1, target: str = "cpu-loops", dtype=np.float64):
    """A fresh jit (no specialization cache) and in-process caches cleared: only the disk."""
    driver.clear_caches()
    x = np.random.default_rng(rng_seed).standard_normal((3, 4)).astype(dtype)
    compiled = jit(lambda x: np.exp(x) - x.sum(axis=0)).compile(x, target=target)
    return compiled, compiled(x), np.exp(x) - x.sum(axis=0)


def test_every_input_of_the_code_is_in_the_key(cache: Path, monkeypatch) -> None:
    first, got, want = _compile()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert len(_entries(cache)) == 1
    again, got, _ = _compile()
    assert again.artifacts.notes["persisted"] == _entries(cache)[0].name
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert again.stages == first.stages and again.artifacts.commands == first.artifacts.commands
    # Another dtype, another target or LLVM level, and an edited compiler: each its own entry.
    for compiled, _, _ in (
        _compile(dtype=np.float32),
        _compile(target="cpu-loops@O0"),
        _compile(target="cpu-loops-unfused"),
    ):
        assert "persisted" not in compiled.artifacts.notes
    assert len(_entries(cache)) == 4
    monkeypatch.setattr(persist, "_source_digest", lambda: "a planted bug in a pass")
    assert "persisted" not in _compile()[0].artifacts.notes
    assert len(_entries(cache)) == 5


def test_a_damaged_entry_is_compiled_again_and_replaced(cache: Path) -> None:
    _compile()
    [entry] = _entries(cache)
    for damage in ("kernel.so", "stages.json.z", "meta.json"):
        (entry / damage).write_bytes(b"\x7fELF garbage")
        with pytest.warns(RuntimeWarning, match="unusable, compiled again"):
            compiled, got, want = _compile()
        assert "persisted" not in compiled.artifacts.notes
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert "persisted" in _compile()[0].artifacts.notes, f"{damage}: stored again"
    # An object that loads but is another kernel's code (same size, digest rewritten): its
    # digest is checked against the file, not trusted.
    meta = json.loads((entry / "meta.json").read_text())
    meta["sha256"] = "0" * 64
    (entry / "meta.json").write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match="does not match its digest"):
        assert "persisted" not in _compile()[0].artifacts.notes


def test_an_untrusted_directory_is_not_used(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="others can write to it"):
        compiled, got, want = _compile()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _entries(cache) == [] and persist.cache_dir() is None


def test_instrumented_and_fresh_compiles_never_use_it(cache: Path) -> None:
    with instrumented():
        _compile()
    assert not cache.exists() or _entries(cache) == []
    _compile()
    with driver.fresh():
        assert "persisted" not in _compile()[0].artifacts.notes
    assert "persisted" in _compile()[0].artifacts.notes


def test_without_a_linker_nothing_is_stored(cache: Path, monkeypatch) -> None:
    monkeypatch.setattr(persist.shutil, "which", lambda name: None)
    monkeypatch.setitem(persist._STATE, "no_linker", False)
    with pytest.warns(RuntimeWarning, match="no linker"):  # once
        compiled, got, want = _compile()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once a process, not at every compile
        _compile(target="cpu-blas")
    assert _entries(cache) == []


def test_least_recently_used_entries_go_first(cache: Path, monkeypatch) -> None:
    monkeypatch.setattr(persist, "MAX_ENTRIES", 2)
    _compile(target="cpu-loops")
    _compile(target="cpu-blas")
    [a, b] = sorted(_entries(cache), key=lambda p: p.stat().st_mtime)
    os.utime(b, (1, 1))  # b used long ago
    _compile(target="cpu-loops@O0")
    names = {p.name for p in _entries(cache)}
    assert len(names) == 2 and a.name in names and b.name not in names
    assert persist.clear(cache) == 2 and _entries(cache) == []
