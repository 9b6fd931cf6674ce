"""The CLI explains itself: an argument error is one line that says what is valid (exit 2, no
traceback), help shows defaults and an example, ``--version`` answers, and ``backends`` lists
every backend with whether it runs here and why not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler import pipelines
from harness.case import CPU_BACKENDS
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line an argument error prints (after checking exit 2 and nothing else)."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2, (argv, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m harness"), err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--seconds", "-5"], "positive number of seconds"),
        (["--seconds", "nan"], "positive number of seconds"),
        (["--seconds", "soon"], "positive number of seconds"),
        (["--max-nodes", "0"], "whole number >= 1"),
        (["--workers", "0"], "'auto'"),
        (["--shrink-seconds", "-1"], ">= 0"),
        (["--backends", ""], "no backend"),
    ],
)
def test_bad_numbers_are_one_line(capsys, argv: list[str], says: str) -> None:
    line = usage_error(capsys, "fuzz", *argv)
    assert f"argument {argv[0]}" in line and says in line, line


def test_an_unknown_backend_lists_the_known_ones(capsys) -> None:
    from compiler import backends

    line = usage_error(capsys, "fuzz", "--backends", "cpu-loops,gpu")
    assert "unknown target 'gpu'" in line
    for name in backends.names():
        assert name in line, name
    assert "@O" in line and "python -m harness backends" in line


def test_an_unavailable_backend_says_why(capsys) -> None:
    from compiler import backends

    class Absent:
        name = "toy-absent"
        description = "never here"

        def unavailable(self) -> str:
            return "no toy hardware"

    backends.register(Absent())
    try:
        line = usage_error(capsys, "fuzz", "--backends", "toy-absent")
    finally:
        backends.unregister("toy-absent")
    assert "toy-absent is unavailable here: no toy hardware" in line


def test_an_unknown_mix_lists_the_mixes(capsys) -> None:
    line = usage_error(capsys, "fuzz", "--mix", "everything")
    assert "'all'" in line and "'programs'" in line


def test_an_unknown_oracle_lists_the_oracles(capsys) -> None:
    from harness.oracles import ORACLES

    line = usage_error(capsys, "fuzz", "--skip-oracles", "metamorphic:,nope")
    assert "unknown oracle 'nope'" in line
    for name in ORACLES:
        assert name in line, name  # the optional ones to skip, the primary ones as always run
    assert "primary oracle 'differential'" in usage_error(
        capsys, "fuzz", "--skip-oracles", "differential"
    )


def test_other_usage_errors_are_one_line(capsys) -> None:
    assert "invalid choice: 'fuz'" in usage_error(capsys, "fuz")
    assert "required: COMMAND" in usage_error(capsys)
    assert "unrecognized arguments: --bogus" in usage_error(capsys, "replay", "--bogus")
    assert "unknown mutation 'nope'" in usage_error(capsys, "selftest", "--only", "nope")
    assert "'md'" in usage_error(capsys, "export", "x.json", "--format", "pdf")
    assert main(["replay", "--reopen", "nowhere"]) == 2
    assert capsys.readouterr().err == "python -m harness replay: error: --reopen needs --update\n"


def test_no_traceback_end_to_end() -> None:
    """As a user runs it: exit 2, one line, and no session started."""
    for argv in (["--max-nodes", "0"], ["--seconds", "-5"]):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "fuzz", *argv],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == ""


def test_a_compiler_that_does_not_import_is_named_not_blamed_on_the_harness(tmp_path) -> None:
    """A compiler failing while it is imported stopped ``python -m harness`` with a traceback
    through the harness's own imports, and exit 1 (the status for findings). Now: exit 3, one
    message naming the compiler's file and line (relative, no machine path) and a command that
    shows it again; the corpus is not touched."""
    from harness.loading import COMPILER_DOES_NOT_IMPORT
    from harness.selftest import copy_compiler, scratch_environment

    scratch = copy_compiler(tmp_path / "src")
    pipelines_py = scratch / "compiler" / "pipelines.py"
    text = pipelines_py.read_text()
    # An optimization level's parser inverted: every backend's name is refused as the
    # registry is built, after compiler.pipelines itself imported.
    assert text.count("    if not level:\n") == 1
    pipelines_py.write_text(text.replace("    if not level:\n", "    if level:\n"))
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "fuzz", "--seconds", "5", "--corpus",
         str(tmp_path / "corpus"), "--report", ""],
        cwd=tmp_path, env=scratch_environment(scratch), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == COMPILER_DOES_NOT_IMPORT, proc.stderr
    assert "Traceback" not in proc.stderr and str(tmp_path) not in proc.stderr, proc.stderr
    assert "the compiler under test does not import" in proc.stderr
    assert "raised at compiler/pipelines.py:" in proc.stderr and "in split_level" in proc.stderr
    assert 'reproduce: python -c "import compiler.backends"' in proc.stderr
    assert not (tmp_path / "corpus").exists()
    # The unmutated compiler starts as before.
    ok = subprocess.run(
        [sys.executable, "-m", "harness", "--version"], cwd=tmp_path, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_help_shows_defaults_and_an_example(capsys) -> None:
    top = help_of(capsys)
    assert "examples:" in top and "python -m harness fuzz --seconds" in top
    for command in ("fuzz", "replay", "backends", "selftest", "recover", "report"):
        assert command in top
    fuzz = " ".join(help_of(capsys, "fuzz").split())
    for default in (
        "(default: 60.0)",
        "(default: 6)",
        "(default: all)",
        "(default: corpus)",
        "(default: " + ",".join(CPU_BACKENDS) + ")",
    ):
        assert default in fuzz, default
    assert "example: python -m harness fuzz" in fuzz
    replay = " ".join(help_of(capsys, "replay").split())
    for word in ("still-open", "fixed-now", "regressed", "not-run", "unreadable", "--junit-xml"):
        assert word in replay, word
    assert "python -m harness replay corpus --junit-xml" in replay
    assert "(default: 60.0)" in " ".join(help_of(capsys, "selftest").split())
    assert "(default: report)" in " ".join(help_of(capsys, "report").split())


def test_version(capsys) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert metadata.version("mlir-tensor-fuzz") in out and "Python" in out


def test_backends_lists_every_backend_and_why_not(capsys) -> None:
    from compiler import backends

    class Absent:
        name = "toy-absent"
        description = "never here"

        def unavailable(self) -> str:
            return "no toy hardware"

    class Broken(Absent):
        name = "toy-broken"

        def unavailable(self) -> str:
            raise OSError("probe failed")

    for backend in (Absent(), Broken()):
        backends.register(backend)
    try:
        assert main(["backends"]) == 0
        described = backends.describe()
    finally:
        backends.unregister("toy-absent")
        backends.unregister("toy-broken")
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in lines if line and not line[0].isspace()}
    for d in described:
        expected = "no" if d["unavailable"] else "partly" if d["limits"] else "yes"
        assert rows[d["name"]] == expected, (d, rows)
    assert rows["cpu-loops"] == "yes" and rows["toy-absent"] == "no"
    text = "\n".join(lines)
    assert "why: no toy hardware" in text
    assert "why: unavailable() raised OSError: probe failed" in text
    assert f"aliases: cpu = {pipelines.ALIASES['cpu']}" in text
