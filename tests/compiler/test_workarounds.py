"""Workarounds for upstream bugs as named switches (compiler/workarounds.py).

The switch must change what the compiler emits, the compile caches must never hand the module
built under one state to a compile under the other, the environment variable must parse as
documented, and a typo must be an error that lists the known names. The slow tests at the end
keep the corpus entries that need a workaround off honest: their reduced ``.mlir`` and their
Python reproducer still crash on this wheel; both are ``xfail(strict=True)`` on exactly that
crash, so the wheel that fixes the bug turns them into failures, which says the workaround can
go.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import driver, workarounds
from compiler.pipelines import BUILT, resolve

NAME = "subview-rank-reduction"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with every workaround on, whatever the shell says."""
    monkeypatch.delenv(workarounds.ENV, raising=False)


def _pick(x: np.ndarray) -> np.ndarray:
    return x[::3, 0]  # an integer index next to a step on a size-1 dim: the crashing shape


def _row(x: np.ndarray) -> np.ndarray:
    return x[1]  # rank-reducing, but safe for MLIR (unit steps)


def test_registry_names_issue_and_description() -> None:
    assert NAME in workarounds.WORKAROUNDS
    for name, w in workarounds.WORKAROUNDS.items():
        assert w.name == name and w.issue and w.description
        assert workarounds.enabled(name), "every workaround is on by default"
    rows = {row["name"]: row for row in workarounds.describe()}
    assert rows[NAME]["state"] == "on"
    assert "llvm" in rows[NAME]["issue"]
    # Those whose bug is an assertion or an abort are fatal: a caller that turns workarounds
    # off to check what caches key by them (the harness) takes only the survivable ones.
    fatal = {
        "subview-rank-reduction",
        "bf16-power-of-two-vectors",
        "optnone-half-vectors",
        "emulation-without-avx512",
    }
    assert {n for n, w in workarounds.WORKAROUNDS.items() if w.fatal} == fatal
    assert set(workarounds.survivable()) == set(workarounds.WORKAROUNDS) - fatal
    assert rows["unmasked-minmax"]["off"] == "wrong answers" and "kills" in rows[NAME]["off"]


def test_the_switch_changes_the_emitted_ir() -> None:
    x = np.arange(2, dtype=np.int32).reshape(1, 2, 1)
    on = compiler.jit(_pick).emit(x)
    with workarounds.disabled(NAME):
        assert not workarounds.enabled(NAME)
        off = compiler.jit(_pick).emit(x)
    assert workarounds.enabled(NAME)
    assert "to tensor<1x1x1xi32>" in on and "tensor.reshape" in on
    assert "[3, 1, 1] : tensor<1x2x1xi32> to tensor<1x1xi32>" in off
    assert "tensor.reshape" not in off


def test_negative_steps_rank_reduce_too() -> None:
    """With the workaround off a reversed slice is still one rank-reducing extract_slice (then a
    generic reading it backwards), and computes NumPy's answer."""
    x = np.arange(24, dtype=np.float32).reshape(3, 2, 4)

    def reverse(v: np.ndarray) -> np.ndarray:
        return v[::-1, 1, ::2]

    with workarounds.disabled(NAME):
        text = compiler.jit(reverse).emit(x)
        got = compiler.jit(reverse)(x, target="cpu-loops")
    assert "to tensor<3x2xf32>" in text and "tensor.reshape" not in text
    np.testing.assert_array_equal(got, reverse(x))


