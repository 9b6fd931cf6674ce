"""A persistent compilation cache: a second process pays neither the stages nor the JIT.

Like JAX's persistent cache (``jax_compilation_cache_dir``), it is off until a directory is
given: ``COMPILER_CACHE_DIR`` in the environment, or ``set_cache_dir(path)``. An entry is the
native code of one specialization on one target, as a shared object (the PIC object the JIT made,
linked by the system's ``ld``), with every stage's text beside it (so ``Compiled.lowered`` and
the others still answer). The key covers everything the code depends on: the module as built,
the target's stages and LLVM level, the workarounds on, the kernel signature, the MLIR and LLVM
versions, this CPU's features and the source of every file of ``compiler/`` (a changed pass, a
planted bug, a local edit: a miss, never another version's code).

Loading native code runs it, so the directory must be trusted: one owned by another user, or
writable by others, is refused (with a warning) as ``~/.ssh`` would be. Entries are written to a
temporary directory and renamed into place, so a crash or a racing process never leaves half an
entry; an entry that fails to load (or whose object does not match its digest) is compiled
again and replaced. No linker (``ld``) on the machine: nothing is stored, with one warning.
Instrumented kernels (the harness's memory oracle) and ``driver.fresh()`` never use it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import platform
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .lower.emit import KERNEL

ENVIRONMENT = "COMPILER_CACHE_DIR"
#: Entries kept per directory; the least recently used go first (a hit touches its entry).
MAX_ENTRIES = int(os.environ.get("COMPILER_CACHE_MAX_ENTRIES", "512"))
_SO, _STAGES, _META = "kernel.so", "stages.json.z", "meta.json"
#: The packed entry point ``ExecutionEngine`` generated for the kernel's C interface.
PACKED_PREFIX = "_mlir_"

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"directory": None, "set": False, "refused": set(), "no_linker": False}


def set_cache_dir(directory: str | os.PathLike | None) -> str | None:
    """Use ``directory`` for the persistent cache (None: off, whatever the environment says);
    returns the previous setting."""
    with _LOCK:
        previous = cache_dir()
        _STATE["directory"] = None if directory is None else os.fspath(directory)
        _STATE["set"] = True
        return None if previous is None else str(previous)


def cache_dir() -> Path | None:
    """The directory in use, or None when the cache is off (or its directory was refused)."""
    name = _STATE["directory"] if _STATE["set"] else os.environ.get(ENVIRONMENT) or None
    if not name:
        return None
    path = Path(name).expanduser()
    return None if str(path) in _STATE["refused"] else path


def _trusted(directory: Path) -> bool:
    """Create ``directory`` (0700) if needed; is it ours and closed to others?"""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError as error:
        return _refuse(directory, f"it cannot be created or read ({error})")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return _refuse(directory, "it belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return _refuse(directory, "others can write to it")
    return True


def _refuse(directory: Path, why: str) -> bool:
    _STATE["refused"].add(str(directory))
    warnings.warn(
        f"compiler cache {directory} not used: {why} (its native code would run in this process)",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


@functools.cache
def _source_digest() -> str:
    """Every file of the ``compiler`` package, by path and content."""
    root = Path(__file__).resolve().parent
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def _environment_digest() -> str:
    """The tools (the MLIR bindings' native libraries, by path, size and time: any other build
    or install differs) and this CPU (the JIT targets its features)."""
    import mlir

    from .runtime import JIT_CODEGEN_ARGUMENTS

    parts = [platform.machine(), platform.system(), repr(JIT_CODEGEN_ARGUMENTS)]
    for root in mlir.__path__:
        for library in sorted(Path(root, "_mlir_libs").glob("*.so")):
            with contextlib.suppress(OSError):
                info = library.stat()
                parts.append(f"{library} {info.st_size} {info.st_mtime_ns}")
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            lines = [line for line in handle if line.startswith(("flags", "model name"))]
        parts.extend(sorted(set(lines)))
    except OSError:
        parts.append(platform.processor())
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def key(built: str, target: Any, signature: Any, workaround_state: Any) -> str:
    """The entry name of one specialization on one target."""
    stages = [
        (
            s.name,
            s.pipeline,
            f"{s.transform.__module__}.{s.transform.__qualname__}" if s.transform else "",
        )
        for s in target.stages
    ]
    material = json.dumps(
        {
            "built": hashlib.blake2b(built.encode(), digest_size=20).hexdigest(),
            "target": [target.name, target.opt_level, stages],
            "signature": repr(signature.key()),
            "workarounds": repr(workaround_state),
            "source": _source_digest(),
            "environment": _environment_digest(),
        },
        sort_keys=True,
    )
    return hashlib.blake2b(material.encode(), digest_size=20).hexdigest()


class Library:
    """A stored kernel, loaded: answers ``raw_lookup`` as the ExecutionEngine it stands for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Every symbol resolved now (the runtime libraries are global by then): an entry that
        # needs one this process lacks fails here, and is compiled again, not at its first call.
        self.handle = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)

    def raw_lookup(self, name: str) -> int | None:
        try:
            return ctypes.cast(self.handle[PACKED_PREFIX + name], ctypes.c_void_p).value
        except AttributeError:
            return None


