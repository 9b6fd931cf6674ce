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
