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


def _without_local_constants() -> None:
    """Keep Hypothesis from drawing the constants written in local source files, so that a
    derandomized test draws the same examples whatever the tree around it holds. Hypothesis
    (6.155 and 6.170 alike) draws a share of its integers and floats (5% of draws) from the
    literals of the local modules loaded at the time (``providers._get_local_constants``): which
    ones depends on the tests an xdist worker ran before, and on the layout (a tox env installs
    the packages, so only the tests are local there). So adding a test file changed the examples
    of unrelated ones: CI's ``test_view_items_give_an_op_of_each_kind_only_strided_views`` went
    from passing to 25 of 32 focused cases on a view (80% asked), and after the toy-primitive
    test ``test_focus_items_give_int32_operands_constants_they_cannot_represent`` got 0 of 28
    int32 ends (10% asked); alone, each passed. Fuzz sessions keep the feature."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another Hypothesis layout: nothing to turn off
        return
    empty = getattr(providers, "_local_constants", None)
    if callable(getattr(providers, "_get_local_constants", None)) and empty is not None:
        if not len(empty):  # nothing drawn yet: the empty pool Hypothesis starts from
            providers._get_local_constants = lambda: empty


_without_local_constants()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (end-to-end runs of 20 s or more) run first: xdist hands tests out
    in collection order, and the longest collected last (the shrink test, in
    ``tests/strategies``) kept one worker busy after the other had finished. Stable: the rest
    keep their order."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