def load(entry: str) -> tuple[dict[str, str], Library] | None:
    """The stage texts and loaded kernel of ``entry``, or None (absent, or unusable: then it is
    removed, and the caller compiles and stores it again)."""
    directory = cache_dir()
    if directory is None or not _trusted(directory):
        return None
    place = directory / entry
    if not place.is_dir():
        return None
    try:
        meta = json.loads((place / _META).read_text())
        code = (place / _SO).read_bytes()
        if hashlib.sha256(code).hexdigest() != meta["sha256"]:
            raise ValueError("the object does not match its digest")
        stages = json.loads(zlib.decompress((place / _STAGES).read_bytes()))
        library = _loaded(place / _SO)
        if not library.raw_lookup(f"_mlir_ciface_{KERNEL}"):  # as Kernel looks it up
            raise ValueError(f"no entry point {KERNEL!r} in the object")
    except (OSError, ValueError, KeyError, TypeError, zlib.error) as error:
        message = f"compiler cache entry {place} unusable, compiled again: {error}"
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        shutil.rmtree(place, ignore_errors=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(place)  # recently used: kept the longest
    return stages, library


def _loaded(path: Path) -> Library:
    """``path`` loaded, with the runtime libraries it needs made global first: none, OpenBLAS
    alone (cheap), then all (MLIR's C runner utils bring libMLIR and libLLVM: 80 ms)."""
    from .lower.blas import library_path
    from .runtime import load_runtime_libraries

    steps = [lambda: None, lambda: ctypes.CDLL(library_path(), mode=os.RTLD_GLOBAL)]
    for step in [*steps, load_runtime_libraries]:
        step()
        try:
            return Library(path)
        except OSError as error:
            failure = error
    raise failure


def _linker() -> str | None:
    found = shutil.which("ld")
    if found is None and not _STATE["no_linker"]:
        _STATE["no_linker"] = True
        message = "compiler cache: no linker (ld) found, nothing is stored"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    return found


def store(entry: str, stages: dict[str, str], engine: Any) -> bool:
    """Keep ``engine``'s code (made with ``enable_pic``, already compiled by a lookup) and the
    stage texts as ``entry``; whether it was stored."""
    directory = cache_dir()
    if directory is None or not _trusted(directory) or (linker := _linker()) is None:
        return False
    if (directory / entry).is_dir():
        return False
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory))
    try:
        engine.dump_to_object_file(str(work / "kernel.o"))
        linked = subprocess.run(
            [linker, "-shared", "-o", str(work / _SO), str(work / "kernel.o")],
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,  # a ^C to the caller's group is not a link failure
        )
        if linked.returncode != 0:
            message = f"compiler cache: ld failed: {linked.stderr[-500:]}"
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            return False
        (work / "kernel.o").unlink()
        code = (work / _SO).read_bytes()
        (work / _STAGES).write_bytes(zlib.compress(json.dumps(stages).encode(), 6))
        (work / _META).write_text(json.dumps({"sha256": hashlib.sha256(code).hexdigest()}))
        for name in (_SO, _STAGES, _META):
            (work / name).chmod(0o600)
        try:
            os.rename(work, directory / entry)  # atomic; another process may have won
        except OSError:
            return False
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _evict(directory)
    return True


def _entries(directory: Path) -> Iterator[Path]:
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if len(path.name) == 40 and not path.name.startswith("."):
                yield path


def _evict(directory: Path) -> None:
    """Keep the MAX_ENTRIES most recently used entries; drop what writers killed mid-store left
    (temporary directories an hour old)."""
    with contextlib.suppress(OSError):
        for path in directory.glob(".tmp-*"):
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime > 3600:
                    shutil.rmtree(path, ignore_errors=True)
    entries = []
    for path in _entries(directory):
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime, path))
    entries.sort(reverse=True)
    for _, path in entries[MAX_ENTRIES:]:
        shutil.rmtree(path, ignore_errors=True)


def clear(directory: str | os.PathLike | None = None) -> int:
    """Remove every entry of ``directory`` (default: the one in use); how many there were."""
    where = Path(directory) if directory is not None else cache_dir()
    if where is None:
        return 0
    removed = 0
    for path in list(_entries(where)):
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


__all__ = ["ENVIRONMENT", "Library", "cache_dir", "clear", "key", "load", "set_cache_dir", "store"]
