"""Mutation testing of the harness: random one-site mutants of ``compiler/``, each fuzzed in a
scratch copy; the kill rate measures how much of the compiler the fuzzer really checks.

``operators`` draws mutants (``ast`` sites, byte-exact rewrites), ``equivalence`` sets likely
equivalent and stillborn mutants aside with a fixed program sample run by ``probe`` (in a
subprocess), ``runner`` fuzzes the rest and reports. This module imports nothing heavy: the probe
runs as ``python -m harness.mutate.probe`` against a compiler that may not even import.
"""

from __future__ import annotations

import argparse


def run_mutate(args: argparse.Namespace) -> int:
    from .runner import run_mutate as run

    return run(args)


__all__ = ["run_mutate"]
