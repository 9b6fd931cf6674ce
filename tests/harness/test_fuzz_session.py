"""The fuzz test: one shard per xdist worker, seeds printed; new findings fail the test.

``pytest tests/harness/test_fuzz_session.py --fuzz-seconds 300 -n auto`` is a fuzzing session;
without ``--fuzz-seconds`` each shard runs a fixed, derandomized handful of examples."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.session.fuzz import Driver


@pytest.mark.slow
def test_fuzz(fuzz_shard: int, fuzz_options, tmp_path, request) -> None:
    options = replace(
        fuzz_options,
        seed=fuzz_options.seed + fuzz_shard,
        rounds=None if fuzz_options.seconds > 0 else 1,
    )
    if fuzz_options.seconds <= 0 and not request.config.getoption("--fuzz-corpus"):
        # The fixed-examples run is a test: it never writes the repository's corpus or database.
        options = replace(options, corpus=tmp_path / "corpus", database=tmp_path / "examples")
    print(f"fuzz shard {fuzz_shard}: seed {options.seed}, backends {','.join(options.backends)}")
    driver = Driver(options, index=fuzz_shard)
    try:
        driver.run()
    finally:
        driver.close()
    stats = driver.total
    print(f"fuzz shard {fuzz_shard}: {stats.cases} cases in this shard")
    assert not driver.saved, f"new findings saved to the corpus: {driver.saved}"
