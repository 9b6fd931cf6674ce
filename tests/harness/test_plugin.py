"""The pytest plugin as a user of the installed package meets it: registered by its entry point,
it leaves a project's own Hypothesis tests alone, shards under xdist from one printed session
seed, and keeps corpus and database under the invoking project's rootdir.

Runs that must see Hypothesis' untouched defaults or start xdist workers use a subprocess (this
repository's conftest loads its own ``ci`` profile in this process); the rest run in-process."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import distribution
from pathlib import Path

import pytest

import harness

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"mlir-tensor-fuzz: session seed (\d+)")
SHARD = re.compile(r"^shard (\d+)/(\d+) on (\S+): seed (\d+)", re.MULTILINE)
_CI_VARIABLES = (
    "CI",
    "__TOX_ENVIRONMENT_VARIABLE_ORIGINAL_CI",
    "TF_BUILD",
    "bamboo.buildKey",
    "BUILDKITE",
    "CIRCLECI",
    "CIRRUS_CI",
    "CODEBUILD_BUILD_ID",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "HEROKU_TEST_RUN_ID",
    "TEAMCITY_VERSION",
)


@pytest.fixture
def user(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project in a scratch rootdir, in an environment that is not an xdist worker, not
    a CI (Hypothesis would load its ``ci`` profile) and has no profile of this repository."""
    for name in (
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "HYPOTHESIS_PROFILE",
        *_CI_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\n")  # the rootdir is this scratch project
    return pytester


def seeds_of(output: str) -> list[tuple[int, int, str, int]]:
    """(shard, shards, worker, seed) for each shard line of the terminal summary."""
    return [(int(s), int(n), w, int(seed)) for s, n, w, seed in SHARD.findall(output)]


def test_entry_points_registered() -> None:
    """Installing the package (``pip install -e .`` too) registers the plugin and the CLI."""
    entry_points = distribution("mlir-tensor-fuzz").entry_points
    found = {(e.group, e.name): e.value for e in entry_points}
    assert (
        found.get(("pytest11", "mlir_tensor_fuzz")) == "harness.plugin"
    ), f"no pytest11 entry point ({found}): reinstall with `pip install -e .`"
    assert found.get(("console_scripts", "mlir-tensor-fuzz")) == "harness.cli:main"


def test_user_hypothesis_settings_untouched(user: pytest.Pytester) -> None:
    """(a) A project's own Hypothesis tests keep Hypothesis' defaults and their own profiles,
    with the plugin loaded and asked for (``--fuzz-*`` options, its fixtures used)."""
    user.makeconftest("""
        from hypothesis import settings
        settings.register_profile("fuzz", max_examples=3)  # the project's own "fuzz" wins
        """)
    user.makepyfile(test_user="""
        from hypothesis import given, settings, strategies as st

        def check_defaults():
            current = settings()
            assert current.max_examples == 100
            assert current.derandomize is False
            assert current.database is not None
            assert settings.get_current_profile_name() == "default"

        def test_defaults():
            check_defaults()
            assert settings.get_profile("fuzz").max_examples == 3

        @given(st.integers())
        def test_property(x):
            check_defaults()

        def test_fixtures(fuzz_shard, fuzz_options):
            assert (fuzz_shard, fuzz_options.seed) == (0, 7)
        """)
    result = user.runpytest_subprocess(
        "-p", "no:cacheprovider", "--fuzz-seed", "7", "--fuzz-seconds", "5", timeout=240
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*plugins:*mlir-tensor-fuzz*"])


def test_default_paths_under_rootdir(user: pytest.Pytester) -> None:
    """(c) Fuzzing writes corpus and database under the invoking project's rootdir, never where
    the package is installed; the fixed-examples run uses temporary ones."""
    user.makepyfile(test_paths=f"""
        import sysconfig
        from pathlib import Path

        PACKAGE = Path({str(Path(harness.__file__).parent)!r})
        SITE = Path(sysconfig.get_paths()["purelib"])

        def test_paths(fuzz_options, request, tmp_path):
            root = request.config.rootpath
            if fuzz_options.seconds > 0:
                assert fuzz_options.corpus == root / "corpus"
                assert fuzz_options.database == root / ".hypothesis" / "examples"
            else:
                assert fuzz_options.corpus == tmp_path / "corpus"
                assert fuzz_options.database == tmp_path / "examples"
                assert fuzz_options.rounds == 1
            for path in (fuzz_options.corpus, fuzz_options.database):
                assert not path.is_relative_to(PACKAGE) and not path.is_relative_to(SITE)
        """)
    user.runpytest("-p", "no:cacheprovider", "--fuzz-seconds", "5").assert_outcomes(passed=1)
    user.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert sysconfig.get_paths()["purelib"]  # the check above compared against a real path


def test_header_prints_session_seed(user: pytest.Pytester) -> None:
    """(d) A random session seed in the header when fuzzing, the pinned one with --fuzz-seed,
    the fixed one for the fixed-examples run; the fixture sees the same seed."""
    user.makepyfile(test_seed="""
        def test_seed(fuzz_options, request):
            print("SEED", fuzz_options.seed)
        """)
    seen = []
    for _ in range(2):
        result = user.runpytest("-p", "no:cacheprovider", "-s", "--fuzz-seconds", "5")
        result.stdout.fnmatch_lines(["mlir-tensor-fuzz: session seed * (--fuzz-seed to pin it)"])
        header = int(HEADER.search(result.stdout.str()).group(1))
        assert f"SEED {header}" in result.stdout.str()
        seen.append(header)
    assert seen[0] != seen[1], "the session seed is random by default"
    pinned = user.runpytest(
        "-p", "no:cacheprovider", "-s", "--fuzz-seconds", "5", "--fuzz-seed", "42"
    )
    pinned.stdout.fnmatch_lines(["mlir-tensor-fuzz: session seed 42 (pinned by --fuzz-seed)"])
    assert "SEED 42" in pinned.stdout.str()
    fixed = user.runpytest("-p", "no:cacheprovider")
    fixed.stdout.fnmatch_lines(["mlir-tensor-fuzz: session seed 20261129 (fixed examples*"])


def test_xdist_workers_share_session_seed(user: pytest.Pytester) -> None:
    """(b, fast) Under -n 2: one shard per worker, the controller's session seed in both (passed
    through workerinput), each shard's line in the summary without -rP or -s."""
    user.makepyfile(test_shards="""
        from harness.plugin import record_shard, shard_count, worker_name

        def test_shard(fuzz_shard, fuzz_options, request):
            seed = fuzz_options.seed + 1000 * fuzz_shard
            shards = shard_count(request.config)
            record_shard(request, f"shard {fuzz_shard}/{shards} on {worker_name()}: seed {seed}")
        """)
    result = user.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--fuzz-seconds", "5", timeout=240
    )
    result.assert_outcomes(passed=2)
    output = result.stdout.str()
    session = int(HEADER.search(output).group(1))
    shards = sorted(seeds_of(output))
    assert [(s, n, seed) for s, n, _, seed in shards] == [(0, 2, session), (1, 2, session + 1000)]
    assert {worker for _, _, worker, _ in shards} == {"gw0", "gw1"}


def test_hypofuzz_target(user: pytest.Pytester) -> None:
    """The @given target is skipped by a plain run, and left unmarked for HypoFuzz, which
    collects with --collect-only and runs the test itself (it ignores skipped tests)."""
    result = user.runpytest(
        "-p", "no:cacheprovider", "--pyargs", "harness.fuzz_tests", "-k", "test_fuzz_hypothesis"
    )
    result.assert_outcomes(skipped=1)
    recorder = user.inline_run(
        "-p", "no:cacheprovider", "--collect-only", "--pyargs", "harness.fuzz_tests"
    )
    (finish,) = recorder.getcalls("pytest_collection_finish")
    items = {item.name: item for item in finish.session.items}
    assert items["test_fuzz_hypothesis"].get_closest_marker("skip") is None
    assert "test_fuzz[shard0]" in items


@pytest.mark.slow
def test_fuzz_shards_under_xdist(user: pytest.Pytester) -> None:
    """(b) The packaged fuzz test under -n 2: two shards, two workers, two printed seeds."""
    result = user.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "harness.fuzz_tests",
        "-k",
        "test_fuzz and not hypothesis",
        "-n",
        "2",
        "--fuzz-seconds",
        "3",
        "--fuzz-examples",
        "2",
        timeout=900,
    )
    result.assert_outcomes(passed=2)
    shards = seeds_of(result.stdout.str())
    assert sorted((s, n) for s, n, _, _ in shards) == [(0, 2), (1, 2)]
    assert len({seed for *_, seed in shards}) == 2
    assert {worker for _, _, worker, _ in shards} == {"gw0", "gw1"}


