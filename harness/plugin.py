"""pytest plugin of the fuzzing harness (entry point ``pytest11: mlir_tensor_fuzz``).

It is loaded in every pytest run where the package is installed, so it stays out of the way: it
adds the ``--fuzz-*`` options and the fixtures of its own fuzz tests (``harness.fuzz_tests``),
registers a ``fuzz`` Hypothesis profile only if none is registered, and never loads a profile:
a project's own Hypothesis tests keep their settings.

Sharding, the way pytest-xdist and pytest-randomly users expect it: the controller draws one
session seed (``--fuzz-seed`` pins it; the fixed-examples run, without ``--fuzz-seconds``, keeps
a fixed one so it stays a repeatable test), prints it in the header and passes it to every xdist
worker. ``fuzz_shard`` is parametrized over one shard per worker (``PYTEST_XDIST_WORKER_COUNT``,
or ``--fuzz-shards``); each shard derives its own seed from the session seed and its index, and
the terminal summary lists every shard's worker, seed and counts (no ``-rP`` needed).

Options: ``--fuzz-seconds N`` (time box per shard; 0 runs ``--fuzz-examples`` examples),
``--fuzz-backends a,b``, ``--fuzz-examples N``, ``--fuzz-corpus DIR``, ``--fuzz-seed S``,
``--fuzz-shards N``, ``--fuzz-hypofuzz`` (run the HypoFuzz target under pytest too).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hypothesis import settings as Settings

    from .session.fuzz import FuzzOptions

FIXED_SEED = 20261129  # the fixed-examples run: the same examples every time, like a unit test
PROPERTY = "mlir-tensor-fuzz"  # user_properties key of a shard's line in the terminal summary
HYPOFUZZ_MARK = "mlir_tensor_fuzz_hypofuzz"
_WORKERINPUT_KEY = "mlir_tensor_fuzz_seed"
_SEED = pytest.StashKey[int]()
_PINNED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz", "compiler fuzzing (mlir-tensor-fuzz)")
    group.addoption(
        "--fuzz-seconds",
        type=float,
        default=0.0,
        help="time-box the fuzz test to N seconds per shard (0: fixed examples)",
    )
    group.addoption(
        "--fuzz-examples", type=int, default=8, help="examples per shard when --fuzz-seconds is 0"
    )
    group.addoption(
        "--fuzz-backends", default="", help="comma-separated targets (default: every CPU target)"
    )
    group.addoption(
        "--fuzz-corpus",
        default=None,
        help="where findings are written (default: corpus/ under the rootdir; the fixed-examples "
        "run without --fuzz-seconds uses a temporary one)",
    )
    group.addoption(
        "--fuzz-seed",
        type=int,
        default=None,
        help="session seed the shard seeds derive from (default: random, printed in the header)",
    )
    group.addoption(
        "--fuzz-shards",
        type=int,
        default=0,
        help="shards (default: one per xdist worker, or 1)",
    )
    group.addoption(
        "--fuzz-hypofuzz",
        action="store_true",
        default=False,
        help="also run the HypoFuzz target (test_fuzz_hypothesis) as an ordinary test",
    )


# -- Hypothesis profiles --------------------------------------------------------------------------
def fuzz_profile(root: Path) -> Settings:
    """``--hypothesis-profile fuzz``: many examples, no deadline, the database under ``root``."""
    from hypothesis import HealthCheck, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    return settings(
        max_examples=10_000,
        deadline=None,
        database=DirectoryBasedExampleDatabase(str(root / ".hypothesis" / "examples")),
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


def register_profiles(root: Path) -> None:
    """Register ``fuzz`` unless a project registered its own; never load it (that is the
    project's choice, or ``--hypothesis-profile``'s)."""
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    try:
        settings.get_profile("fuzz")
    except InvalidArgument:
        settings.register_profile("fuzz", fuzz_profile(root))


# -- the session seed -----------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own plugin loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{HYPOFUZZ_MARK}: a HypoFuzz target, skipped by pytest unless --fuzz-hypofuzz",
    )
    register_profiles(config.rootpath)
    pinned = config.getoption("--fuzz-seed")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and _WORKERINPUT_KEY in workerinput:
        seed = int(workerinput[_WORKERINPUT_KEY])  # an xdist worker: the controller's seed
    elif pinned is not None:
        seed = pinned
    elif config.getoption("--fuzz-seconds") <= 0:
        seed = FIXED_SEED
    else:
        seed = secrets.randbelow(2**31)  # leaves the `random` module's state alone
    config.stash[_SEED] = seed
    config.stash[_PINNED] = pinned is not None
    if workerinput is None:
        config.pluginmanager.register(_ShardSummary(config), "mlir-tensor-fuzz-summary")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker fuzzes from the same session seed."""
    node.workerinput[_WORKERINPUT_KEY] = node.config.stash[_SEED]


