"""The repository's slow-tier run of the packaged fuzz test (``harness.fuzz_tests``).

``pytest tests/harness/test_fuzz_session.py --fuzz-seconds 300 -n auto`` is a fuzzing session,
one shard per worker; without ``--fuzz-seconds`` each shard runs a fixed handful of examples with
a temporary corpus and database. The shards' seeds are listed at the end of the run."""

from __future__ import annotations

import pytest

from harness import fuzz_tests
from harness.session.fuzz import FuzzOptions


@pytest.mark.slow
def test_fuzz(fuzz_shard: int, fuzz_options: FuzzOptions, request: pytest.FixtureRequest) -> None:
    fuzz_tests.test_fuzz(fuzz_shard, fuzz_options, request)
