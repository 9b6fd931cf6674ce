"""A campaign on Dask: the client splits it into shards, submits each as a Dask task running an
ordinary session, and is the corpus's one writer.

How findings flow: a shard's drivers write to a scratch corpus on their worker and publish every
write (``relay``); the shard batches the messages onto a Dask queue held by the scheduler; this
client takes them off, deduplicates each entry by signature against the real corpus
(``merge.CorpusWriter``) and writes it atomically, as a one-machine session does. A write-ahead
record is acknowledged to its driver only once it is on the queue, so when a worker or a node
dies mid-case the client has the case: it keeps a copy under ``corpus/.pending`` (owned by this
process, so a later session re-runs it should the client die too) and hands it to the shard's
next attempt, which Dask schedules on another worker and which re-runs it first.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ..pending import PENDING, claim, identity, release
from ..report.data import Throughput
from ..run.runner import Stats
from ..session.fuzz import FuzzOptions
from ..session.progress import Progress
from .merge import CorpusWriter, Offered
from .shard import Shard, events_queue, run_shard, stop_event
from .stream import CampaignStream, ShardState

#: Shard seeds are this far apart (a shard's drivers use seed + 7919 * driver).
SEED_STRIDE = 1_000_003
#: How long a campaign waits for a cluster's first worker (pass --shards for one still growing).
WORKER_WAIT_SECONDS = 600.0
#: How long the client waits when the queue is empty.
POLL_SECONDS = 0.2
#: Past the campaign's time box, how long shards may take to stop before they are abandoned.
LATE_SECONDS = 120.0
#: After a stop request (a signal, --stop-on-first), how long shards get to stop by themselves.
STOP_WAIT_SECONDS = 30.0


#: Settings for the workers of a campaign: no statistical profiler (it samples the running
#: task 100 times a second), monitors once a second rather than 50 times.
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
}


def connect(scheduler: str) -> tuple[Any, Any]:
    """(Dask client, cluster or None) for ``scheduler``: ``local:W`` starts a ``LocalCluster``
    of W single-threaded worker processes here (W defaults to the core count); anything else
    is a scheduler address such as ``tcp://HOST:8786``. Workers must allow child processes: a
    local cluster is started with ``distributed.worker.daemon: False``."""
    import dask
    from distributed import Client, LocalCluster

    # Set globally, not in a context: the nanny reads it again when it restarts a dead worker.
    dask.config.set({"distributed.worker.daemon": False})
    if scheduler == "local" or scheduler.startswith("local:"):
        count = scheduler.partition(":")[2]
        workers = int(count) if count else max(1, os.cpu_count() or 1)
        if workers < 1:
            raise ValueError(f"{scheduler!r}: a local cluster needs at least one worker")
        # Dask's profiler and monitors cost 12% of a core on an idle 2-worker cluster; the
        # dashboard needs them, a campaign does not (2% of a core with these settings).
        dask.config.set(QUIET_DASK)
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        return Client(cluster), cluster
    return Client(scheduler), None


def plan(
    options: FuzzOptions, shards: int, slots: int, split_backends: bool = False
) -> list[Shard]:
    """The shards of a campaign: each its own seed; when there are more shards than worker
    threads they run in waves, each a slice of the time box; with ``split_backends`` each
    gets a round-robin subset of the backends (cases then cost fewer compilations)."""
    if shards < 1:
        raise ValueError("a campaign needs at least one shard")
    slots = max(1, slots)
    waves = math.ceil(shards / slots)
    base = options.seed if options.seed is not None else random.randrange(2**31)
    backends = tuple(options.backends)
    groups = [backends]
    if split_backends and shards > 1 and len(backends) > 1:
        count = min(shards, len(backends))
        groups = [backends[g::count] for g in range(count)]
    return [
        Shard(
            index=i,
            options=dataclasses.replace(
                options,
                seed=base + SEED_STRIDE * i,
                seconds=options.seconds / waves,
                backends=groups[i % len(groups)],
                relay=True,
            ),
            wave=i // slots,
        )
        for i in range(shards)
    ]


class Campaign(CampaignStream):
    """One campaign: its shards, their live state, the corpus writer."""

    def __init__(
        self,
        options: FuzzOptions,
        client: Any,
        shards: int | None = None,
        split_backends: bool = False,
        scheduler: str = "",
    ) -> None:
        self.options = options
        self.client = client
        self.scheduler = scheduler
        if not client.nthreads():  # a cluster still scaling up: wait for its first worker
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        self.slots = sum(client.nthreads().values()) or 1
        self.plan = plan(options, shards or self.slots, self.slots, split_backends)
        self.name = f"campaign-{os.getpid()}-{os.urandom(4).hex()}"
        self.writer = CorpusWriter(options.corpus)
        self.pending = Path(options.corpus) / PENDING
        self.start = time.perf_counter()
        self.deadline = self.start + options.seconds
        me = identity()
        self.shards = [
            ShardState(s, 0.0, self.pending / f"{me}--{self.name}-shard{s.index}.json")
            for s in self.plan
        ]
        self.attempt_worker: dict[str, str] = {}  # attempt -> worker address
        self.resolved: dict[str, Offered] = {}  # scratch file name -> what the writer did
        self.stats = Stats()
        self.workers: dict[str, dict[str, Any]] = {}
        self.findings: list[dict[str, Any]] = []
        self.regressions: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.ambiguities: list[str] = []
        self.timeline: list[dict[str, Any]] = []
        self.first: float | None = None
        self.rerun = 0
        self.messages = 0
        self.busy = 0.0  # seconds this client spent handling messages
        self.claimed: list[Path] = []
        self.stopping = False
        self.stopped_at = 0.0
        self.interrupted: int | None = None
        self.abandon = False  # a second signal: do not wait for the shards
        self.throughput = Throughput(options.seconds)  # the report's cases over time

    # -- the run -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask every shard to stop (they check about once a second)."""
        if not self.stopping:
            from distributed import Event

            self.stopping = True
            self.stopped_at = time.perf_counter()
            Event(stop_event(self.name), client=self.client).set()

    def _claim_orphans(self) -> None:
        """Records of earlier sessions whose owner died: handed to shard 0, which re-runs them
        first, as a one-machine session's first driver does."""
        for path, record in claim(self.options.corpus):
            if record is None:
                path.rename(path.with_name("unreadable--" + path.name))
                continue
            from strategies.model import canonical

            self.claimed.append(path)
            self.shards[0].inherited.append(canonical(record))

    def run(self, on_event: Any = None) -> dict[str, Any]:
        """Run every shard to its end; returns the campaign's summary (a session's, plus
        ``campaign``: workers, shards, rescheduling, overhead)."""
        from distributed import Queue

        self.start = time.perf_counter()
        self.deadline = self.start + self.options.seconds
        self._claim_orphans()
        events = Queue(events_queue(self.name), client=self.client)
        futures = {}
        for state in self.shards:
            state.submitted = time.perf_counter()
            future = self.client.submit(
                run_shard, state.shard, self.name, key=f"{self.name}-shard{state.shard.index}"
            )
            futures[future] = state
        print(
            f"campaign {self.name}: {len(self.shards)} shard(s) on {self.scheduler} "
            f"({self.slots} worker thread(s)); live corpus writer: {self.writer.directory}",
            file=sys.stderr,
            flush=True,
        )
        previous = self._signals()
        try:
            self._loop(events, futures, on_event)
        finally:
            self._restore(previous)
            self._write_mirrors()
            for future in futures:
                if not future.done():
                    future.cancel()
            try:
                events.close()
            except Exception:  # noqa: BLE001 - the scheduler may be gone already
                pass
        return self.summary()

    def _loop(self, events: Any, futures: dict[Any, ShardState], on_event: Any) -> None:
        left = dict(futures)
        while True:
            received = self._receive(events)
            for kind in received:
                if on_event:
                    on_event(kind, self.stats, self.findings)
            self._write_mirrors()
            for future, state in list(left.items()):
                if future.done():
                    self._finished(future, state)
                    del left[future]
            if on_event:
                on_event("tick", self.stats, self.findings)
            now = time.perf_counter()
            if self.interrupted is not None:
                self.stop()
            if not left:
                for kind in self._receive(events, wait=False):  # what came before the results
                    if on_event:
                        on_event(kind, self.stats, self.findings)
                self._write_mirrors()
                return
            late = now > self.deadline + LATE_SECONDS + self.options.minimize_seconds
            if late:
                self.stop()
            if self.abandon or (self.stopping and now - self.stopped_at > STOP_WAIT_SECONDS):
                for state in left.values():
                    state.state = "abandoned"
                self.errors.append(
                    f"{len(left)} shard(s) did not stop: abandoned (their cases in flight stay "
                    f"in {self.pending} for the next session)"
                )
                return

    def _receive(self, events: Any, wait: bool = True) -> list[str]:
        """Take what is on the queue (or wait a moment if it is empty)."""
        kinds: list[str] = []
        batches = events.get(batch=True)  # never blocks (a timed-out get logs an error)
        if not batches and wait:
            time.sleep(POLL_SECONDS)
        for message in batches:
            try:
                kinds.extend(self.handle(message))
            except (ValueError, KeyError, IndexError, TypeError) as error:
                self.errors.append(f"unreadable message from a shard: {error!r}")
        return kinds

    def _finished(self, future: Any, state: ShardState) -> None:
        try:
            result = future.result()
        except Exception as error:  # noqa: BLE001 - e.g. KilledWorker: reported, never fatal
            state.state = "failed"
            self.errors.append(
                f"shard {state.shard.index} failed: {type(error).__name__}: {error} (its case "
                f"in flight, if any, stays in {self.pending} for the next session)"
            )
            return
        state.result = result
        state.state = "done"
        state.result["client_seconds"] = time.perf_counter() - state.submitted
        if state.shard.index == 0 and not result.get("interrupted"):
            for path in self.claimed:
                release(path)  # shard 0 re-ran them
            self.claimed = []

    def _signals(self) -> dict[int, Any]:
        def handle(number: int, frame: Any) -> None:
            if self.interrupted is not None:
                self.abandon = True  # a second signal: do not wait for the shards
            self.interrupted = self.interrupted or number

        previous = {}
        for number in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[number] = signal.signal(number, handle)
            except ValueError:  # not the main thread: the caller handles signals
                pass
        return previous

    @staticmethod
    def _restore(previous: dict[int, Any]) -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    # -- reporting ---------------------------------------------------------------------------
    def live(self) -> dict[str, Any]:
        """For the progress line: cases/s per worker, shards running, rescheduled."""
        now = time.perf_counter()
        rates = {
            address: w["cases"] / max(now - w["since"], 1e-9) for address, w in self.workers.items()
        }
        return {
            "rates": rates,
            "running": sum(1 for s in self.shards if s.state == "running"),
            "shards": len(self.shards),
            "rescheduled": self.rescheduled,
        }

    @property
    def rescheduled(self) -> int:
        return sum(max(0, len(s.attempts) - 1) for s in self.shards)

    def summary(self) -> dict[str, Any]:
        wall = time.perf_counter() - self.start
        options = {
            k: (str(v) if isinstance(v, Path) else v) for k, v in self.options.__dict__.items()
        }
        options["workers"] = self.slots
        options["scheduler"] = self.scheduler
        left = [str(s.mirror) for s in self.shards if s.mirror.exists()]
        return {
            "seconds": wall,
            "stats": self.stats.to_dict(),
            "findings": self.findings,
            "regressions": self.regressions,
            "harness_errors": self.errors,
            "ambiguities": self.ambiguities,
            "first_finding_seconds": self.first,
            "timeline": self.timeline,
            "throughput": self.throughput.to_dict(),
            "interrupted": signal.Signals(self.interrupted).name if self.interrupted else None,
            "options": options,
            "python": sys.version.split()[0],
            "campaign": {
                "name": self.name,
                "scheduler": self.scheduler,
                "worker_threads": self.slots,
                "shards": len(self.shards),
                "rescheduled": self.rescheduled,
                "in_flight_rerun": self.rerun,
                "in_flight_left": left,
                "workers": {
                    address: {
                        "pid": w["pid"],
                        "host": w["host"],
                        "cases": w["cases"],
                        "cases_per_second": round(w["cases"] / max(wall, 1e-9), 3),
                    }
                    for address, w in self.workers.items()
                },
                "findings_by_shard": {str(s.shard.index): s.findings for s in self.shards},
                "by_shard": [self._shard_summary(s) for s in self.shards],
                "overhead": self.overhead(),
            },
        }

    def _shard_summary(self, state: ShardState) -> dict[str, Any]:
        options = state.shard.options
        return {
            "index": state.shard.index,
            "seed": options.seed,
            "backends": list(options.backends),
            "seconds": options.seconds,
            "state": state.state,
            "attempts": state.attempts,
            "cases": state.cases,
            "findings": state.findings,
            "entries": state.entries,
            "duplicates": state.duplicates,
            "result": state.result,
        }

    def overhead(self) -> dict[str, Any]:
        """What running on Dask costs per shard, measured: the time outside the session
        (dispatch, imports, handover, scratch corpus, result), the time inside it spent
        putting messages on the queue (the drivers wait for their write-aheads' puts), and
        this client's time per message."""
        done = [s.result for s in self.shards if s.result and s.result.get("session_seconds")]
        dispatch = [a["dispatch_seconds"] for s in self.shards for a in s.attempts[:1]]
        outside = [r["client_seconds"] - r["session_seconds"] for r in done]
        puts = sum(r.get("relay_puts", 0) for r in done)
        put_seconds = sum(r.get("relay_seconds", 0.0) for r in done)
        cases = sum(r.get("cases", 0) for r in done)

        def mean(values: list[float]) -> float | None:
            return round(sum(values) / len(values), 4) if values else None

        return {
            "dispatch_seconds": mean(dispatch),
            "handover_seconds": mean([r["handover_seconds"] for r in done]),
            "outside_session_seconds": mean(outside),
            "relay_puts": puts,
            "relay_seconds_per_put": round(put_seconds / puts, 5) if puts else None,
            "relay_seconds_per_case": round(put_seconds / cases, 5) if cases else None,
            "client_seconds_per_message": (
                round(self.busy / self.messages, 6) if self.messages else None
            ),
            "messages": self.messages,
        }


