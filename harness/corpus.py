"""The corpus: one JSON file per distinct failure, written atomically, replayed forever.

Files are content-addressed: the name carries a hash of the canonical case (program, inputs,
backends, oracle), so two writers of the same content write the same name and two different
findings never share one. Every write goes to a temporary file in the same directory, is
fsynced, then renamed into place, so a crash or ``kill -9`` leaves either the old state or the
new one, never a torn file. Entries are deduplicated by *signature* (kind, backend, op pattern,
dtype, oracle): a new instance replaces an existing one only if it is smaller, and the larger
file is removed only after the smaller one is durable.

Corpus files are untrusted (edited by hand, merged by git, copied from other machines), so the
loader reads them defensively and every failure, whatever its cause, is a ``CorpusError`` naming
the file: only regular files are read (a symlink only if it resolves inside the corpus
directory), opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before reading;
sizes are capped before reading (``MAX_FILE_BYTES``), the JSON's nesting and item count before
parsing (``MAX_DEPTH``, ``MAX_ITEMS``), the stored arrays before inflating them
(``MAX_ARRAY_BYTES``); NaN, infinities, duplicate keys and lone surrogates are refused; and the
entry is checked against ``harness.corpus_schema.ENTRY_SCHEMA``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import secrets
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from strategies.model import digest

from .case import decode_array
from .corpus_schema import ENTRY_SCHEMA, first_problem
from .pending import alive, identity

FORMAT = 1
SUFFIX = ".json"
#: Prefix of ``atomic_write``'s temporary files, followed by the writer's ``pending.identity``.
TEMPORARY = ".tmp-"

#: Largest corpus file read (checked with fstat before reading, and again while reading). Real
#: entries are kilobytes; inline inputs are at most ``case.INLINE_LIMIT`` elements.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Largest total of an entry's decoded input arrays (shape x itemsize, summed over its inputs),
#: checked before anything is inflated or generated; zlib streams inflate with a ``max_length``.
MAX_ARRAY_BYTES = 64 * 1024 * 1024
#: Deepest JSON nesting read (an entry nests about 10 deep); checked before parsing.
MAX_DEPTH = 64
#: Most JSON items (commas and opening brackets outside strings) read; bounds the memory a
#: file of tiny values (``[[],[],...]``) can take once parsed to a small multiple of its size.
MAX_ITEMS = 1_000_000


def _finishes(entry: Entry, rival: Entry) -> bool:
    """Is ``entry`` the minimized form of ``rival``, an unminimized record of the same case?
    A minimization that changes nothing makes the same file name; when the record came from
    another driver (so ``supersedes`` does not name it), the minimized entry was judged no
    smaller and dropped, and the finding stayed unminimized."""
    return not entry.unminimized and rival.unminimized and entry.content_id == rival.content_id


class CorpusError(ValueError):
    """A corpus file that cannot be used: corrupt, from a future format, or malformed."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers only ever see the old or the whole new file.

    The file is created 0644 less the umask, like any file a program writes (``mkstemp``'s 0600
    made every rewritten entry private to its writer).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _flag("O_NOFOLLOW") | _flag("O_CLOEXEC")
    owner = identity()
    for _ in range(100):
        tmp = path.parent / f"{TEMPORARY}{owner}--{secrets.token_hex(8)}{path.suffix}"
        try:
            fd = os.open(tmp, flags, 0o644)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name next to {path}")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(path.parent)


def sweep_temporaries(directory: Path | str) -> list[Path]:
    """Remove the temporary files that dead writers left in ``directory`` and return them.

    A ``kill -9`` between ``atomic_write``'s create and its rename leaves the temporary file
    behind (nothing can catch that signal). Its name carries its writer's identity (host, pid,
    start time), so the next session deletes exactly the leftovers of writers that are gone and
    never a live writer's file in progress. A name without an owner (an older harness) is
    removed once it is an hour old.
    """
    directory = Path(directory)
    removed = []
    try:
        candidates = [p for p in directory.iterdir() if p.name.startswith(TEMPORARY)]
    except OSError:
        return removed
    for path in candidates:
        owner = path.name[len(TEMPORARY) :].partition("--")[0]
        if "--" in path.name and owner.count(".") >= 2:
            stale = not alive(owner)
        else:
            try:
                stale = time.time() - path.lstat().st_mtime > 3600
            except OSError:
                continue
        if stale:
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                pass
    return removed


