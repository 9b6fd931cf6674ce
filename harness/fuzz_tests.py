"""The fuzz tests of the pytest plugin, importable from the installed package.

``pytest --pyargs harness.fuzz_tests -n auto --fuzz-seconds 300`` is a fuzzing session: one shard
per xdist worker, each with its own seed (listed at the end of the run); a new finding fails its
shard. Without ``--fuzz-seconds`` each shard runs a fixed handful of examples with a temporary
corpus and database. Options and seeds: ``harness.plugin``.

``test_fuzz_hypothesis`` is the same case mix as one ``@given`` test, so HypoFuzz can drive it:
``hypothesis fuzz -- --pyargs harness.fuzz_tests -k test_fuzz_hypothesis``. Each example runs
the compiler in a worker process, so pytest skips it unless ``--fuzz-hypofuzz``.
"""

from __future__ import annotations

import atexit
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings

from .case import Case
from .plugin import HYPOFUZZ_MARK, record_shard, shard_count, worker_name
from .run.runner import Runner
from .session.fuzz import Driver, FuzzOptions
from .session.generate import cases, with_siblings


def test_fuzz(fuzz_shard: int, fuzz_options: FuzzOptions, request: pytest.FixtureRequest) -> None:
    """One shard: the Driver derives its seed from the session seed and the shard index."""
    where = f"shard {fuzz_shard}/{shard_count(request.config)} on {worker_name()}"
    driver = Driver(fuzz_options, index=fuzz_shard)
    record_shard(request, f"{where}: seed {driver.seed}, {','.join(fuzz_options.backends)}")
    start = time.perf_counter()
    try:
        driver.run()
    finally:
        driver.close()
        record_shard(
            request,
            f"{where}: seed {driver.seed}, cases {driver.total.cases}, "
            f"{time.perf_counter() - start:.1f} s, new findings {len(driver.saved)}",
        )
    assert not driver.saved, f"new findings saved to the corpus: {driver.saved}"


_RUNNER: list[Runner] = []


def _runner() -> Runner:
    """One runner (one isolated compiler worker) per process, however the test is driven."""
    if not _RUNNER:
        runner = Runner(None, name=f"hypofuzz-{os.getpid()}")
        atexit.register(runner.close)
        _RUNNER.append(runner)
    return _RUNNER[0]


@getattr(pytest.mark, HYPOFUZZ_MARK)
@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=with_siblings(cases()))
def test_fuzz_hypothesis(pair: tuple[Case, tuple[Case, ...]]) -> None:
    """Every finding fails (HypoFuzz shrinks and keeps it); no fixtures, so HypoFuzz collects it.
    The case's siblings (its program on other values) are judged after it, as a session does."""
    case, siblings = pair
    findings = _runner().evaluate(case).findings
    for sibling in siblings:
        if findings:
            break
        findings = _runner().evaluate(sibling, (), sibling=True).findings
    assert not findings, "\n".join(
        f"{f.oracle}: {f.kind} on {','.join(f.backends)}: {f.detail[:400]}" for f in findings
    )