def campaign(
    options: FuzzOptions,
    scheduler: str,
    shards: int | None = None,
    split_backends: bool = False,
    on_event: Any = None,
) -> dict[str, Any]:
    """Run a campaign on ``scheduler`` (``local:W`` or ``tcp://HOST:8786``); returns its
    summary. A local cluster is started here and closed at the end."""
    client, cluster = connect(scheduler)
    try:
        run = Campaign(options, client, shards, split_backends, scheduler)
        if isinstance(on_event, CampaignProgress):
            on_event.campaign = run
        return run.run(on_event)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class CampaignProgress(Progress):
    """The live line of a campaign: the session's, plus cases/s per worker and the shards."""

    campaign: Campaign | None = None

    def __call__(self, kind: str, stats: Any, findings: list[dict[str, Any]]) -> None:
        now = time.perf_counter()
        if kind == "finding" or self.campaign is None:
            super().__call__(kind, stats, findings)
            return
        if now - self.last < 1.0:
            return
        self.last = now
        live = self.campaign.live()
        elapsed = now - self.start
        kinds = " ".join(f"{k}:{v}" for k, v in sorted(stats.kinds.items())) or "none"
        rates = " ".join(f"{r:.2f}" for r in live["rates"].values()) or "-"
        line = (
            f"[{elapsed:6.1f}s/{self.seconds:.0f}s] {stats.cases} cases "
            f"({stats.cases / max(elapsed, 1e-9):.2f}/s; per worker {rates}) | findings {kinds} "
            f"| corpus +{sum(1 for f in findings if f['new'])} | shards {live['running']}/"
            f"{live['shards']} running, {live['rescheduled']} rescheduled"
        )
        if self.quiet:
            if int(elapsed) % 10 == 0:
                print(line, file=sys.stderr, flush=True)
        else:
            print("\r" + line[:200].ljust(200), end="", file=sys.stderr, flush=True)


