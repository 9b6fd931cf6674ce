"""The command line's argument types and help format, apart from ``cli`` (the commands): each
type checks its value when parsed and says in one line what is valid (exit status 2)."""

from __future__ import annotations

import argparse
import os
import textwrap
from collections.abc import Callable


class Formatter(argparse.HelpFormatter):
    """Help that shows every option's default (unless it is off, empty or already said), never
    breaks a name at its hyphens, and keeps the line breaks of indented blocks (examples)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default:" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or (isinstance(default, (str, tuple, list)) and not default)
            or not action.option_strings
        ):
            return text
        if isinstance(default, (tuple, list)):
            default = ",".join(map(str, default))
        return f"{text} (default: {str(default).replace('%', '%%')})"

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(
            " ".join(text.split()), width, break_on_hyphens=False, break_long_words=False
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.strip("\n").split("\n\n"):
            if any(line.startswith(" ") for line in block.splitlines()):
                blocks.append("\n".join(indent + line for line in block.splitlines()))
            else:
                blocks.append(
                    textwrap.fill(
                        " ".join(block.split()),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_on_hyphens=False,
                    )
                )
        return "\n\n".join(blocks)


class Parser(argparse.ArgumentParser):
    """Argument errors are one line (no usage block) that says what is valid; exit status 2."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def number(kind: Callable[[str], float], least: float, what: str) -> Callable[[str], float]:
    """An argparse type: a ``kind`` number of at least ``least``, with a one-line error."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not value >= least:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    parse.__name__ = what
    return parse


seconds = number(float, 1e-3, "a positive number of seconds")
budget = number(float, 0.0, "a number of seconds >= 0")
count = number(int, 1, "a whole number >= 1")


def backends(text: str) -> tuple[str, ...]:
    """Comma-separated backends, each known and available here (``python -m harness
    backends`` lists them); variants such as ``cpu-loops@O0`` are accepted, and ``mlir:*``
    (a pipeline variant drawn per case)."""
    from compiler.backends import why_not
    from compiler.mlir_variants import is_draw

    names = tuple(dict.fromkeys(b.strip() for b in text.split(",") if b.strip()))
    if not names:
        raise argparse.ArgumentTypeError("no backend named (see: python -m harness backends)")
    for name in names:
        _, at, level = name.partition("@")
        reason = why_not("mlir:" + at + level) if is_draw(name) else why_not(name)
        if reason is not None:
            raise argparse.ArgumentTypeError(
                f"{reason}; variants: NAME@O0..O3, NAME[:stage#k], NAME+mlir-runtime; "
                "'python -m harness backends' says which run here"
            )
    return names


def oracles(text: str) -> tuple[str, ...]:
    """Comma-separated optional oracles, or prefixes ending in ':' (``metamorphic:``); the
    primary ones judge every case and cannot be skipped."""
    from .oracles import ORACLES

    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    optional = [name for name, oracle in ORACLES.items() if not oracle.primary]
    prefixes = sorted({n.split(":")[0] + ":" for n in optional if ":" in n})
    for name in names:
        if name not in optional and name not in prefixes:
            primary = ", ".join(n for n in ORACLES if n not in optional)
            raise argparse.ArgumentTypeError(
                f"{'primary' if name in ORACLES else 'unknown'} oracle {name!r}; the optional "
                f"ones are {', '.join([*prefixes, *optional])} ({primary} always run)"
            )
    return names


def mutations(text: str) -> str:
    """Comma-separated names of the selftest's planted bugs."""
    from .selftest import MUTATIONS

    known = [m.name for m in MUTATIONS]
    for name in (n.strip() for n in text.split(",") if n.strip()):
        if name not in known:
            known_names = ", ".join(known)
            raise argparse.ArgumentTypeError(f"unknown mutation {name!r}; known: {known_names}")
    return text


def version_line() -> str:
    """This package's version, and the versions that decide what a replay finds."""
    import platform
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (
        f"python -m harness (mlir-tensor-fuzz) {version('mlir-tensor-fuzz')}; Python "
        f"{platform.python_version()}, NumPy {version('numpy')}, "
        f"MLIR bindings {version('xtc-mlir-python-bindings')}"
    )


def workaround(text: str) -> str:
    """A registered compiler workaround (``python -m compiler workarounds`` lists them)."""
    from compiler import workarounds

    try:
        return workarounds.check((text.strip(),))[0]
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def workers(text: str) -> int:
    if text == "auto":
        return max(1, os.cpu_count() or 1)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers >= 1 or 'auto'")
    return value