def _flag(name: str) -> int:
    return getattr(os, name, 0)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# Reading untrusted files

_FILE_TYPES = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}


def _kind_of(mode: int) -> str:
    return _FILE_TYPES.get(stat.S_IFMT(mode), "not a regular file")


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def read_limited(path: Path | str, root: Path | str | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``MAX_FILE_BYTES`` of them.

    A FIFO, socket, device or directory is refused before it is opened (opening a FIFO would
    wait for a writer, reading /dev/zero would never end); a symlink is followed only if it
    resolves inside ``root`` (default: the file's directory), so a corpus file cannot make the
    harness read, and publish in a report, a file from elsewhere. The file is then opened
    without following links and without blocking, and ``fstat`` must show the same regular file.
    """
    path = Path(path)
    try:
        target = os.fspath(path)
        info = os.lstat(target)
        if stat.S_ISLNK(info.st_mode):
            base = os.path.realpath(root if root is not None else path.parent)
            target = os.path.realpath(path)
            if not _inside(target, base):
                raise CorpusError(path, f"a symbolic link to {target}, outside {base}")
            info = os.lstat(target)
        if not stat.S_ISREG(info.st_mode):
            raise CorpusError(path, f"{_kind_of(info.st_mode)}, not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise CorpusError(path, f"{info.st_size} bytes, over the {MAX_FILE_BYTES} byte limit")
        flags = os.O_RDONLY | _flag("O_NOFOLLOW") | _flag("O_NONBLOCK") | _flag("O_NOCTTY")
        fd = os.open(target, flags | _flag("O_CLOEXEC"))
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                info.st_dev,
                info.st_ino,
            ):
                raise CorpusError(path, "changed while it was being opened")
            chunks = []
            left = MAX_FILE_BYTES + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        finally:
            os.close(fd)
    except OSError as error:
        raise CorpusError(path, f"cannot read ({error.strerror or error})") from None
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise CorpusError(path, f"grew past the {MAX_FILE_BYTES} byte limit while being read")
    return data


class _Refused(ValueError):
    """Raised from inside the JSON parser's hooks."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (NaN and infinities are refused)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} is out of range of a double")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate key {key[:60]!r}")
            seen.add(key)
    return result


_BRACKETS = (ord("["), ord("{"), ord("]"), ord("}"))


def _structure(data: bytes) -> tuple[int, int]:
    """(deepest nesting, items) of JSON text, counted outside strings without parsing it.

    JSON's only escapes are backslash pairs, so once they are dropped every remaining quote
    opens or closes a string; the rest is counted in chunks with NumPy, stopping past a limit.
    """
    text = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    array = np.frombuffer(text, np.uint8)
    deepest = depth = items = inside = 0
    step = 1 << 22
    for start in range(0, len(array), step):
        part = array[start : start + step]
        parity = np.bitwise_xor.accumulate((part == ord('"')).view(np.uint8)) ^ inside
        inside = int(parity[-1])
        outside = parity == 0
        opens = ((part == _BRACKETS[0]) | (part == _BRACKETS[1])) & outside
        closes = ((part == _BRACKETS[2]) | (part == _BRACKETS[3])) & outside
        items += int(np.count_nonzero(opens)) + int(np.count_nonzero((part == ord(",")) & outside))
        where = np.flatnonzero(opens | closes)
        if len(where):
            levels = depth + np.cumsum(np.where(opens[where], 1, -1))
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        if deepest > MAX_DEPTH or items > MAX_ITEMS:
            break
    return deepest, items


def _check_strings(value: Any) -> None:
    """Refuse lone surrogates (JSON's "\\ud800"): they cannot be written back as UTF-8, so a
    report or a status update would fail on them later."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            texts: Any = (item,)
        elif isinstance(item, dict):
            texts = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for text in texts:
            if not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise _Refused(f"string {text[:40]!r} holds a lone surrogate") from None


def parse_json(path: Path | str, data: bytes) -> Any:
    """Strict JSON from untrusted bytes: UTF-8 without BOM, bounded nesting and item count, no
    NaN or infinities, no duplicate keys, no lone surrogates; else a CorpusError."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise CorpusError(path, "starts with a byte-order mark (corpus files are plain UTF-8)")
    if not data.strip():
        raise CorpusError(path, "empty file")
    deepest, items = _structure(data)
    if deepest > MAX_DEPTH:
        raise CorpusError(path, f"JSON nested deeper than {MAX_DEPTH} levels")
    if items > MAX_ITEMS:
        raise CorpusError(path, f"JSON has more than {MAX_ITEMS} items")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(path, f"not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
        )
        _check_strings(value)
    except _Refused as error:
        raise CorpusError(path, f"refused JSON ({error})") from None
    except json.JSONDecodeError as error:
        raise CorpusError(path, f"corrupt JSON ({error})") from None
    except (ValueError, RecursionError, MemoryError) as error:  # e.g. a 5000-digit integer
        raise CorpusError(path, f"corrupt JSON ({type(error).__name__}: {error})") from None
    return value


def _check_arrays(where: Path | str, case: dict[str, Any]) -> None:
    """Decode (and drop) every stored input: bad base64, a zlib bomb or a shape that does not
    match the bytes is found at load time, and their total is capped before any is inflated."""
    total = 0
    for data in case["inputs"]:
        total += math.prod(data["shape"]) * np.dtype(data["dtype"]).itemsize
    if total > MAX_ARRAY_BYTES:
        raise CorpusError(where, f"inputs are {total} bytes, over the {MAX_ARRAY_BYTES} limit")
    for index, data in enumerate(case["inputs"]):
        if "generator" in data:
            continue  # shape and recipe checked above; generating it would only cost time
        try:
            decode_array(data, MAX_ARRAY_BYTES)
        except ValueError as error:
            raise CorpusError(where, f"case.case.inputs[{index}]: {error}") from None


@dataclass
class Entry:
    """One finding as stored. ``case`` is what replays it; the rest documents it."""

    case: dict[str, Any]  # {"case": Case.to_dict(), "oracle": name}
    signature: dict[str, Any]  # kind, backend, ops, dtype, oracle
    size: int  # smaller is better when deduplicating (program nodes, then elements)
    status: str = "open"
    detail: str = ""
    reproducer: str = ""
    mlir: dict[str, Any] = field(default_factory=dict)  # module, stage texts and commands
    versions: dict[str, str] = field(default_factory=dict)
    minimization: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)  # stderr, stage of a crash
    path: Path | None = None

    @property
    def content_id(self) -> str:
        return digest(self.case)[:16]

    @property
    def unminimized(self) -> bool:
        """A raw record of a finding, saved before (or without) its minimization."""
        return self.minimization.get("state") == "unminimized"

    @property
    def signature_id(self) -> str:
        return digest(self.signature)[:10]

    @property
    def filename(self) -> str:
        return (
            f"{self.signature.get('kind', 'finding')}-{self.signature_id}-{self.content_id}{SUFFIX}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.content_id,
            "signature_id": self.signature_id,
            "signature": self.signature,
            "status": self.status,
            "size": self.size,
            "case": self.case,
            "detail": self.detail,
            "reproducer": self.reproducer,
            "mlir": self.mlir,
            "versions": self.versions,
            "minimization": self.minimization,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None) -> Entry:
        """The entry in parsed JSON ``data``, checked against the schema and with its inputs
        decoded once; any problem is a CorpusError naming the file and the field."""
        where = path or "<corpus entry>"
        if not isinstance(data, dict):
            raise CorpusError(where, "not a JSON object")
        version = data.get("format")
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
            raise CorpusError(
                where, f"format {version} is newer than this harness understands ({FORMAT})"
            )
        problem = first_problem(data, ENTRY_SCHEMA)
        if problem is not None:
            raise CorpusError(where, f"malformed entry: {problem}")
        _check_arrays(where, data["case"]["case"])
        _check_model(where, data["case"]["case"])
        return cls(
            case=data["case"],
            signature=data["signature"],
            size=data["size"],
            status=data["status"],
            detail=data.get("detail", ""),
            reproducer=data.get("reproducer", ""),
            mlir=data.get("mlir", {}),
            versions=data.get("versions", {}),
            minimization=data.get("minimization", {}),
            evidence=data.get("evidence", {}),
            path=path,
        )


def _check_model(where: Any, case: dict[str, Any]) -> None:
    """A GPT-2 model the case carries (``extra["gpt2"]``) must be well formed and within
    ``strategies.model.gpt2.LIMITS``: a stored million blocks would be allocated on replay."""
    extra = case.get("extra") or {}
    if "gpt2" not in extra:
        return
    from .case import parse_gpt2

    try:
        parse_gpt2(extra["gpt2"])
    except ValueError as error:
        raise CorpusError(where, f"malformed gpt2 model: {error}") from None


def load(path: Path | str, root: Path | str | None = None) -> Entry:
    """Read one corpus file (``root``: the corpus directory symlinks may point into, by default
    the file's own); any problem, whatever its cause, is a CorpusError naming the file."""
    path = Path(path)
    try:
        return Entry.from_json(parse_json(path, read_limited(path, root)), path)
    except CorpusError:
        raise
    except Exception as error:  # noqa: BLE001 - a file must never take its reader down
        raise CorpusError(path, f"unusable entry ({type(error).__name__}: {error})") from None


def printable(text: Any) -> str:
    """``text`` safe to print: control characters and undecodable bytes (a hostile file name's
    newline, escape sequence or invalid UTF-8) shown as Python escapes."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@functools.cache
def _machine_prefixes() -> list[tuple[str, str]]:
    """This machine's paths (longest first) and what a corpus file says instead."""
    import site

    places = [(p, "<site-packages>") for p in site.getsitepackages()]
    places.append((site.getusersitepackages(), "<site-packages>"))
    places += [(p, "<python>") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    places.append((str(Path(__file__).resolve().parent.parent), "<project>"))
    places.append((str(Path.home()), "~"))
    found: dict[str, str] = {}
    for place, name in places:  # the first name wins: an installed harness's parent is
        if len(place) > 1:  # site-packages, which stays "<site-packages>", not "<project>"
            found.setdefault(place.rstrip(os.sep) + os.sep, name + "/")
    return sorted(found.items(), key=lambda item: -len(item[0]))


def portable(value: Any) -> Any:
    """``value`` with this machine's paths (site-packages, the Python prefix, the project,
    the home directory) replaced by placeholders: a corpus file is shared, the paths are not."""
    if isinstance(value, str):
        for prefix, name in _machine_prefixes():
            value = value.replace(prefix, name)
        return value
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v) for v in value]
    return value


