"""The repository's own Hypothesis profiles (the harness plugin itself loads none).

The plugin (``--fuzz-*`` options, the fuzz shards) comes from the package's ``pytest11`` entry
point: ``pip install -e .`` registers it. ``ci`` (the default here; ``HYPOTHESIS_PROFILE`` picks
another) is derandomized and bounded: the same examples on every run. ``tests/strategies`` keeps
its own ``dev``/``thorough`` profiles.
"""

from __future__ import annotations

import os
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (end-to-end runs of 20 s or more) run first: xdist hands tests out
    in collection order, and the longest collected last (the shrink test, in
    ``tests/strategies``) kept one worker busy after the other had finished. Stable: the rest
    keep their order."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
