"""Crashes and hangs in a worker become outcomes; the worker is replaced and goes on."""

from __future__ import annotations

from harness.run.isolation import Worker


def echo(task):
    if isinstance(task, dict) and "fault" in task:
        from harness.run.isolation import fault

        fault(task["fault"])
    if task == "raise":
        raise KeyError("boom")
    return task


def test_segfault_abort_exit_and_hang_are_reported_and_survived() -> None:
    with Worker(echo, timeout=20) as worker:
        assert worker.run(1).value == 1
        crash = worker.run({"fault": "segfault"})
        assert crash.status == "crash" and "SIGSEGV" in crash.detail
        abort = worker.run({"fault": "abort"})
        assert abort.status == "crash" and "SIGABRT" in abort.detail
        exited = worker.run({"fault": "exit"})
        assert exited.status == "crash" and "status 3" in exited.detail
        hang = worker.run({"fault": "hang"}, timeout=2)
        assert hang.status == "hang"
        error = worker.run("raise")
        assert error.status == "error" and "KeyError" in error.detail
        assert worker.run(2).value == 2


def test_a_signal_to_the_whole_group_stops_a_task_it_is_no_crash(monkeypatch) -> None:
    """A batch system's time limit (or ``systemctl stop``, ``docker stop``) sends SIGTERM to
    every process: the worker dies of it, and its driver's own handler may run a moment after
    the death is seen; the task is stopped, not a crash the corpus would keep. SIGTERM to the
    worker alone is reported as what it is."""
    import os
    import signal
    import threading

    from harness.run import isolation

    monkeypatch.setattr(isolation, "_STOP", {"requested": False})
    monkeypatch.setattr(isolation, "STOP_GRACE", 0.3, raising=False)
    with Worker(echo, timeout=30) as worker:
        assert worker.run(1).status == "ok"
        pid = worker.process.pid

        def group_signal() -> None:
            os.kill(pid, signal.SIGTERM)
            threading.Timer(0.1, isolation.request_stop).start()  # the driver's handler, later

        threading.Timer(0.5, group_signal).start()
        stopped = worker.run({"fault": "hang"})
        assert stopped.status == "stopped", (stopped.status, stopped.detail)
        monkeypatch.setattr(isolation, "_STOP", {"requested": False})
        assert worker.run(1).status == "ok"  # a fresh worker
        pid = worker.process.pid
        threading.Timer(0.5, lambda: os.kill(pid, signal.SIGTERM)).start()
        alone = worker.run({"fault": "hang"})
        assert alone.status == "crash" and "SIGTERM" in alone.detail, alone


def test_a_signal_while_the_worker_starts_is_held_then_ignored(capfd) -> None:
    """A ^C to the process group while a spawned worker is still importing neither kills it
    nor prints a KeyboardInterrupt traceback on the session's stderr: the worker is started
    with SIGINT blocked and unblocks it once it ignores it."""
    import os
    import signal

    with Worker(echo, timeout=60) as worker:
        pid = worker.process.pid
        for _ in range(5):  # while it imports: the parent has just spawned it
            os.kill(pid, signal.SIGINT)
        assert worker.run(1).value == 1
        assert worker.process.pid == pid, "the worker died of the signal and was restarted"
        os.kill(pid, signal.SIGINT)  # and once it serves: ignored
        assert worker.run(2).value == 2 and worker.process.pid == pid
    err = capfd.readouterr().err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err[-2000:]


def test_the_stage_marker_names_the_last_stage_started(tmp_path) -> None:
    """A crashed worker's evidence names the stage it was in: the marker file is rewritten in
    place for each stage (an open and close per stage were 3% of a worker's time)."""
    from harness.run.runner import _stage_of
    from harness.run.worker import _Marker

    path = str(tmp_path / "marker")
    marker = _Marker(path)
    marker("cpu-blas-unfused@O0", "bufferized")
    marker("cpu-loops", "llvm")
    marker.close()
    assert _stage_of(path) == " [stage cpu-loops llvm]"