def session_seed(config: pytest.Config) -> int:
    """The seed every shard of this run derives its own from."""
    return config.stash[_SEED]


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[_SEED]
    if config.stash[_PINNED]:
        return f"mlir-tensor-fuzz: session seed {seed} (pinned by --fuzz-seed)"
    if config.getoption("--fuzz-seconds") <= 0:
        return f"mlir-tensor-fuzz: session seed {seed} (fixed examples; --fuzz-seed to change it)"
    return f"mlir-tensor-fuzz: session seed {seed} (--fuzz-seed to pin it)"


# -- shards ---------------------------------------------------------------------------------------
def xdist_worker(config: pytest.Config) -> tuple[str, int] | None:
    """(worker id, worker count) in an xdist worker; None elsewhere (the controller, a plain run,
    or a pytest nested in a worker, which inherits the environment but is no worker)."""
    if not hasattr(config, "workerinput"):
        return None
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return name, count


def shard_count(config: pytest.Config) -> int:
    explicit = config.getoption("--fuzz-shards")
    if explicit:
        return explicit
    worker = xdist_worker(config)
    return max(1, worker[1]) if worker else 1


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fuzz_shard" not in metafunc.fixturenames:
        return
    worker = xdist_worker(metafunc.config)
    params = []
    for shard in range(shard_count(metafunc.config)):
        # A group per shard: `--dist loadgroup` deals the shards out to different workers (the
        # default `load` does when they are most of the run; among many tests it may pair them).
        marks = [pytest.mark.xdist_group(f"mlir-tensor-fuzz-shard{shard}")] if worker else []
        params.append(pytest.param(shard, id=f"shard{shard}", marks=marks))
    metafunc.parametrize("fuzz_shard", params)


@pytest.fixture
def fuzz_shard(request: pytest.FixtureRequest) -> int:
    """This test's shard index (parametrized by ``pytest_generate_tests``)."""
    return int(request.param)


@pytest.fixture
def fuzz_options(request: pytest.FixtureRequest) -> FuzzOptions:
    """FuzzOptions from the command line, seeded with the session seed (``Driver(options,
    index=shard)`` derives the shard's seed). Corpus and database sit under the invoking
    project's rootdir; the fixed-examples run uses temporary ones (it is a test, not a session)."""
    from .case import CPU_BACKENDS
    from .session.fuzz import FuzzOptions

    config = request.config
    seconds = config.getoption("--fuzz-seconds")
    backends = tuple(b.strip() for b in config.getoption("--fuzz-backends").split(",") if b.strip())
    corpus = config.getoption("--fuzz-corpus")
    if seconds > 0:
        corpus_path = Path(corpus) if corpus else config.rootpath / "corpus"
        database = config.rootpath / ".hypothesis" / "examples"
    else:
        scratch = request.getfixturevalue("tmp_path")
        corpus_path = Path(corpus) if corpus else scratch / "corpus"
        database = scratch / "examples"
    return FuzzOptions(
        seconds=seconds,
        backends=backends or CPU_BACKENDS,
        seed=config.stash[_SEED],
        corpus=corpus_path,
        examples_per_round=config.getoption("--fuzz-examples"),
        rounds=None if seconds > 0 else 1,
        database=database,
        shrink_seconds=20.0,
        minimize_seconds=40.0,
    )


def record_shard(request: pytest.FixtureRequest, line: str) -> None:
    """Show ``line`` for this shard in the terminal summary (through the test report, so an
    xdist worker's shard reaches the controller); a later call replaces the earlier line."""
    properties = request.node.user_properties
    properties[:] = [p for p in properties if p[0] != PROPERTY]
    properties.append((PROPERTY, line))
    print(line)


def worker_name() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "") or "main"


# -- skipping the HypoFuzz target, reporting the shards -------------------------------------------
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # HypoFuzz collects with --collect-only and then drives the test itself: leave it unmarked.
    if config.getoption("--fuzz-hypofuzz") or config.option.collectonly:
        return
    skip = pytest.mark.skip(
        reason="HypoFuzz target: `hypothesis fuzz -- --pyargs harness.fuzz_tests`, "
        "or --fuzz-hypofuzz to run it here"
    )
    for item in items:
        if item.get_closest_marker(HYPOFUZZ_MARK) is not None:
            item.add_marker(skip)


class _ShardSummary:
    """Collects the shards' lines from the test reports (the controller's, under xdist) and
    prints them after the run, whatever the capture mode."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.lines: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY:
                self.lines[report.nodeid] = str(value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lines:
            return
        seed = self.config.stash[_SEED]
        terminalreporter.write_sep("-", "mlir-tensor-fuzz shards")
        terminalreporter.write_line(
            f"session seed {seed} (--fuzz-seed {seed} with as many shards reruns them)"
        )
        for nodeid in sorted(self.lines, key=lambda n: (len(n), n)):  # shard2 before shard10
            terminalreporter.write_line(self.lines[nodeid])