def _files(folder: Path) -> set[str]:
    """Everything under ``folder`` but bytecode caches (pytest may cache rewritten modules)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.long
@pytest.mark.slow
def test_installed_wheel_end_to_end(tmp_path: Path) -> None:
    """The wheel, installed non-editable into a fresh venv, runs its fuzz tests from an empty
    directory: two shards with different seeds, nothing written where it is installed."""
    source = tmp_path / "source"
    skip_everywhere = shutil.ignore_patterns(".*", "*.egg-info", "__pycache__")

    def ignore(folder: str, names: list[str]) -> set[str]:  # the checkout's outputs, not its code
        top = {"corpus", "report", "build", "dist"} if Path(folder) == ROOT else set()
        return set(skip_everywhere(folder, names)) | (top & set(names))

    shutil.copytree(ROOT, source, ignore=ignore)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "HYPOTHESIS_")) and k not in _CI_VARIABLES
    }

    def run(*command: str | Path, cwd: Path = tmp_path) -> str:
        done = subprocess.run(
            [str(c) for c in command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        return done.stdout

    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("mlir_tensor_fuzz-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--no-deps", wheel)
    site = Path(
        run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    location = run(python, "-c", "import harness.plugin; print(harness.plugin.__file__)").strip()
    assert Path(location).is_relative_to(site), location
    before = _files(venv)
    empty = tmp_path / "project"
    empty.mkdir()
    output = run(
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "harness.fuzz_tests",
        "-n",
        "2",
        "--fuzz-seconds",
        "10",
        cwd=empty,
    )
    shards = seeds_of(output)
    assert sorted((s, n) for s, n, _, _ in shards) == [(0, 2), (1, 2)], output
    assert len({seed for *_, seed in shards}) == 2, output
    assert "2 passed, 1 skipped" in output, output
    assert _files(venv) == before, "the run wrote where the package is installed"
    assert f"rootdir: {empty}" in output and (empty / "corpus").is_dir(), output
