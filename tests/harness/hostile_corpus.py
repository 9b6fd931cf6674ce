"""Hostile corpus files: the ways a file named ``*.json`` in corpus/ can hurt whatever reads it.

``generate(directory, good)`` writes one file (or FIFO, symlink, directory, socket...) per kind
into ``directory``, most of them mutations of ``good`` (a valid entry's JSON), and returns
``{file name: what it is}``; ``tests/harness/test_hostile_corpus.py`` checks that the loader,
replay, the report and the fuzz session's corpus read name each one and go on. By hand::

    python tests/harness/hostile_corpus.py /tmp/hostile   # then: python -m harness report ...

Every kind is cheap to make (the zlib bomb is one compressed MiB repeated, the oversized file is
sparse), so the whole set takes well under a second.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os
import socket
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

MiB = 1 << 20


def zlib_bomb(mebibytes: int) -> bytes:
    """A valid zlib stream of ``mebibytes`` MiB of zeros, about 1/1000 of that size. Full flushes
    make each compressed MiB independent of the ones before, so one is made and repeated; the
    Adler-32 of n zeros is (n mod 65521) << 16 | 1."""
    chunk = bytes(MiB)
    deflate = zlib.compressobj(9)
    head = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    end = deflate.flush()[:-4]
    adler = ((mebibytes * MiB) % 65521) << 16 | 1
    return head + block * (mebibytes - 1) + end + adler.to_bytes(4, "big")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _dumps(data: Any) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True).encode("utf-8")


def _at(data: dict[str, Any], dotted: str) -> tuple[Any, str | int]:
    """The container holding ``dotted`` ("case.case.inputs.0.shape") and the last key."""
    keys: list[str | int] = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    node: Any = data
    for key in keys[:-1]:
        node = node[key]
    return node, keys[-1]


def with_(good: dict[str, Any], dotted: str, value: Any) -> bytes:
    """``good`` with the field at ``dotted`` set to ``value``."""
    data = copy.deepcopy(good)
    node, key = _at(data, dotted)
    node[key] = value
    return _dumps(data)


def without(good: dict[str, Any], dotted: str) -> bytes:
    """``good`` without the field at ``dotted``."""
    data = copy.deepcopy(good)
    node, key = _at(data, dotted)
    del node[key]
    return _dumps(data)


def _raw(good: dict[str, Any], dotted: str, raw: bytes) -> bytes:
    """``good`` with the field at ``dotted`` replaced by raw bytes (NaN, 1e400, bad UTF-8...)."""
    marker = "@@HOSTILE@@"
    return with_(good, dotted, marker).replace(f'"{marker}"'.encode(), raw)


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = {"a": [value]}
    return value


_ARRAY = "case.case.inputs.0"
_GEN = {"dtype": "float32", "shape": [2]}

#: (slug, field, value): the good entry with one field set to a wrong value, a wrong type in
#: every field and the limits of the rest.
WRONG_VALUES: list[tuple[str, str, Any]] = [
    ("size-2**70", "size", 2**70),
    ("size-negative", "size", -1),
    ("size-float", "size", 3.5),
    ("size-bool", "size", True),
    ("size-string", "size", "3"),
    ("format-string", "format", "1"),
    ("format-float", "format", 1.0),
    ("format-bool", "format", True),
    ("format-zero", "format", 0),
    ("format-negative", "format", -1),
    ("format-future", "format", 2),
    ("format-huge", "format", 10**20),
    ("format-null", "format", None),
    ("signature-string", "signature", "mismatch"),
    ("signature-null", "signature", None),
    ("signature-ops-string", "signature.ops", "exp"),
    ("signature-ops-int", "signature.ops", [1]),
    ("signature-kind-path", "signature.kind", "../../x"),
    ("signature-kind-newline", "signature.kind", "crash\n"),
    ("signature-kind-int", "signature.kind", 1),
    ("signature-extra-key", "signature.extra", "x"),
    ("status-unknown", "status", "closed"),
    ("status-int", "status", 1),
    ("status-null", "status", None),
    ("detail-list", "detail", ["x"]),
    ("detail-int", "detail", 1),
    ("detail-lone-surrogate", "detail", "\ud800"),
    ("reproducer-object", "reproducer", {}),
    ("mlir-list", "mlir", []),
    ("mlir-module-int", "mlir", {"module": 1}),
    ("mlir-commands-int", "mlir", {"commands": {"lowered": 1}}),
    ("mlir-opt-list", "mlir", {"mlir_opt": ["x"]}),
    ("versions-list", "versions", ["numpy"]),
    ("versions-int", "versions", {"numpy": 2}),
    ("minimization-string", "minimization", "done"),
    ("minimization-state", "minimization", {"state": "half"}),
    ("minimization-steps", "minimization", {"steps": "x"}),
    ("evidence-list", "evidence", []),
    ("evidence-stderr-int", "evidence", {"stderr": 1}),
    ("id-int", "id", 1),
    ("signature-id-list", "signature_id", []),
    ("unknown-field", "surprise", 1),
    ("case-list", "case", []),
    ("case-oracle-int", "case.oracle", 1),
    ("inputs-string", "case.case.inputs", "x"),
    ("inputs-item-string", "case.case.inputs", ["x"]),
    ("backends-string", "case.case.backends", "cpu-loops"),
    ("backends-ints", "case.case.backends", [1]),
    ("checks-string", "case.case.checks", "causal"),
    ("extra-list", "case.case.extra", []),
    ("program-list", "case.case.program", []),
    ("program-nodes-object", "case.case.program.nodes", {}),
    ("program-op-int", "case.case.program.nodes.0.op", 1),
    ("deep-in-field", "case.case.extra", "nested 100 x {'a': [...]}"),  # replaced below
    ("base64-invalid", f"{_ARRAY}.zlib", "!!!!"),
    ("base64-unicode", f"{_ARRAY}.zlib", "é" * 8),
    ("not-zlib", f"{_ARRAY}.zlib", base64.b64encode(b"hello world!").decode()),
    ("shape-negative", f"{_ARRAY}.shape", [-1]),
    ("shape-huge", f"{_ARRAY}.shape", [2**40, 2**40]),
    ("shape-float", f"{_ARRAY}.shape", [2.5]),
    ("shape-string", f"{_ARRAY}.shape", "2"),
    ("shape-100-dims", f"{_ARRAY}.shape", [1] * 100),
    ("shape-too-small", f"{_ARRAY}.shape", [1]),
    ("dtype-object", f"{_ARRAY}.dtype", "O"),
    ("dtype-structured", f"{_ARRAY}.dtype", "float32,int32"),
    ("dtype-void", f"{_ARRAY}.dtype", "V1000000000"),
    ("dtype-unknown", f"{_ARRAY}.dtype", "float33"),
    ("dtype-big-endian", f"{_ARRAY}.dtype", ">f4"),
    ("dtype-int", f"{_ARRAY}.dtype", 5),
    ("generator-huge", _ARRAY, {**_GEN, "shape": [2**31], "generator": {"seed": 0, "scale": 1}}),
    ("generator-seed-negative", _ARRAY, {**_GEN, "generator": {"seed": -1, "scale": 1.0}}),
    ("generator-seed-string", _ARRAY, {**_GEN, "generator": {"seed": "x", "scale": 1.0}}),
    ("generator-no-scale", _ARRAY, {**_GEN, "generator": {"seed": 0}}),
    (
        "gpt2-huge",
        "case.case.extra",
        {
            "gpt2": {
                "seed": 0,
                "spec": {
                    "layers": 10**6,
                    "heads": 1,
                    "width": 1,
                    "context": 1,
                    "vocab": 1,
                    "length": 1,
                },
            }
        },
    ),
    (
        "gpt2-steps",
        "case.case.extra",
        {
            "gpt2": {
                "seed": 0,
                "spec": {
                    "layers": 1,
                    "heads": 1,
                    "width": 1,
                    "context": 1,
                    "vocab": 1,
                    "length": 1,
                    "steps": 10**9,
                },
            }
        },
    ),
    ("gpt2-spec-list", "case.case.extra", {"gpt2": {"seed": 0, "spec": [1, 2]}}),
    (
        "inputs-total-over-cap",
        "case.case.inputs",
        [{**_GEN, "shape": [4 * MiB], "generator": {"seed": i, "scale": 1.0}} for i in range(5)],
    ),
]
WRONG_VALUES = [
    (slug, where, _nested(1, 100) if slug == "deep-in-field" else value)
    for slug, where, value in WRONG_VALUES
]

#: Fields whose absence makes an entry unusable.
MISSING = [
    "format",
    "signature",
    "signature.kind",
    "status",
    "size",
    "case",
    "case.case",
    "case.case.program",
    f"{_ARRAY}.zlib",
]

#: (slug, field, raw JSON bytes) for what json.dumps would not write.
RAW_VALUES: list[tuple[str, str, bytes]] = [
    ("size-1e400", "size", b"1e400"),
    ("size-neg-1e400", "size", b"-1e400"),
    ("size-nan", "size", b"NaN"),
    ("size-infinity", "size", b"Infinity"),
    ("size-neg-infinity", "size", b"-Infinity"),
    ("size-5000-digits", "size", b"9" * 5000),
    ("nan-in-extra", "case.case.extra", b'{"x": NaN}'),
    ("many-items", "case.case.extra", b'{"x": [' + b"0," * 2_000_000 + b"0]}"),
    ("bad-utf8", "detail", b'"\xff\xfe"'),
    ("overlong-utf8", "detail", b'"\xc0\xaf"'),
    ("surrogate-bytes", "detail", b'"\xed\xa0\x80"'),
    ("control-char", "detail", b'"a\x01b"'),
    ("duplicate-key", "status", b'"fixed", "status": "open"'),
    ("duplicate-nested-key", "signature.kind", b'"crash", "kind": "mismatch"'),
]


def _file_kinds(good: dict[str, Any]) -> dict[str, tuple[str, Callable[[], bytes]]]:
    """slug -> (description, contents) for every kind that is a regular file."""
    text = _dumps(good)
    raw = zlib.decompress(base64.b64decode(good["case"]["case"]["inputs"][0]["zlib"]))
    zlib_of = f"{_ARRAY}.zlib"
    bomb = _b64(zlib_bomb(400))  # 0.5 MB of base64
    kinds: dict[str, tuple[str, Callable[[], bytes]]] = {
        "empty": ("a 0-byte file", lambda: b""),
        "whitespace": ("only whitespace", lambda: b" \n\t\r\n" * 10),
        "nul-bytes": ("1 KiB of NUL bytes", lambda: bytes(1024)),
        "binary": ("random bytes", lambda: np.random.default_rng(0).bytes(4096)),
        "utf8-bom": ("a UTF-8 byte-order mark", lambda: b"\xef\xbb\xbf" + text),
        "utf16-bom": ("UTF-16 with its BOM", lambda: text.decode().encode("utf-16")),
        "utf16-be": ("UTF-16 big-endian, no BOM", lambda: text.decode().encode("utf-16-be")),
        "utf32": ("UTF-32", lambda: text.decode().encode("utf-32")),
        "gzip": ("the good entry gzipped", lambda: gzip.compress(text, mtime=0)),
        "truncated": ("the good entry cut in half", lambda: text[: len(text) // 2]),
        "trailing-garbage": ("garbage after the object", lambda: text + b"\n}garbage"),
        "two-objects": ("two JSON objects", lambda: text + text),
        "comments": ("// comments", lambda: b"// corpus entry\n" + text),
        "single-quotes": ("a Python dict repr", lambda: repr(good).encode()),
        "trailing-comma": ("a trailing comma", lambda: text.rstrip()[:-1] + b",}"),
        "unterminated-string": ("an unterminated string", lambda: b'{"format": 1, "detail": "'),
        "deep-arrays": ("100k nested arrays", lambda: b"[" * 100_000 + b"]" * 100_000),
        "deep-objects": ("100k nested objects", lambda: b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        "deep-unbalanced": ("100k unclosed brackets", lambda: b"[" * 100_000),
        "many-objects": ("1.2M empty objects", lambda: b"[" + b"{}," * 1_200_000 + b"{}]"),
        "top-array": ("a top-level array", lambda: b"[" + text + b"]"),
        "top-string": ("a top-level string", lambda: b'"entry"'),
        "top-number": ("a top-level number", lambda: b"1"),
        "top-null": ("a top-level null", lambda: b"null"),
        "signature-list": (
            "a list-valued signature",
            lambda: with_(good, "signature", list(good["signature"].values())),
        ),
        "zlib-bomb": ("0.5 MB of zlib inflating to 400 MiB", lambda: with_(good, zlib_of, bomb)),
        "zlib-bomb-shaped": (
            "a 400 MiB zlib bomb with a matching shape",
            lambda: with_(good, _ARRAY, {"dtype": "uint8", "shape": [400 * MiB], "zlib": bomb}),
        ),
        "base64-truncated": (
            "base64 cut short",
            lambda: with_(good, zlib_of, _b64(zlib.compress(raw))[:-3]),
        ),
        "zlib-truncated": (
            "a zlib stream cut short",
            lambda: with_(good, zlib_of, _b64(zlib.compress(raw)[:-6])),
        ),
        "zlib-trailing": (
            "bytes after the zlib stream",
            lambda: with_(good, zlib_of, _b64(zlib.compress(raw) + b"x")),
        ),
        "shape-too-big": (
            "a shape larger than the bytes",
            lambda: with_(good, f"{_ARRAY}.shape", [len(raw)]),
        ),
    }
    for slug, where, value in WRONG_VALUES:
        kinds[slug] = (f"{where} = {value!r:.60}", lambda w=where, v=value: with_(good, w, v))
    for where in MISSING:
        kinds[f"missing-{where}"] = (f"no {where}", lambda w=where: without(good, w))
    for slug, where, literal in RAW_VALUES:
        kinds[slug] = (f"{where} = {literal!r:.60}", lambda w=where, r=literal: _raw(good, w, r))
    return kinds


def generate(directory: Path, good: dict[str, Any], outside: Path | None = None) -> dict[str, str]:
    """Write every hostile kind into ``directory``; ``outside`` (default: a sibling directory)
    holds the targets of the symlinks that leave it. Returns {file name: what it is}; kinds the
    platform or the user cannot make (a socket path too long, chmod as root, mknod without the
    right) are left out."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    outside = Path(outside) if outside is not None else directory.parent / f"{directory.name}-out"
    outside.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}

    def name(slug: str) -> Path:
        return directory / f"h{len(made):03d}-{slug}.json"

    for slug, (what, contents) in _file_kinds(good).items():
        path = name(slug)
        path.write_bytes(contents())
        made[path.name] = what

    # the file system
    path = name("oversized-sparse")
    with open(path, "wb") as handle:
        handle.truncate(64 * MiB + 1)  # sparse: costs no disk, over MAX_FILE_BYTES
    made[path.name] = "a sparse file over the size cap"
    path = name("directory")
    path.mkdir()
    made[path.name] = "a directory named *.json"
    path = name("fifo")
    os.mkfifo(path)
    made[path.name] = "a FIFO (opening it would wait for a writer)"
    for slug, target, what in [
        ("link-dev-zero", Path("/dev/zero"), "a symlink to /dev/zero"),
        ("link-etc-passwd", Path("/etc/passwd"), "a symlink to /etc/passwd"),
        ("link-dangling", directory / "does-not-exist.json", "a dangling symlink"),
        ("link-to-directory", directory, "a symlink to the corpus directory itself"),
    ]:
        path = name(slug)
        path.symlink_to(target)
        made[path.name] = what
    foreign = outside / "foreign.json"
    foreign.write_bytes(_dumps(good))
    path = name("link-outside")
    path.symlink_to(foreign)
    made[path.name] = "a symlink to a valid entry outside the corpus directory"
    path = name("link-outside-relative")
    path.symlink_to(Path("..") / outside.name / foreign.name)
    made[path.name] = "a relative symlink out of the corpus directory"
    first, second = name("link-loop-a"), directory / f"h{len(made) + 1:03d}-link-loop-b.json"
    first.symlink_to(second.name)
    second.symlink_to(first.name)
    made[first.name] = made[second.name] = "a symlink loop"
    path = name("socket")
    if len(os.fsencode(path)) < 100:  # AF_UNIX paths are short
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(os.fspath(path))
            made[path.name] = "a UNIX socket"
        except OSError:
            pass
        finally:
            server.close()
    path = name("char-device")
    try:
        os.mknod(path, 0o600 | 0o020000, os.makedev(1, 5))  # S_IFCHR: /dev/zero's numbers
        made[path.name] = "a character device (/dev/zero's numbers)"
    except (OSError, AttributeError):
        pass
    if os.geteuid() != 0:  # root reads through chmod 000
        path = name("unreadable")
        path.write_bytes(_dumps(good))
        path.chmod(0)
        made[path.name] = "a valid entry without read permission"

    # file names that attack whoever shows them
    for slug, what in [
        ("<script>alert(1)<", "HTML in the file name"),
        ("newline\nand\x1b[31mescape", "a newline and a terminal escape in the name"),
    ]:
        path = name(slug)
        path.write_bytes(b"{not json")
        made[path.name] = what
    path = Path(os.fsdecode(os.fsencode(name("x")).replace(b"-x.json", b"-\xff\xfe.json")))
    path.write_bytes(b"{not json")
    made[path.name] = "a file name that is not UTF-8"
    return made


def good_entry() -> dict[str, Any]:
    """A valid entry (a tiny program) to mutate, when none is given."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from harness.case import Case
    from harness.corpus import Entry
    from strategies.model import ProgramBuilder

    b = ProgramBuilder()
    x = b.input((2,), "float32")
    case = Case(b.build(b.node("exp", x)), [np.array([0.5, -1.0], np.float32)], ("cpu-loops",))
    signature = {
        "kind": "mismatch",
        "backend": "cpu-loops",
        "ops": ["exp"],
        "dtype": "float32",
        "oracle": "differential",
    }
    entry = Entry({"case": case.to_dict(), "oracle": "differential"}, signature, case.size)
    entry.detail = "planted"
    return entry.to_json()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/harness/hostile_corpus.py DIRECTORY")
    for file, what in generate(Path(sys.argv[1]), good_entry()).items():
        print(f"{file!r}: {what}")
