"""pytest integration: fuzzing options, Hypothesis profiles, and the shared-database setup.

Registered by the repository's ``conftest.py``. Profiles (select with ``--hypothesis-profile``):

- ``ci`` (default): derandomized, bounded, fast — the same examples on every run;
- ``fuzz``: many examples, no deadline, the shared example database.

Options: ``--fuzz-seconds N`` (time-box the fuzz test; 0 runs ``--fuzz-examples`` examples),
``--fuzz-backends a,b``, ``--fuzz-examples N``, ``--fuzz-corpus DIR``, ``--fuzz-seed S``.
Under ``pytest -n auto`` the fuzz test is split into one shard per worker, each with its own
printed seed; every shard writes its findings to the corpus (safe for concurrent writers).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=30,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    max_examples=10_000,
    deadline=None,
    database=DirectoryBasedExampleDatabase(str(ROOT / ".hypothesis" / "examples")),
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzz", "compiler fuzzing")
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
    group.addoption("--fuzz-seed", type=int, default=None, help="base seed of the shards")
    group.addoption(
        "--fuzz-shards",
        type=int,
        default=0,
        help="parallel shards (default: the xdist worker count, or 1)",
    )


def _shards(config: pytest.Config) -> int:
    explicit = config.getoption("--fuzz-shards")
    if explicit:
        return explicit
    workers = getattr(config.option, "numprocesses", None)
    if workers in (None, 0):
        return 1
    if workers == "auto" or workers == "logical":
        return max(1, os.cpu_count() or 1)
    return int(workers)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fuzz_shard" in metafunc.fixturenames:
        metafunc.parametrize("fuzz_shard", range(_shards(metafunc.config)))


@pytest.fixture
def fuzz_options(request: pytest.FixtureRequest):
    """FuzzOptions built from the command line (one shard's view)."""
    from .case import CPU_BACKENDS
    from .session.fuzz import FuzzOptions

    config = request.config
    backends = tuple(b for b in config.getoption("--fuzz-backends").split(",") if b)
    seed = config.getoption("--fuzz-seed")
    return FuzzOptions(
        seconds=config.getoption("--fuzz-seconds"),
        backends=backends or CPU_BACKENDS,
        seed=seed if seed is not None else 20261129,
        corpus=Path(config.getoption("--fuzz-corpus") or config.rootpath / "corpus"),
        examples_per_round=config.getoption("--fuzz-examples"),
        database=config.rootpath / ".hypothesis" / "examples",
        shrink_seconds=20.0,
        minimize_seconds=40.0,
    )