def campaign_table(summary: dict[str, Any]) -> str:
    """The campaign's lines under the session's summary table."""
    c = summary.get("campaign")
    if not c:
        return ""
    lines = [
        f"{'campaign':28} {c['shards']} shard(s) on {c['scheduler']}, "
        f"{c['worker_threads']} worker thread(s), {c['rescheduled']} rescheduled, "
        f"{c['in_flight_rerun']} case(s) in flight re-run",
    ]
    for address, w in c["workers"].items():
        lines.append(f"  worker {address:26} {w['cases']:6d} cases ({w['cases_per_second']:.2f}/s)")
    lines.append(
        f"{'findings by shard':28} "
        + ", ".join(f"{k}: {v}" for k, v in c["findings_by_shard"].items())
    )
    o = c["overhead"]
    if o.get("outside_session_seconds") is not None:
        lines.append(
            f"{'Dask overhead per shard':28} {o['outside_session_seconds']:.2f} s outside the "
            f"session (dispatch {o['dispatch_seconds']:.2f} s, handover "
            f"{o['handover_seconds']:.3f} s), {1000 * (o['relay_seconds_per_put'] or 0):.1f} "
            f"ms per queue put"
        )
    if c["in_flight_left"]:
        lines.append(f"{'cases left in flight':28} {len(c['in_flight_left'])} (next session)")
    return "\n".join(lines)


__all__ = ["Campaign", "CampaignProgress", "campaign", "campaign_table", "connect", "plan"]
