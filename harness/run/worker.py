"""What the isolated worker process does with a task: compile and run, nothing else.

It knows backends only through ``compiler.backends`` and knows nothing about references or
oracles. Before each compiler stage it writes a stage marker (``<backend> <stage>``) to the task's
marker file, so a crash names the backend and stage it happened in.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..case import instrumented_backend
from ..coverage import stage_cells
from .task import BackendResult, Task, TaskResult


def _classify(error: BaseException) -> str:
    from compiler import CompilerError, UnsupportedFeature

    if isinstance(error, UnsupportedFeature):
        return "unsupported"
    if isinstance(error, CompilerError):
        return "compiler-error"
    if isinstance(error, (ValueError, TypeError, IndexError, OverflowError)):
        return "rejected"
    return "internal-error"


class _Marker:
    """Writes the stage about to run to a file (no fsync: it must survive the process, not the
    machine). The file stays open for the task and is rewritten in place: an open and a close
    per stage were 3% of a worker's time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)

    def __call__(self, backend: str, stage: str) -> None:
        data = f"{backend} {stage}\n".encode("ascii", "replace")
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))

    def close(self) -> None:
        os.close(self.fd)


def failure(backend: str, error: BaseException) -> BackendResult:
    import compiler

    result = BackendResult(
        backend,
        _classify(error),
        error_type=type(error).__name__,
        error_classes=error_classes(error),
        message=str(error)[:4000],
    )
    if result.status == "internal-error":  # where in the compiler's Python it was raised
        result.message = result.message[:3800] + _raised_at(error)
    if isinstance(error, compiler.CompilerError):
        result.stage, result.module, result.pipeline = (
            error.stage,
            error.module_text,
            error.pipeline,
        )
    return result


def error_classes(error: BaseException) -> tuple[str, ...]:
    """The names of ``error``'s class and of its bases, most derived first, less ``Exception``
    and above: what a caller's ``except`` clause can catch it as (a compiler whose InvalidIndex
    was a ValueError only still printed the name NumPy's IndexError was matched by)."""
    roots = (object, BaseException, Exception)
    return tuple(c.__name__ for c in type(error).__mro__ if c not in roots)


def _raised_at(error: BaseException) -> str:
    """`` (at compiler/FILE:LINE in FUNCTION)``: the innermost frame of the compiler package
    that ``error`` passed through, or ""."""
    import traceback

    import compiler

    root = os.path.dirname(os.path.abspath(compiler.__file__))
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(root + os.sep):
            where = os.path.join("compiler", os.path.relpath(path, root))
            return f" (at {where}:{frame.lineno} in {frame.name})"
    return ""


def _refused_by_tracing(fn: Any, inputs: list[np.ndarray]) -> bool:
    """Whether tracing alone raises ``UnsupportedFeature`` (the frontend's or the primitive
    table's limitation, shared by every backend) rather than one backend's compile or run."""
    from compiler import UnsupportedFeature

    try:
        fn.trace(*inputs)
    except UnsupportedFeature:
        return True
    except Exception:  # noqa: BLE001 - another failure is not a limitation of tracing
        return False
    return False