def test_a_crash_is_rerun_backend_by_backend_verifying_after_every_pass() -> None:
    """A multi-backend task that crashed runs again one backend at a time, each verifying the
    IR after every pass (as the crash's ``mlir-opt`` reproducer does), and the write-ahead
    record keeps that; only the backend that crashes alone is blamed."""
    import numpy as np

    from harness.case import Case
    from harness.run.isolation import Outcome
    from harness.run.runner import Runner
    from harness.run.task import Task
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((3,), "float32"))), [np.ones(3, "f4")], ())
    seen: list[Task] = []

    class Crashing:
        stderr_path = "/nonexistent/stderr"

        def run(self, task: Task) -> Outcome:
            seen.append(task)
            crashes = len(task.backends) > 1 or task.backends == ("cpu-blas",)
            return Outcome("crash", detail="killed by SIGABRT") if crashes else Outcome("ok")

        def close(self) -> None:
            pass

    with Runner(None, use_jax=False) as runner:
        runner.worker.close()
        runner.worker = Crashing()
        task = Task(case, ("cpu-loops", "cpu-blas"))
        findings = runner._failed(task, runner.run_task(task))
    assert [(t.backends, t.verify_each) for t in seen] == [
        (("cpu-loops", "cpu-blas"), False), (("cpu-loops",), True), (("cpu-blas",), True)
    ]  # fmt: skip
    assert [(f.kind, f.backends) for f in findings] == [("crash", ("cpu-blas",))]
    record = seen[1].to_dict()
    assert record["verify_each"] is True and Task.from_dict(record).verify_each
    assert (
        "verify_each" not in seen[0].to_dict() and not Task.from_dict(seen[0].to_dict()).verify_each
    )


def test_a_triage_probe_counts_as_one_and_adds_no_finding_to_the_sessions_figures() -> None:
    """The attributor's ``+poison-checks`` variants abort on purpose and the minimizer runs
    candidates: as cases they showed a session whose one finding was a mismatch as having
    crashes, and more cases than it judged. A probe counts as a triage run, its time kept."""
    import numpy as np

    from harness.case import Case
    from harness.run.isolation import Outcome
    from harness.run.runner import Runner
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    case = Case(b.build(b.node("exp", b.input((3,), "float32"))), [np.ones(3, "f4")], ())

    class Aborting:
        stderr_path = "/nonexistent/stderr"
        starts = 1

        def restarts_next(self) -> bool:
            return False

        def run(self, task):
            return Outcome("crash", detail="killed by SIGABRT", seconds=0.25)

        def close(self) -> None:
            pass

    with Runner(None, use_jax=False) as runner:
        runner.worker.close()
        runner.worker = Aborting()
        judged = runner.evaluate(case.on(("cpu-loops@O0",)), probe=True)
        assert [f.kind for f in judged.findings] == ["crash"]  # the probe's own verdict stands
        stats = runner.stats
        assert (stats.cases, stats.probes, stats.kinds, stats.findings) == (0, 1, {}, 0)
        assert stats.seconds_worker > 0
        runner.evaluate(case.on(("cpu-loops@O0",)))
        assert (runner.stats.cases, runner.stats.kinds) == (1, {"crash": 1})


def test_each_worker_writes_its_profile_where_the_session_profiles(tmp_path, monkeypatch) -> None:
    """With ``HARNESS_PROFILE_DIR`` set, a worker's cProfile statistics (its tasks' time, where
    80% of a case goes) are on disk after each task, readable while it still runs."""
    import pstats

    monkeypatch.setenv("HARNESS_PROFILE_DIR", str(tmp_path))
    with Worker(echo, timeout=30) as worker:
        assert worker.run("hello").value == "hello"
        (written,) = tmp_path.glob("worker-*.prof")
        stats = pstats.Stats(str(written))
        assert any(name == "echo" for (_, _, name) in stats.stats)
