"""The repository's own Hypothesis profiles (the harness plugin itself loads none).

The plugin (``--fuzz-*`` options, the fuzz shards) comes from the package's ``pytest11`` entry
point: ``pip install -e .`` registers it. ``ci`` (the default here; ``HYPOTHESIS_PROFILE`` picks
another) is derandomized and bounded: the same examples on every run. ``tests/strategies`` keeps
its own ``dev``/``thorough`` profiles.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from harness.plugin import register_profiles

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=30,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
register_profiles(Path(__file__).resolve().parent)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _import_every_module() -> None:
    """Import every module of the packages under test before any test runs, so that a
    derandomized test draws the same examples whatever ran before it. Hypothesis draws a share
    of its integers and floats from the constants written in the local modules loaded when it
    draws (``hypothesis.internal.conjecture.providers._get_local_constants``): a test's examples
    depended on which tests had imported what before it in its xdist worker. CI saw 25 of 32
    focused cases read a view where the test asks 80%, and after the toy-primitive test (its
    runner imports ``harness.run.runner``) 0 of 28 focused int32 cases held an end of int32
    where it asks 10%; alone, each passed. A module that cannot load here (an optional extra
    missing) is left out in every process alike."""
    for package in ("compiler", "strategies", "harness"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if info.name.rpartition(".")[2] == "__main__":
                continue
            try:
                importlib.import_module(info.name)
            except ImportError:
                continue


_import_every_module()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (end-to-end runs of 20 s or more) run first: xdist hands tests out
    in collection order, and the longest collected last (the shrink test, in
    ``tests/strategies``) kept one worker busy after the other had finished. Stable: the rest
    keep their order."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