def _perturbed(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Other inputs of the same types (for the aliasing check)."""
    out = []
    for a in inputs:
        if a.dtype.kind == "f":
            out.append((a * 0.5 + 1).astype(a.dtype))
        elif a.dtype.kind == "b":
            out.append(~a)
        else:
            out.append(a.copy())  # int32 ids must stay in range: same values, other buffer
    return out


def configured_backend(backends: tuple[str, ...], recompile: str) -> str:
    """The backend of a repeat-checked task that also runs ``other_configuration``: its first
    cpu-vector target (whose planner reads the workarounds a process survives turning off, so
    only its stages differ past the module as built, where every cache keys the text anyway),
    else the recompiled one. On the recompiled backend alone (one of five) a held-out plant in
    the persistent cache's key went unseen."""
    from compiler.pipelines import parse_variant

    def plain_vector(name: str) -> bool:  # no stage prefix, no triage suffix
        base, stage, _, _, suffix = parse_variant(name)
        return base == "cpu-vector" and stage is None and not suffix

    vector = [b for b in backends if plain_vector(b)]
    return vector[0] if vector else recompile


def _repeat_checks(
    fn: Any, inputs: list[np.ndarray], backend: str, first: Any, result: BackendResult,
    recompile: bool = True, mark: Any = None, snapshot: np.ndarray | None = None,
    configured: str = "",
) -> None:  # fmt: skip
    """Call again, with other inputs, and (``recompile``) after recompiling: the same bits each
    time, no retrace, and every output array its own (a backend that reuses its output buffers
    fails here). ``snapshot``: ``first``'s values, copied when it was returned."""
    mark = mark or (lambda backend, step: None)
    mark(backend, "repeat")
    snapshot = np.array(first, copy=True) if snapshot is None else snapshot
    traces = fn.traces
    again = fn(*inputs, target=backend)
    again_copy = np.array(again, copy=True)
    result.reused = fn.traces == traces
    other = fn(*_perturbed(inputs), target=backend)
    recompiled = again_copy
    if recompile:
        fn.clear()
        from compiler import driver

        with driver.fresh():  # a real recompile: every stage and the JIT run again
            recompiled = np.array(fn(*inputs, target=backend), copy=True)
        reloaded = through_the_persistent_cache(fn, inputs, backend, _persistent_directory(), mark)
        if reloaded is not None:
            # NaN as NaN (``same_bits``): a kernel loaded from the cache gave +nan for log of a
            # negative where the one compiled in process gave NumPy's -nan (finite values of
            # log, exp, sin, tanh, cbrt agree; which log the loaded object binds is unknown)
            result.persisted = same_bits(reloaded.output, snapshot)
            if result.persisted and reloaded.twin is not None:
                result.persisted = same_bits(reloaded.twin, snapshot)
                result.persisted_twin = reloaded.swapped if not result.persisted else ()
        result.successor = after_another_function(fn, inputs, backend, mark)
        result.concurrent = concurrent_calls(fn, inputs, backend, mark)
    if configured:
        result.configured = other_configuration(
            fn, inputs, backend, _persistent_directory(), mark, probe=configured == "probe"
        )
    arrays = [np.asarray(first), np.asarray(again), np.asarray(other)]
    shared = any(np.shares_memory(arrays[i], arrays[j]) for i in range(3) for j in range(i + 1, 3))
    unchanged = np.asarray(first).tobytes() == snapshot.tobytes()
    result.independent = not shared and unchanged
    result.deterministic = (
        again_copy.tobytes() == snapshot.tobytes() and recompiled.tobytes() == snapshot.tobytes()
    )


_PERSISTENT: list[str] = []


#: The prefix of a worker's persistent cache directory, followed by its owner
#: (``pending.identity``: host, pid and start time) and ``--``.
_CACHE_PREFIX = "mlir-tensor-fuzz-cache-"


def _persistent_directory() -> str:
    """This worker's persistent compilation cache (one for its life, so that a key two programs
    share would serve one the other's kernel), removed when the worker exits; those of workers
    that died without exiting (killed by a crash, a timeout or a signal) go when the next one
    makes its own (``pending.alive``, as for write-ahead records: a reused pid or an unreaped
    process is no owner)."""
    if not _PERSISTENT:
        import atexit
        import glob
        import shutil
        import tempfile

        from ..pending import alive, identity

        for stale in glob.glob(os.path.join(tempfile.gettempdir(), _CACHE_PREFIX + "*--*")):
            owner = os.path.basename(stale)[len(_CACHE_PREFIX) :].split("--", 1)[0]
            if not alive(owner):
                shutil.rmtree(stale, ignore_errors=True)
        made = tempfile.mkdtemp(prefix=f"{_CACHE_PREFIX}{identity()}--")
        _PERSISTENT.append(made)
        atexit.register(shutil.rmtree, made, True)
    return _PERSISTENT[0]


class Persisted(NamedTuple):
    """What kernels loaded back from a persistent cache returned (``through_the_persistent_cache``):
    the program's, and its twin's (``swapped``: two same-typed arguments exchanged, called on
    the exchanged inputs, so owing the same bits), or None where no two arguments share a type."""

    output: np.ndarray
    twin: np.ndarray | None = None
    swapped: tuple[int, ...] = ()


def _swapped_twin(fn: Any, inputs: list[np.ndarray]) -> tuple[Any, list[np.ndarray], tuple] | None:
    """``fn``'s function with its first two arguments of one shape and dtype exchanged, jitted,
    with the inputs exchanged to match (the same values owed, bit for bit), and the pair; None
    if no two inputs share a type. Its module differs from ``fn``'s only in which argument
    feeds which operand: a persistent cache whose key missed that (SSA names erased, say)
    serves it the first program's kernel, wrong wherever the program is not symmetric."""
    import compiler

    same = [
        (i, j)
        for i in range(len(inputs))
        for j in range(i + 1, len(inputs))
        if inputs[i].shape == inputs[j].shape and inputs[i].dtype == inputs[j].dtype
    ]
    if not same or not callable(getattr(fn, "fn", None)):
        return None
    i, j = same[0]
    order = list(range(len(inputs)))
    order[i], order[j] = j, i  # an involution: the twin's argument k is the program's order[k]
    inner = fn.fn

    def twin(*args: Any) -> Any:
        return inner(*(args[k] for k in order))

    return compiler.jit(twin), [inputs[k] for k in order], (i, j)


def through_the_persistent_cache(
    fn: Any, inputs: list[np.ndarray], backend: str, directory: str, mark: Any = None
) -> Persisted | None:
    """The output of ``backend``'s kernel for ``inputs`` as a second process would get it with
    ``COMPILER_CACHE_DIR=directory``: compiled, stored (``compiler.persist``), then loaded back
    from disk; then the same for its twin with two same-typed arguments exchanged
    (``_swapped_twin``), through the same cache: a key that two programs share is otherwise
    met only when a worker's life happens to hold both. None for a backend that stores nothing
    (not one of our CPU targets with our runtime; no linker here). Outside instrumentation,
    which never uses the cache. ``mark`` hears "persist" before each load and call (a crash
    there is replayed with the determinism oracle on: ``replay.STEP_ORACLES``). ``fn``'s
    specializations are dropped."""
    from compiler import backends, persist
    from compiler.runtime import instrumented

    mark = mark or (lambda backend, step: None)
    target = backends.get(backend)
    if not isinstance(target, backends.MlirCpuBackend) or target.runtime != "ours":
        return None
    previous = persist.set_cache_dir(directory)
    try:
        with instrumented(False):
            output = _stored_and_loaded(fn, inputs, backend, mark)
            if output is None:
                return None  # not stored: nothing to compare
            twin = _swapped_twin(fn, inputs)
            if twin is None:
                return Persisted(output)
            twin_fn, swapped_inputs, pair = twin
            return Persisted(
                output, _stored_and_loaded(twin_fn, swapped_inputs, backend, mark), pair
            )
    finally:
        persist.set_cache_dir(previous)


#: The start of the determinism oracle's detail where a cache served a compile made under
#: other workarounds (``other_configuration``); the layer follows it, in brackets.
CONFIGURATION = "a compile under other workarounds was served"


#: The share of the configurations' checks (``other_configuration``) that fall back on the
#: canned probe where the case's program tells nothing: in 150 default cases only 3 programs
#: had stages the survivable workarounds change past the module as built, so a persistent
#: cache's key that missed the workarounds went unseen by 60 s sessions; the probe costs about
#: half a second.
PROBE_SHARE = 0.25
#: The canned probe's rows: longer than cpu-vector's 256-element whole-row reductions, not a
#: multiple of a chunk, so that ``unmasked-minmax`` changes its plan.
PROBE_ROW = 300


def _configuration_probe(x: Any) -> Any:
    """A float32 max over rows of ``PROBE_ROW``: cpu-vector plans it by the workarounds (a
    masked chunk, or chunks that divide the row), so every cache of compiled code must tell the
    configurations apart on it."""
    import compiler

    return compiler.xp.max(x, axis=-1)


def probe_inputs() -> list[np.ndarray]:
    """The canned probe's input: negative rows (where the masked reduction's wrong neutral
    shows)."""
    rows = np.random.default_rng(0).standard_normal((2, PROBE_ROW)).astype(np.float32)
    return [-np.abs(rows) - 1]


def other_configuration(
    fn: Any, inputs: list[np.ndarray], backend: str, directory: str, mark: Any = None,
    probe: bool = False,
) -> str:  # fmt: skip
    """``_other_configuration`` on ``fn``'s program; where it tells nothing and ``probe``, on
    the canned probe (``_configuration_probe``): a cache's key is the same whatever the
    program, so the probe stands for the case (its story says so)."""
    import compiler

    story = _other_configuration(fn, inputs, backend, directory, mark)
    if story is not None or not probe:
        return story or ""
    story = _other_configuration(
        compiler.jit(_configuration_probe), probe_inputs(), backend, directory, mark
    )
    if not story:
        return ""
    return story.replace(
        f"{CONFIGURATION} [", f"{CONFIGURATION} (on the canned probe, a float32 max over rows "
        f"of {PROBE_ROW}: harness.run.worker.probe_inputs) [", 1
    )  # fmt: skip


def _other_configuration(
    fn: Any, inputs: list[np.ndarray], backend: str, directory: str, mark: Any = None
) -> str | None:
    """ "" where every cache of compiled code keys the workarounds off, None where ``fn``'s
    program on ``backend`` cannot tell; else the first that served one configuration what another
    compiled: ``CONFIGURATION`` and ``[LAYER] story``. The program is compiled past every cache
    as configured and with every survivable workaround off (``compiler.workarounds.
    survivable``) but an ``emitted`` one: where their stages differ, then, with a fresh jitted
    function, (a) compiled as configured and then called with them off, the jit
    specialization cache must compile again (``jit``); (b) compiled with them off and then as
    configured, the stage and kernel memos must give its own stages (``driver``), and so must
    (c) a compile that loads from the persistent cache in ``directory`` after one with them off
    was stored there (``persist``). Where they change no stage of this program, nothing tells.
    Uninstrumented (instrumented kernels never use the persistent cache). A planted key that
    missed them served a max over long rows the masked lowering's kernel (-1e-45 for negative
    rows); the jit cache missed them in the compiler as it was."""
    import compiler
    from compiler import backends, driver, persist, workarounds
    from compiler.runtime import instrumented

    mark = mark or (lambda backend, step: None)
    # (one that changes every module as built tells the configurations apart by its text alone)
    off = tuple(n for n in workarounds.survivable() if not workarounds.WORKAROUNDS[n].emitted)
    target = backends.get(backend)
    body = getattr(fn, "fn", None)
    if not off or not isinstance(target, backends.MlirCpuBackend) or not callable(body):
        return ""

    def stages(jitted: Any) -> dict[str, str]:
        mark(backend, "configured")
        return dict(jitted.compile(*inputs, target=backend).artifacts.stages)

    probe, other_probe = compiler.jit(body), compiler.jit(body)
    previous = persist.set_cache_dir(None)  # (b) first, in process alone
    try:
        with instrumented(False):
            with driver.fresh():
                own = stages(probe)
                try:
                    with workarounds.disabled(*off):
                        other = stages(other_probe)
                except Exception:  # noqa: BLE001 - the upstream bug back: nothing to compare
                    return None
            if other == own:
                return None
            names = ", ".join(off)
            with workarounds.disabled(*off), driver.fresh():  # past the driver's memos
                served = stages(probe)  # the specialization made as configured is cached
            if served != other:
                return _served(
                    "jit", own, served, f"the jitted function compiled as configured and then "
                    f"called with the workarounds {names} off",
                )  # fmt: skip
            probe.clear()
            with workarounds.disabled(*off):
                stages(probe)  # in the memos
            probe.clear()
            served = stages(probe)
            if served != own:
                return _served(
                    "driver", other, served, f"compiled in process right after a compile with "
                    f"the workarounds {names} off (compiler/driver.py's stage and kernel memos)",
                )  # fmt: skip
            persist.set_cache_dir(directory)
            for configuration, own_stages, wrong in (("off", other, own), ("on", own, other)):
                probe.clear()
                with workarounds.disabled(*off if configuration == "off" else ()):
                    with driver.through_disk():  # loaded from the cache, or stored there
                        served = stages(probe)
                if served != own_stages:
                    return _served(
                        "persist", wrong, served, f"compiled with the workarounds {names} "
                        f"{configuration} through the persistent compilation cache "
                        "(compiler/persist.py), where the other configuration's kernel was "
                        "stored or may be",
                    )  # fmt: skip
            return ""
    finally:
        persist.set_cache_dir(previous)
        probe.clear()
        other_probe.clear()


def _served(layer: str, other: dict[str, str], served: dict[str, str], how: str) -> str:
    whose = "the other configuration's" if served == other else "other"
    return f"{CONFIGURATION} [{layer}]: {how}, the program was given {whose} stages"


def _stored_and_loaded(fn: Any, inputs: list[np.ndarray], backend: str, mark: Any) -> Any:
    """``fn`` compiled (stored in the persistent cache, unless its key was there already),
    then compiled again from disk and called; None if nothing was stored. ``fn``'s
    specializations are dropped, whatever happens."""
    from compiler import driver

    try:
        with driver.through_disk():
            fn.clear()
            fn.compile(*inputs, target=backend)  # compiled and stored
            fn.clear()
            mark(backend, "persist")
            compiled = fn.compile(*inputs, target=backend)  # loaded
            if not compiled.artifacts.notes.get("persisted"):
                return None
            mark(backend, "persist")
            return np.array(compiled(*inputs), copy=True)
    finally:
        fn.clear()


def _staged(body: Any) -> Any:
    """A new function that calls ``body``. Every function made here has one code object, one
    name and one qualified name: only the function object itself tells two apart."""

    def staged(*args: Any) -> Any:
        return body(*args)

    return staged


def _first(*args: Any) -> Any:
    return args[0]


#: How many functions ``after_another_function`` makes, at most, looking for one at the address
#: of the collected function (each held until the search ends, so that the allocator hands out
#: another block each time). CPython's allocator hands out a freed block first only where its
#: pool is the one it allocates from; after a long run other pools of the size class, each of
#: about ninety free blocks, come first (64 attempts once missed the address in CI's run; a
#: heap fragmented on purpose, 2,500 free blocks ahead, gave it at the 2,448th). The search ends
#: at the address.
ADDRESS_ATTEMPTS = 50_000
#: Functions made and held on each side of the first (see ``after_another_function``).
NEIGHBOURS = 2


def _returns_first(jitted: Any, inputs: list[np.ndarray], backend: str, mark: Any) -> bool:
    """Whether ``jitted`` (of a ``_staged(_first)``) returns its first argument's bits when
    called on ``inputs``; its specializations are dropped."""
    try:
        mark(backend, "successor")
        return same_bits(jitted(*inputs, target=backend), inputs[0])
    finally:
        jitted.clear()


def after_another_function(
    fn: Any, inputs: list[np.ndarray], backend: str, mark: Any = None
) -> str | None:
    """Whether the specialization cache tells functions apart by the function object, for its
    whole life and no longer: ``fn``'s function, wrapped as ``staged``, is jitted and compiled
    for ``inputs`` (its specialization cached); then a second ``staged`` of the same code object
    and name, which returns its first argument, is jitted and called on other arrays of the same
    types while the first lives ("live"); then the first is dropped and a third is made where it
    lived (at its address, where the allocator hands that out within ``ADDRESS_ATTEMPTS``),
    jitted and called so ("collected"). Each owes its first argument's bits. "" if both gave
    them, else the story of the first that did not; None where ``fn`` has no function or no
    inputs. The later functions' specializations are dropped; the first's go with it (the
    compiler releases a collected function's)."""
    import compiler

    mark = mark or (lambda backend, step: None)
    if not inputs or not callable(getattr(fn, "fn", None)):
        return None
    other = _perturbed(inputs)
    mark(backend, "successor")
    # Functions made just before and after the first, held to the end: one shares its pool and
    # keeps that pool from being emptied (an empty pool may go to another size of object, and
    # the first's address with it, never to come back as a function's).
    neighbours = [_staged(_first) for _ in range(NEIGHBOURS)]
    first = compiler.jit(_staged(fn.fn))
    neighbours += [_staged(_first) for _ in range(NEIGHBOURS)]
    first.compile(*inputs, target=backend)  # cached: a key that is not the function finds it
    if not _returns_first(compiler.jit(_staged(_first)), other, backend, mark):
        first.clear()
        return "live"
    address = id(first.fn)
    make = functools.partial(_staged, _first)  # made before: it must not take the address
    del first  # with its function: nothing else holds them
    staged = made_at(address, make)
    del neighbours
    if not _returns_first(compiler.jit(staged), other, backend, mark):
        return "collected"
    return ""


def made_at(address: int, make: Callable[[], Any]) -> Any:
    """What ``make`` returns once it lands at ``address`` (a block just freed), else the last of
    ``ADDRESS_ATTEMPTS``; those made before are held until then, so that each call gets
    another block."""
    held = []
    made = make()
    while id(made) != address and len(held) < ADDRESS_ATTEMPTS:
        held.append(made)
        made = make()
    return made


#: Threads that call one new jitted function at once (``concurrent_calls``), and the calls each
#: makes: the compiler compiles a specialization once for threads that race to it and serializes
#: a kernel's calls (its descriptors and static temporaries are its own), and a user's threads
#: may share a jitted function.
THREADS = 4
CALLS = 8
#: How a race's story names a thread that traced a new function capturing a NumPy array at
#: each call (``concurrent_calls``): a failure there is the trace's (the @jit layer's).
TRACING_THREAD = "tracing a new function that captures an array, at each call"
#: Python's thread switch interval while they run (seconds; its default is 0.005): a small
#: program traces in less than the default, so at it two threads' traces seldom overlap.
SWITCH_INTERVAL = 1e-5


def _rolled(inputs: list[np.ndarray], shift: int) -> list[np.ndarray]:
    """Other arguments of the same types, of the same values in another order (ids stay in
    their range, a regime stays itself), for threads that must not get each other's answers."""
    return [np.roll(a, shift).reshape(a.shape) if a.ndim else a.copy() for a in inputs]


def concurrent_calls(
    fn: Any, inputs: list[np.ndarray], backend: str, mark: Any = None
) -> str | None:
    """Whether jitted functions called from ``THREADS`` threads at once give each call what its
    own arguments give alone: each thread calls ``CALLS`` times, on its own arguments (the
    inputs with their values rolled by the thread's number), a new jitted function of
    ``fn``'s (none of its specializations compiled yet): the even threads one they share (they
    race to compile it), each odd one a new one at every call, which reads its first argument
    from its closure (``_thread_function``), so that those trace at once, each capturing a
    NumPy array. Each answer must have the bits its function gives called alone, or fail as
    that did. "" if every call did, else what the first that did not got; None where ``fn`` has
    no function or no inputs."""
    import threading

    import compiler

    mark = mark or (lambda backend, step: None)
    if not inputs or not callable(getattr(fn, "fn", None)):
        return None
    mark(backend, "concurrent")
    sets = [inputs, *(_rolled(inputs, shift) for shift in range(1, THREADS))]
    alone: list[Any] = []
    for thread, arguments in enumerate(sets):
        own, given = _thread_function(fn.fn, thread, arguments)
        alone_fn = fn if own is None else compiler.jit(own)
        try:
            alone.append(np.array(alone_fn(*given, target=backend), copy=True))
        except Exception as error:  # noqa: BLE001 - then each concurrent call owes the same
            alone.append(type(error))
        finally:
            if own is not None:
                alone_fn.clear()
    shared = compiler.jit(_staged(fn.fn))
    made: list[Any] = [shared]

    def function(thread: int) -> tuple[Any, list]:
        """The jitted function ``thread`` calls next, and its arguments: the shared one, or for
        an odd thread a new one at every call (each call traces again: two traces overlap in
        some of the calls only)."""
        own, given = _thread_function(fn.fn, thread, sets[thread])
        if own is None:
            return shared, given
        # Its own, not ``made[-1]``: another thread may append between the two (a clean session
        # saw a thread call another's function, its captured array, on its own arguments).
        jitted = compiler.jit(own)
        made.append(jitted)
        return jitted, given

    start = threading.Barrier(THREADS)
    stories: list[str] = []

    def calls(thread: int) -> None:
        want, who = alone[thread], f"thread {thread + 1}"
        if thread % 2 and len(sets[thread]) >= 2:
            who += f" ({TRACING_THREAD})"
        try:
            start.wait(timeout=60)
        except threading.BrokenBarrierError:
            return
        for call in range(CALLS):
            jitted, arguments = function(thread)
            try:
                got = jitted(*arguments, target=backend)
            except Exception as error:  # noqa: BLE001 - judged against the call alone
                if want is not type(error):
                    stories.append(
                        f"call {call + 1} of {who} raised {type(error).__name__}: "
                        f"{str(error)[:200]} (alone, the call {_alone(want)})"
                    )
                return
            if isinstance(want, type) or not same_bits(got, want):
                theirs = [
                    i + 1 for i, other in enumerate(alone)
                    if i != thread and not isinstance(other, type) and same_bits(got, other)
                ]  # fmt: skip
                whose = f"thread {theirs[0]}'s answer" if theirs else "an answer of no call"
                stories.append(
                    f"call {call + 1} of {who} returned {whose} (alone, the call "
                    f"{_alone(want)})"
                )
                return

    threads = [threading.Thread(target=calls, args=(t,), daemon=True) for t in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)  # threads taking turns every few bytecodes
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for jitted in made:
        jitted.clear()
    return stories[0] if stories else ""


def _thread_function(body: Any, thread: int, arguments: list[np.ndarray]) -> tuple[Any, list]:
    """(None, ``arguments``) for an even thread (it calls the function the even threads
    share); for an odd one a new function and its arguments: with two arguments or more, one
    that reads the first from its closure (a NumPy array captured while it is traced: two
    threads' traces must each capture into their own; a tracing stack shared by every thread
    mixed them up, a held-out plant that threads calling one function never reached)."""
    if thread % 2 == 0:
        return None, arguments
    if len(arguments) < 2:
        return _staged(body), arguments
    first = arguments[0]

    def captures(*rest: Any) -> Any:
        return body(first, *rest)

    # Its own name and code object: the specialization cache's key for a function is the
    # determinism check's (``after_another_function``), not this one's to find again.
    name = f"captures_{next(_MADE)}"
    captures.__code__ = captures.__code__.replace(co_name=name, co_qualname=name)
    captures.__name__ = captures.__qualname__ = name
    return captures, arguments[1:]


_MADE = itertools.count()


def _aliased_inputs(output: Any, inputs: list[np.ndarray]) -> str:
    """The memory oracle's ``aliased-input`` line where an output array shares memory with an
    argument (every target returns arrays of its own: a later write into the argument would
    change the answer), else ""."""
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    shared = [
        i for i, given in enumerate(inputs)
        if isinstance(given, np.ndarray)
        and any(isinstance(o, np.ndarray) and np.shares_memory(o, given) for o in outputs)
    ]  # fmt: skip
    if not shared:
        return ""
    return (
        f"aliased-input: the output shares memory with argument(s) {shared}: a later write "
        "into the argument changes the answer returned"
    )


def _alone(want: Any) -> str:
    return f"raised {want.__name__}" if isinstance(want, type) else "returned its own answer"


def same_bits(got: Any, want: Any, any_zero: bool = False) -> bool:
    """The same dtype, shape and bits, a NaN matching any NaN: its sign and payload are not
    NumPy's semantics (a NaN out of gemm and one out of a loop may differ in sign alone).
    ``any_zero``: a zero matches a zero of either sign too, for values whose zero signs are
    their kernel's (``tolerance.signs_settled``: a matmul's underflowed products are -0.0
    from gemm, 0.0 from a zero-filled loop, and either kernel may run a matmul)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind in "fcV":
        try:
            with np.errstate(invalid="ignore"):  # (a bfloat16 signaling NaN warns in isnan)
                nan, other = np.isnan(got), np.isnan(want)
        except TypeError:  # a structured dtype: bits only
            return got.tobytes() == want.tobytes()
        skip = nan
        if any_zero:
            skip = nan | ((got == 0) & (want == 0))
        same = got[~skip].tobytes() == want[~skip].tobytes()
        return bool(np.array_equal(nan, other)) and same
    return got.tobytes() == want.tobytes()


def _ours_uninstrumented(compiled: Any) -> bool:
    """Is ``compiled``'s native code a kernel of our runtime made without instrumentation?"""
    from compiler.runtime import Kernel, MlirRuntimeKernel

    native = getattr(getattr(compiled, "artifacts", None), "native", None)
    return isinstance(native, (Kernel, MlirRuntimeKernel)) and not native.instrumented


def _blas(compiled: Any, made: int) -> tuple[int, int] | None:
    """(promised, made) gemm calls of an instrumented kernel of a backend with a BLAS stage
    whose matmul layouts are static, else None."""
    from ..oracles.blas import STAGE, promised_calls, unjudged

    if unjudged(compiled):
        return None
    promised = promised_calls(compiled.stages[STAGE])
    return None if promised is None else (promised, made)


def run_backend(
    case: Any,
    input_sets: list[list[np.ndarray]],
    backend: str,
    repeat: bool,
    mark: Any = None,
    fn: Any = None,
    recompile: bool = True,
    tupled: bool = False,
    misfit: int | None = None,
    configured: str = "",
) -> list[BackendResult]:
    """Trace, compile and run the case on one backend for each input set (one compile),
    catching everything it raises; ``mark(backend, stage)`` hears each step before it runs.
    ``fn``, the case's jitted function shared by the task's backends, traces once for all;
    ``recompile``: the repeat checks include a fresh compile; ``tupled``: the first set also
    runs through the tupled oracle's functions with several results (``oracles.tupled``);
    ``misfit``: its specialization is also called with arguments it was not made for, input
    ``misfit`` changed (``oracles.arguments``; None: not); ``configured``: the configurations'
    check too (``other_configuration``: "program", or "probe" to fall back on its canned
    program where this one tells nothing; "": not)."""
    import compiler
    from compiler.runtime import blas_calls, fault_mark, live_blocks, memory_faults

    from ..oracles.base import instrumented_kernel
    from ..oracles.memory import UNINSTRUMENTED_LINE

    mark = mark or (lambda backend, stage: None)
    shared = fn is not None
    fn = fn if shared else compiler.jit(case.traced_function())
    results = []
    returned: list[tuple[BackendResult, Any, np.ndarray]] = []  # each call's output, its copy
    arrange = getattr(case, "arranged", list)  # the case's input layouts (run/layouts.py)
    for index, inputs in enumerate(input_sets):
        inputs = arrange(inputs)
        start = time.perf_counter()
        try:
            mark(backend, "trace")
            compiled = fn.compile(*inputs, target=backend)
            mark(backend, "run")
            calls, live, faults = blas_calls(), live_blocks(), fault_mark()
            output = compiled(*inputs)
            calls, live, faults = blas_calls() - calls, live_blocks() - live, memory_faults(faults)
        except Exception as error:  # noqa: BLE001 - the harness classifies every failure
            results.append(failure(backend, error))
            if results[-1].status == "unsupported" and _refused_by_tracing(fn, inputs):
                results[-1].stage = "trace"
            continue
        result = BackendResult(backend, "ok", output=output, seconds=time.perf_counter() - start)
        # The answer judged is the one this call returned, copied before any other call: a
        # kernel that hands every call the same output array had its first answer replaced by
        # the repeat check's, judged as a wrong value that no replay of the differential
        # oracle alone could reproduce (a planted bug's only finding, "not reproduced").
        answer = np.array(output, copy=True)
        returned.append((result, output, answer))
        instrumented = instrumented_kernel(compiled)
        result.memory_faults = faults if instrumented else None
        asked = instrumented_backend(backend)  # (the harness's decision, not the compiler's)
        if index == 0 and not instrumented and asked and _ours_uninstrumented(compiled):
            result.memory_faults = [UNINSTRUMENTED_LINE]
        aliased = _aliased_inputs(output, inputs)
        if aliased:  # on any backend, instrumented or not (a NumPy one's too)
            result.memory_faults = [*(result.memory_faults or ()), aliased]
        if index == 0:
            result.cells = sorted(stage_cells(compiled.stages))
            notes = getattr(getattr(compiled, "artifacts", None), "notes", {})
            # "llvm-linked": its kernel came out of the task's one linked JIT (jit_together)
            linked = ["llvm-linked"] if notes.get("linked") else []
            result.shared_stages = ",".join([*filter(None, [notes.get("shared", "")]), *linked])
            result.blas = _blas(compiled, calls)
            result.leaked = live if instrumented else None
        if repeat and index == 0:
            steps: list[str] = []
            try:
                # (a call of its own that wrote over the answer: ``independent`` is False)
                _repeat_checks(
                    fn, inputs, backend, output, result, recompile, _kept(mark, steps), answer,
                    configured,
                )  # fmt: skip
            except Exception as error:  # noqa: BLE001 - a repeat that fails is a failure
                result = failure(backend, error)
                # named as a crash's marker names it: replayed with the determinism oracle on
                result.message += f" [stage {backend} {steps[-1]}]" if steps else ""
        if tupled and index == 0 and result.ok:
            mark(backend, "tupled")
            from ..oracles.tupled import check

            result.tupled = check(case, fn, inputs, backend, answer)
            _overwritten(result, output, answer, "tupled")
            mark(backend, "nested")
            from ..oracles.tupled import nested

            result.nested, result.nested_output = nested(case, inputs, backend, answer)
            _overwritten(result, output, answer, "nested")
        if misfit is not None and index == 0 and result.ok:
            mark(backend, "misfit")
            from ..oracles.arguments import check as check_arguments

            result.misfit = check_arguments(compiled, inputs, misfit)
            _overwritten(result, output, answer, "misfit")
        result.output = answer if result.ok else None
        results.append(result)
    for result, output, answer in returned:  # a later set's call wrote into an earlier answer
        _overwritten(result, output, answer, "set")
    if not shared:
        fn.clear()
    return results


def _overwritten(result: BackendResult, output: Any, answer: np.ndarray, by: str) -> None:
    """Note in ``result`` that a later call of the task (``by``: the tupled or the misfit call,
    another input set's; the repeat check's own are its ``independent``) changed the array
    ``output`` an earlier call returned, of which ``answer`` is the copy taken right after it;
    the first such call."""
    if result.overwritten or not isinstance(output, np.ndarray):
        return
    if output.tobytes() != answer.tobytes() or output.dtype != answer.dtype:
        result.overwritten = by


def _kept(mark: Any, steps: list[str]) -> Any:
    """``mark``, each step also appended to ``steps``."""

    def step(backend: str, name: str) -> None:
        steps.append(name)
        mark(backend, name)

    return step


def _recorded(backend: str, record: Any) -> BackendResult:
    if record.error is not None:
        result = failure(backend, record.error)
    else:
        result = BackendResult(backend, "ok", output=record.snapshot)
    result.seconds, result.traced = record.seconds, record.traced
    return result


def run_sequence(case: Any, backend: str, mark: Any = None) -> list[BackendResult]:
    """The case's jit sequence on one backend: its calls in order on ONE jitted function (one
    cache), the captured array changed in place where a call says so; then, for each call that
    did not trace a specialization of its own (or failed), the same call alone on a fresh jit.
    One result per call; ``independent`` is False where a call wrote into an array it was given
    or a later call wrote into its output."""
    import compiler

    from .sequence import Recorder

    mark = mark or (lambda backend, stage: None)
    sequence = case.sequence
    captured = np.array(sequence.calls[0].captured, copy=True) if sequence.captured else None
    fn = sequence.function(compiler.xp, captured)
    recorder = Recorder(fn, captured, backend, sequence.view)
    try:
        for index, call in enumerate(sequence.calls):
            if call.captured is not None and captured is not None:
                captured[...] = call.captured
            args, statics = sequence.arguments(index, recorder.last)
            mark(backend, f"call {index}")
            recorder(*args, **statics)
        results = []
        for index, record in enumerate(recorder.records):
            result = _recorded(backend, record)
            if record.error is not None or not record.traced:
                mark(backend, f"alone {index}")
                result.alone = _recorded(backend, recorder.alone(index))
            overwritten = recorder.overwritten(index)
            result.independent = not overwritten
            if overwritten:
                result.message = overwritten
            results.append(result)
    finally:
        recorder.clear()
    return results


def artifacts(task: Task) -> dict[str, Any]:
    """Every stage's text and reproduce command of the case on the task's first backend; the
    built module alone if a later stage fails (tracing and emitting cannot crash)."""
    import compiler
    from compiler import backends

    case = task.case
    backend = backends.get(task.backends[0])
    fn = compiler.jit(case.traced_function())
    _, graph, _ = fn.trace(*case.inputs)
    data: dict[str, Any] = {"backend": backend.name, "module": fn.emit(*case.inputs)}
    try:
        if task.before and hasattr(backend, "stage_texts"):
            data.update(backend.stage_texts(graph, task.before).to_dict())
        else:
            data.update(backend.compile(graph).to_dict())
    except Exception as error:  # noqa: BLE001 - the failing stage is in the record
        data["error"] = f"{type(error).__name__}: {error}"[:4000]
    return data


def workarounds_off(case: Any) -> contextlib.AbstractContextManager[None]:
    """The compiler's workarounds the case needs off (``Case.workarounds_off``), turned off in
    this thread; a name the compiler no longer registers is a workaround already gone (off for
    good), so there is nothing to turn off."""
    from compiler import workarounds

    names = getattr(case, "workarounds_off", ()) or ()
    return workarounds.disabled(*(n for n in names if n in workarounds.WORKAROUNDS))


def execute(task: Task) -> TaskResult:
    """The worker's job for one task, with the workarounds its case needs off, its kernels
    instrumented (``compiler.runtime.instrumented``) but on the backends named as users run
    them (``case.instrumented_backend``): on poisoned memory, code that reads memory it never
    wrote reads NaN or -1 in every run and every variant alike, so the failure is found every
    time, and attribution's variants (another runtime, fewer passes) do not pass by the luck of
    a zeroed page; gemm calls are counted (the ``blas`` oracle); and, where the task says so,
    the IR is verified after every pass, and (``task.fresh``) every stage and JIT runs again,
    each backend's kernel JIT-compiled alone (``compiler.driver.fresh``)."""
    from compiler import driver
    from compiler.pipelines import verify_each
    from compiler.runtime import instrumented

    each = verify_each() if task.verify_each else contextlib.nullcontext()
    fresh = driver.fresh() if task.fresh else contextlib.nullcontext()
    with workarounds_off(task.case), instrumented(), each, fresh:
        return _execute(task)


def _execute(task: Task) -> TaskResult:
    if task.kind == "fault":
        from .isolation import fault

        fault(task.fault)
    from compiler import driver
    from compiler.runtime import instrumented

    listener = _Marker(task.marker) if task.marker else None
    if listener is not None:
        driver.STAGE_LISTENERS.append(listener)
    try:
        if task.kind == "artifacts":
            return TaskResult(artifacts=artifacts(task))
        if task.kind == "sequence":
            calls = []
            for backend in task.backends:
                with instrumented(instrumented_backend(backend)):
                    calls.append(run_sequence(task.case, backend, listener))
            return TaskResult([result for results in calls for result in results])
        if task.kind == "model":
            from .gpt2 import full_inputs, run_model

            spec, seed = task.case.gpt2
            weights = full_inputs(spec, seed, task.case.inputs)
            runs = []
            # The step stays "model" through the sublayers' compiles: a crash in it recurs only
            # with the gpt2-model oracle on (``replay.STEP_ORACLES``).
            if listener is not None:
                driver.STAGE_LISTENERS.remove(listener)
            try:
                for backend in task.backends:
                    if listener is not None:
                        listener(backend, "model")
                    with instrumented(instrumented_backend(backend)):
                        run = run_model(spec, weights, backend)
                    runs.append(BackendResult(backend, "ok", output=run.logits, model=run))
            finally:
                if listener is not None:
                    driver.STAGE_LISTENERS.append(listener)
            return TaskResult(runs)
        import compiler

        results: list[BackendResult] = []
        fn = compiler.jit(task.case.traced_function())
        misfit = None  # the input the arguments oracle changes: one draw for every backend
        if task.misfit:
            from ..oracles.arguments import which_input

            misfit = which_input(task.case)
        try:
            # The backends' kernels out of one linked JIT for those instrumented and one for
            # those run as shipped (a crash there: the runner re-runs the task backend by
            # backend, and alone each JITs its own module).
            arranged = getattr(task.case, "arranged", list)(task.sets()[0])
            for on in (True, False):
                targets = [b for b in task.backends if instrumented_backend(b) == on]
                if targets:
                    with instrumented(on):
                        fn.prepare(*arranged, targets=targets)
            configured = configured_backend(task.backends, task.recompile)
            how = "probe" if task.case.toggle("configured:probe", PROBE_SHARE) else "program"
            for backend in task.backends:
                recompile, tupled = backend == task.recompile, backend == task.tupled
                with instrumented(instrumented_backend(backend)):
                    results.extend(
                        run_backend(
                            task.case, task.sets(), backend, task.repeat, listener, fn,
                            recompile, tupled, misfit, how if backend == configured else "",
                        )  # fmt: skip
                    )
        finally:
            fn.clear()
        return TaskResult(results)
    finally:
        if listener is not None:
            driver.STAGE_LISTENERS.remove(listener)
            listener.close()
            try:
                os.unlink(task.marker)
            except FileNotFoundError:
                pass


__all__ = [
    "artifacts",
    "execute",
    "failure",
    "run_backend",
    "run_sequence",
    "same_bits",
    "workarounds_off",
]