def test_the_compile_cache_keeps_the_states_apart() -> None:
    """One traced graph compiled under both states: each gets its own module (the driver keys
    the built text by the workaround state), and both run correctly."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    fn = compiler.jit(_row)
    _, graph, _ = fn.trace(x)
    target = resolve("cpu-loops")
    first = driver.compile_graph(graph, target, native=False).stages[BUILT]
    with workarounds.disabled(NAME):
        off = driver.compile_graph(graph, target, native=False).stages[BUILT]
        off_again = driver.compile_graph(graph, target, native=False).stages[BUILT]
    again = driver.compile_graph(graph, target, native=False).stages[BUILT]
    assert first == again and off == off_again
    assert first != off
    assert "tensor.reshape" in first and "tensor.reshape" not in off
    assert set(graph.__dict__["_built"]) == {(), (NAME,)}
    with workarounds.disabled(NAME):
        np.testing.assert_array_equal(compiler.jit(_row)(x, target="cpu-loops"), x[1])
    np.testing.assert_array_equal(compiler.jit(_row)(x, target="cpu-loops"), x[1])


def test_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(workarounds.ENV, f" {NAME} ,, ")
    assert workarounds.state() == (NAME,)
    assert not workarounds.enabled(NAME)
    assert {r["name"]: r["state"] for r in workarounds.describe()}[NAME] == "off"
    monkeypatch.setenv(workarounds.ENV, "")
    assert workarounds.enabled(NAME)
    assert workarounds.parse(f"{NAME},{NAME}") == (NAME,)
    assert workarounds.parse(" ") == ()


def test_the_environment_variable_reaches_a_fresh_process() -> None:
    env = dict(os.environ, **{workarounds.ENV: NAME})
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "workarounds"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"{NAME}  [off]" in proc.stdout


def test_unknown_names_are_errors_listing_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=f"unknown workaround 'nope'; known: .*{NAME}"):
        workarounds.enabled("nope")
    with pytest.raises(ValueError, match=f"known: .*{NAME}"):
        with workarounds.disabled(NAME, "nope"):
            pass
    assert workarounds.state() == ()
    with pytest.raises(ValueError, match=f"known: .*{NAME}"):
        workarounds.parse(f"{NAME},typo")
    monkeypatch.setenv(workarounds.ENV, "typo")
    with pytest.raises(ValueError, match=f"{workarounds.ENV}='typo'.*known: .*{NAME}"):
        workarounds.enabled(NAME)


def test_disabled_nests_and_is_per_thread() -> None:
    seen: list[bool] = []
    with workarounds.disabled(NAME):
        with workarounds.disabled():
            assert not workarounds.enabled(NAME)
        assert not workarounds.enabled(NAME)
        thread = threading.Thread(target=lambda: seen.append(workarounds.enabled(NAME)))
        thread.start()
        thread.join()
    assert seen == [True], "another thread keeps its workarounds on"
    assert workarounds.enabled(NAME)


# --------------------------------------------------------------------------------------------
# The corpus entries that need a workaround off still crash on this wheel (slow: MLIR runs)


def _entries_needing(name: str) -> list[tuple[Path, dict]]:
    found = []
    for path in sorted((ROOT / "corpus").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if name in data["case"]["case"].get("workarounds_off", []) and data["status"] == "open":
            found.append((path, data))
    return found


ENTRIES = _entries_needing(NAME)
IDS = [path.stem for path, _ in ENTRIES]
NEEDLE = "SubViewOp::getDroppedDims"


class StillCrashes(AssertionError):
    """The upstream bug is still there (the expected failure while the wheel has it)."""


def _judge(proc: subprocess.CompletedProcess, what: str) -> None:
    """StillCrashes for the known abort; any other failure is a broken reproducer (a real
    test failure, not the expected one)."""
    if proc.returncode < 0 and NEEDLE in proc.stderr:
        line = next(ln for ln in proc.stderr.splitlines() if NEEDLE in ln)
        raise StillCrashes(f"{what} still aborts: {line.strip()[:300]}")
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}): {proc.stderr[-2000:]}"


_FIXED = (
    "MLIR 22.1.8 asserts in SubViewOp::getDroppedDims under expand-strided-metadata; on the wheel "
    "that fixes it this test fails (XPASS): replay the entry, mark it fixed and remove the "
    "workaround"
)


@pytest.mark.slow
@pytest.mark.skipif(not ENTRIES, reason=f"no open corpus entry needs {NAME} off")
@pytest.mark.xfail(strict=True, raises=StillCrashes, reason=_FIXED)
@pytest.mark.parametrize("path,data", ENTRIES, ids=IDS)
def test_reduced_module_no_longer_crashes(path: Path, data: dict, tmp_path: Path) -> None:
    mlir = data["evidence"]["attribution"]["mlir"]
    assert data["evidence"]["attribution"]["layer"] == "mlir-pass:expand-strided-metadata"
    command = shlex.split(mlir["command"])
    assert command[0] == "mlir-opt" and command[-1] == "min.mlir", command
    assert "expand-strided-metadata" in mlir["command"]
    (tmp_path / "min.mlir").write_text(mlir["reduced_module"])
    assert len([ln for ln in mlir["reduced_module"].splitlines() if ln.strip()]) <= 10
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "tools", *command, "-o", os.devnull],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    _judge(proc, f"{path.name}: {mlir['command']}")


@pytest.mark.slow
@pytest.mark.skipif(not ENTRIES, reason=f"no open corpus entry needs {NAME} off")
@pytest.mark.xfail(strict=True, raises=StillCrashes, reason=_FIXED)
@pytest.mark.parametrize("path,data", ENTRIES, ids=IDS)
def test_python_reproducer_no_longer_crashes(path: Path, data: dict, tmp_path: Path) -> None:
    """The reproducer turns the workaround off itself (the environment here has it on)."""
    assert f"{workarounds.ENV}" in data["reproducer"]
    (tmp_path / "reproducer.py").write_text(data["reproducer"])
    env = {k: v for k, v in os.environ.items() if k != workarounds.ENV}
    proc = subprocess.run(
        [sys.executable, "reproducer.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    _judge(proc, f"{path.name}: python reproducer.py")


def test_a_jitted_function_compiles_again_under_other_workarounds() -> None:
    """The specialization cache keys the workarounds off, as every cache of emitted IR does: a
    function compiled once, then called inside ``disabled(...)``, was served its specialization
    made with them on, so the upstream bug never came back for it."""
    fn = compiler.jit(lambda v: v.max(axis=-1))
    x = -np.abs(np.linspace(1, 2, 900, dtype=np.float32)).reshape(3, 300)
    on = fn.compile(x, target="cpu-vector@O0")
    with workarounds.disabled("unmasked-minmax"):
        off = fn.compile(x, target="cpu-vector@O0")
        assert off is not on and off.artifacts.stages != on.artifacts.stages
        assert fn.compile(x, target="cpu-vector@O0") is off
    assert fn.compile(x, target="cpu-vector@O0") is on
    fn.clear()


@pytest.mark.parametrize("target", ["cpu-loops", "cpu-vector", "cpu", "gpu-emulated"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expm1_and_log1p_call_libm_on_every_cpu_target(target: str, dtype: type) -> None:
    """``expm1-log1p-libm``: near zero, where exp(x) - 1 and log(1 + x) lose every digit, each
    target gives libm's answer (cpu-vector's vectors lane by lane), and only the workaround
    does: turned off, convert-math-to-llvm's expansion is millions of ulps off again."""
    x = np.array([1e-10, -3e-9, 1e-7, -0.0, 0.25, -0.5], dtype)
    want = [np.expm1(x), np.log1p(x)]
    spacing = np.spacing(np.abs(np.concatenate(want)).astype(dtype)).astype(np.float64)

    def worst() -> tuple[float, bool]:
        """The largest error in ulps, and whether every sign (of -0.0 too) is NumPy's."""
        fn = compiler.jit(lambda v: (np.expm1(v), np.log1p(v)))
        got = np.concatenate([np.asarray(g, np.float64) for g in fn(x, target=target)])
        signs = np.array_equal(np.signbit(got), np.signbit(np.concatenate(want)))
        return float(np.max(np.abs(got - np.concatenate(want)) / spacing)), signs

    error, signs = worst()
    assert error <= 1 and signs, (error, signs)
    with workarounds.disabled("expm1-log1p-libm"):
        assert worst()[0] > 1000