class Corpus:
    """A directory of entries."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def files(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob(f"*{SUFFIX}") if not p.name.startswith("."))

    def entries(self) -> Iterator[Entry | CorpusError]:
        """Every entry, or the error for a file that cannot be used (so the rest still load)."""
        for path in self.files():
            try:
                yield load(path, self.directory)
            except CorpusError as error:
                yield error

    def by_signature(self, signature_id: str) -> list[Entry]:
        found = []
        for item in self.entries():
            if isinstance(item, Entry) and item.signature_id == signature_id:
                found.append(item)
        return found

    def signatures(self) -> set[str]:
        return {e.signature_id for e in self.entries() if isinstance(e, Entry)}

    def save(self, entry: Entry, supersedes: tuple[Path, ...] = ()) -> tuple[bool, Path]:
        """Store ``entry`` unless an entry of the same signature is at least as small.

        ``supersedes`` names files this entry replaces whatever their size (the unminimized
        record of the same finding). Returns (stored, path of the entry that now represents
        this signature).
        """
        rivals = self.by_signature(entry.signature_id)
        key = (entry.size, entry.content_id)
        for rival in rivals:
            if rival.path in supersedes:
                continue
            if rival.path is not None and (rival.size, rival.content_id) <= key:
                if _finishes(entry, rival):
                    continue  # the minimized form of that very case: it replaces the record
                return False, rival.path
        path = self.directory / entry.filename
        data = entry.to_json()
        for name in ("detail", "reproducer", "mlir", "evidence"):  # what documents, not the case
            data[name] = portable(data[name])
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        entry.path = path
        for rival in rivals:
            if rival.path is not None and rival.path != path and rival.path.exists():
                try:
                    rival.path.unlink()
                except FileNotFoundError:
                    pass
        return True, path

    def update(self, entry: Entry) -> None:
        """Rewrite an entry in place (e.g. its status flipped to fixed)."""
        if entry.path is None:
            raise ValueError("entry has no path")
        atomic_write(entry.path, json.dumps(entry.to_json(), indent=1, sort_keys=True) + "\n")
