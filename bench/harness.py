"""Throughput of the harness, measured in one run: cases per second per core on small random
programs across every CPU backend, the harness's own share of the time, and 1 -> 2 workers.

Run: ``python bench/harness.py [--seconds 60]``. Each configuration is a real fuzz session
(generation, write-ahead, isolated compile+run on 4 backends, NumPy/truth/JAX references,
oracles), writing to a scratch corpus.

``python bench/harness.py --scheduler local:2`` compares one local session (one driver) with a
Dask campaign on that scheduler (one shard per worker thread), each driver doing the same fixed
work, alternated ``--repeat`` times: the ratio of cases/s, the CPU per case, the measured cost of
Dask per shard (dispatch, handover, queue puts, the client's time per message) and, from those
figures, a paper estimate of the speedup on 64 workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.session.fuzz import FuzzOptions  # noqa: E402
from harness.session.parent import session  # noqa: E402


def _options(seconds: float, workers: int, relations: bool, corpus: Path) -> FuzzOptions:
    return FuzzOptions(
        seconds=seconds,
        workers=workers,
        seed=1,
        corpus=corpus,
        mix="programs",
        skip_oracles=() if relations else ("metamorphic:",),
        database=None,
    )


def run(seconds: float, workers: int, relations: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return session(_options(seconds, workers, relations, Path(tmp)))


class CpuMeter:
    """CPU seconds used by this process and all its descendants while it is open (sampled
    every half second with psutil, each process counted at its last sample, less what it had
    used when the meter opened): on a loaded machine, cases per CPU second compare
    configurations where cases per second cannot."""

    def __init__(self) -> None:
        import threading

        self.base: dict[tuple[int, float], float] = {}
        self.seen: dict[tuple[int, float], float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _snapshot(self) -> dict[tuple[int, float], float]:
        import psutil

        found = {}
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                times = process.cpu_times()
                found[(process.pid, process.create_time())] = times.user + times.system
            except psutil.Error:
                continue
        return found

    def _sample(self) -> None:
        while not self.done.wait(0.5):
            self.seen.update(self._snapshot())
        self.seen.update(self._snapshot())

    def __enter__(self) -> CpuMeter:
        self.base = self._snapshot()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()

    def seconds(self) -> float:
        return sum(max(0.0, v - self.base.get(k, 0.0)) for k, v in self.seen.items())


def estimate(
    overhead: dict, by_shard: list[dict], workers: int = 64, put_cpu: float | None = None
) -> dict:
    """A paper estimate of a campaign on ``workers`` workers from the measured per-shard
    costs: each worker loses its shard's fixed overhead and its queue puts; the scheduler and
    the client must keep up with every worker's messages. ``put_cpu``: the scheduler's CPU
    seconds per queue put, if measured (else the put's latency, an upper bound)."""
    done = [s["result"] for s in by_shard if s.get("result")]
    seconds = sum(r["session_seconds"] for r in done) / max(len(done), 1)
    cases = sum(r["cases"] for r in done) / max(len(done), 1)
    puts = sum(r.get("relay_puts", 0) for r in done) / max(len(done), 1)
    messages = sum(r.get("messages", 0) for r in done) / max(len(done), 1)
    per_put = overhead.get("relay_seconds_per_put") or 0.0
    fixed = overhead.get("outside_session_seconds") or 0.0
    per_message = overhead.get("client_seconds_per_message") or 0.0
    relay = puts * per_put  # seconds a shard's drivers waited on the queue
    efficiency = seconds / (seconds + fixed) * (1 - relay / max(seconds, 1e-9))
    scheduler = workers * puts / max(seconds, 1e-9) * (put_cpu if put_cpu else per_put)
    client = workers * messages / max(seconds, 1e-9) * per_message
    limit = max(scheduler, client, 1.0)
    return {
        "workers": workers,
        "cases_per_shard_second": cases / max(seconds, 1e-9),
        "efficiency": efficiency,
        "scheduler_load": scheduler,
        "client_load": client,
        "speedup": workers * efficiency / limit,
    }


def _puts(count: int, size: int) -> float:
    """On a worker: ``count`` queue puts of a ``size``-byte batch; seconds per put."""
    from distributed import Queue

    queue = Queue("bench-queue-cost")
    message = json.dumps({"shard": 0, "attempt": "x", "messages": [[0, "ahead", "x" * size]]})
    began = time.perf_counter()
    for _ in range(count):
        queue.put(message)
    return (time.perf_counter() - began) / count


def queue_cost(client, count: int = 1000, size: int = 8000) -> tuple[float, float]:
    """(CPU seconds this process, the scheduler and the client's get, spends per queue put;
    the put's latency seen by the worker), measured with a burst of puts (a local cluster)."""
    import psutil
    from distributed import Queue

    queue = Queue("bench-queue-cost", client=client)
    me = psutil.Process()
    before = sum(me.cpu_times()[:2])
    latency = client.submit(_puts, count, size, pure=False).result()
    taken = 0
    while taken < count:
        taken += len(queue.get(batch=True))
    cpu = (sum(me.cpu_times()[:2]) - before) / count
    queue.close()
    return cpu, latency


def compare(scheduler: str, rounds: int, examples: int, repeat: int) -> None:
    """One local session (one driver) against a campaign on ``scheduler`` (one shard per
    worker thread), every driver doing the same fixed work: ``rounds`` Hypothesis rounds of
    ``examples`` examples from the same seed, so every shard runs the local session's cases
    (and minimizes its findings). A time box, or a seed per shard, would compare the luck of
    the case mix as much as the speed: cases differ a hundredfold in cost, and a finding costs
    a minimization. ``repeat`` alternates the two to even out the machine's load; CPU seconds
    per case (every process, the scheduler and the client included) is the figure load does
    not move."""
    from harness.distributed.client import Campaign, connect

    began = time.perf_counter()
    client, cluster = connect(scheduler)
    started = time.perf_counter() - began
    rows = []
    try:
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                options = dataclasses.replace(
                    _options(3600, 1, True, Path(tmp) / "local"),
                    rounds=rounds,
                    examples_per_round=examples,
                )
                with CpuMeter() as local_cpu:
                    local = session(options)
                options = dataclasses.replace(options, corpus=Path(tmp) / "campaign")
                run = Campaign(options, client, scheduler=scheduler)
                for state in run.shards:  # every shard the local session's work
                    state.shard = dataclasses.replace(state.shard, options=dataclasses.replace(
                        state.shard.options, seed=options.seed))  # fmt: skip
                with CpuMeter() as campaign_cpu:
                    campaign = run.run()
            rows.append((local, local_cpu, campaign, campaign_cpu))
        put_cpu, put_latency = queue_cost(client) if scheduler.startswith("local") else (0, 0)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(f"{'configuration':36} {'cases':>6} {'seconds':>8} {'cases/s':>8} {'CPU s/case':>10}")
    ratios = []
    for local, local_cpu, campaign, campaign_cpu in rows:
        c = campaign["campaign"]
        rate_local = local["stats"]["cases"] / local["seconds"]
        rate = campaign["stats"]["cases"] / campaign["seconds"]
        ratios.append(rate / max(rate_local, 1e-9))
        for name, summary, meter in (
            ("one local session, 1 driver", local, local_cpu),
            (f"campaign on {scheduler}, {c['shards']} shards", campaign, campaign_cpu),
        ):
            cases = summary["stats"]["cases"]
            print(
                f"{name:36} {cases:6d} {summary['seconds']:8.1f} "
                f"{cases / summary['seconds']:8.2f} {meter.seconds() / max(cases, 1):10.3f}"
            )
        for address, w in c["workers"].items():
            print(f"  worker {address:28} {w['cases']:6d}")
        print(f"  ratio {ratios[-1]:.2f}x")
    ratios.sort()
    print(
        f"\nratio: {ratios[len(ratios) // 2]:.2f}x the cases/s of one local session (median of "
        f"{len(ratios)}), {os.cpu_count()} cores"
    )
    local, local_cpu, campaign, campaign_cpu = rows[-1]
    c = campaign["campaign"]
    o = c["overhead"]
    cpu_case = campaign_cpu.seconds() / max(campaign["stats"]["cases"], 1)
    cpu_case_local = local_cpu.seconds() / max(local["stats"]["cases"], 1)
    print(
        f"Dask overhead per shard: {o['outside_session_seconds']:.2f} s outside the session "
        f"(dispatch {o['dispatch_seconds']:.2f} s, handover {o['handover_seconds']:.3f} s); "
        f"{o['relay_puts']} queue puts at {1e3 * (o['relay_seconds_per_put'] or 0):.1f} ms "
        f"({1e3 * (o['relay_seconds_per_case'] or 0):.1f} ms per case); the client "
        f"{1e3 * (o['client_seconds_per_message'] or 0):.2f} ms per message; CPU per case "
        f"{cpu_case:.3f} s vs {cpu_case_local:.3f} s locally (every process, scheduler and "
        f"client included); the local cluster took {started:.1f} s to start (not counted)"
    )
    if put_cpu:
        print(
            f"a burst of 8 kB queue puts: {1e3 * put_cpu:.2f} CPU ms each for the scheduler "
            f"and the client's get (one process here), {1e3 * put_latency:.2f} ms latency"
        )
    e = estimate(o, c["by_shard"], put_cpu=put_cpu or None)
    seconds = sum(r["result"]["session_seconds"] for r in c["by_shard"]) / len(c["by_shard"])
    print(
        f"paper estimate for {e['workers']} workers, {seconds:.0f} s shards: "
        f"{e['speedup']:.0f}x one worker (efficiency {e['efficiency']:.1%} per worker; "
        f"scheduler load {e['scheduler_load']:.0%}, client load {e['client_load']:.0%} of one core)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--scheduler", default="", help="compare with a Dask campaign here")
    parser.add_argument("--rounds", type=int, default=3, help="with --scheduler: work per driver")
    parser.add_argument("--examples", type=int, default=20, help="with --scheduler: per round")
    parser.add_argument("--repeat", type=int, default=3, help="with --scheduler: alternations")
    args = parser.parse_args()
    if args.scheduler:
        compare(args.scheduler, args.rounds, args.examples, args.repeat)
        return
    print(
        f"{'configuration':34} {'cases':>6} {'cases/s':>8} {'per core':>8} "
        f"{'worker %':>9} {'refs %':>7} {'other %':>8}"
    )
    rates = {}
    for workers, relations in ((1, False), (1, True), (2, True)):
        summary = run(args.seconds, workers, relations)
        stats = summary["stats"]
        wall = summary["seconds"] * workers  # process-seconds the drivers had
        cases = stats["cases"]
        worker = stats["seconds_worker"] / wall
        refs = stats["seconds_references"] / wall
        name = f"{workers} worker(s), relations {'on' if relations else 'off'}"
        rate = cases / summary["seconds"]
        rates[(workers, relations)] = rate
        print(
            f"{name:34} {cases:6d} {rate:8.2f} {rate / workers:8.2f} {worker:9.1%} "
            f"{refs:7.1%} {1 - worker - refs:8.1%}",
            flush=True,
        )
    print(
        f"\nscaling 1 -> 2 workers (relations on): "
        f"{rates[(2, True)] / rates[(1, True)]:.2f}x on {os.cpu_count()} cores"
    )
    print("worker %: compile + run in the isolated worker (the subject's time, plus IPC);")
    print("refs %: NumPy, extended-precision truth and jax.jit references;")
    print("other %: generation, write-ahead, oracles, relations' bookkeeping (the overhead).")


if __name__ == "__main__":
    main()
