"""Random one-site mutants of Python source, found with ``ast`` and written by byte offsets.

A site is a node plus the exact byte span to rewrite (an operator token, a literal, a statement),
so a mutant keeps the file's formatting and its diff is one change. Offsets are UTF-8 bytes, as
``ast`` reports them. Every mutant is re-parsed: one that is not valid Python, or parses to the
same tree, is never drawn.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from dataclasses import dataclass
from pathlib import Path

OPERATORS = (
    "comparison",  # < -> <=, == -> !=, in -> not in ...
    "arithmetic",  # + -> -, * -> /, += -> -= ...
    "boolean",  # and <-> or
    "int-constant",  # n -> n +- 1
    "bool-constant",  # True <-> False
    "swap-arguments",  # f(a, b) -> f(b, a)
    "swap-tuple",  # (a, b) -> (b, a)
    "drop-negation",  # not x -> x, -x -> x, ~x -> x
    "remove-statement",  # an expression statement or assignment -> pass
    "mlir-op",  # "arith.addf" -> "arith.subf", "olt" -> "ole", "math.exp" -> "math.log"
)

COMPARISON = {
    "<": ("<=", ">"), "<=": ("<", ">="), ">": (">=", "<"), ">=": (">", "<="),
    "==": ("!=",), "!=": ("==",), "is": ("is not",), "is not": ("is",),
    "in": ("not in",), "not in": ("in",),
}  # fmt: skip
ARITHMETIC = {
    "+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",), "//": ("*", "/"), "%": ("//",),
    "**": ("*",), "<<": (">>",), ">>": ("<<",), "&": ("|",), "|": ("&",), "^": ("&",),
}  # fmt: skip
_SIBLINGS = (
    "arith.addf arith.subf arith.mulf arith.divf arith.maximumf arith.minimumf arith.remf",
    "arith.addi arith.subi arith.muli arith.divsi arith.remsi arith.maxsi arith.minsi "
    "arith.maxui arith.minui arith.andi arith.ori arith.xori",
    "arith.extf arith.truncf",
    "arith.fptosi arith.fptoui",
    "arith.sitofp arith.uitofp",
    "arith.extui arith.extsi",
    "math.exp math.log math.log2 math.sqrt math.rsqrt math.tanh math.sin math.cos math.absf "
    "math.exp2 math.floor math.ceil",
)
FLOAT_PREDICATES = "oeq one olt ole ogt oge ueq une ult ule ugt uge".split()
INT_PREDICATES = "eq ne slt sle sgt sge ult ule ugt uge".split()
SIBLINGS = {name: group.split() for group in _SIBLINGS for name in group.split()}

_OP_NAME = re.compile(rb"\b(?:arith|math)\.[a-z0-9_]+\b")
_PREDICATE = re.compile(rb"\barith\.cmp([fi])\s+([a-z]+)\b")
_CMP_TOKEN = re.compile(rb"<=|>=|==|!=|<|>|\bis\s+not\b|\bnot\s+in\b|\bis\b|\bin\b")
_BIN_TOKEN = re.compile(rb"\*\*|//|<<|>>|[-+*/%@&|^]")
_AUG_TOKEN = re.compile(rb"(\*\*|//|<<|>>|[-+*/%@&|^])=")
_BOOL_TOKEN = re.compile(rb"\b(?:and|or)\b")
_COMMENT = re.compile(rb"#[^\n]*")


@dataclass(frozen=True)
class Site:
    """Where one operator can rewrite ``source[start:end]``, and what it may write there."""

    operator: str
    line: int
    start: int
    end: int
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Mutant:
    """One change in one file: ``old`` (at byte ``start``) replaced by ``new``."""

    id: str
    file: str  # relative to the repository, e.g. "compiler/lower/emit.py"
    line: int
    operator: str
    start: int
    old: str
    new: str

    def apply(self, source: str) -> str:
        """The mutated source; refuses a source that is not the one the mutant was drawn from."""
        data = source.encode()
        old = self.old.encode()
        if data[self.start : self.start + len(old)] != old:
            raise ValueError(f"{self.id}: {self.file} changed since the mutant was drawn")
        return (data[: self.start] + self.new.encode() + data[self.start + len(old) :]).decode()

    def diff(self, source: str) -> str:
        return "".join(
            difflib.unified_diff(
                source.splitlines(keepends=True),
                self.apply(source).splitlines(keepends=True),
                f"a/{self.file}",
                f"b/{self.file}",
                n=2,
            )
        )

    @property
    def module(self) -> str:
        """The dotted module name (imported by the stillborn check)."""
        parts = list(Path(self.file).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Sites(ast.NodeVisitor):
    """Every mutation site of one module (docstrings, annotations and ``__all__`` left out)."""

    def __init__(self, source: bytes) -> None:
        self.src = source
        starts = [0]
        for line in source.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        self.starts = starts
        self.sites: list[Site] = []
        self.skip: set[int] = set()

    # ---- positions

    def pos(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.pos(node.lineno, node.col_offset)
        return start, self.pos(node.end_lineno, node.end_col_offset)

    def add(self, operator: str, node: ast.AST, start: int, end: int, choices: tuple) -> None:
        if choices:
            self.sites.append(Site(operator, node.lineno, start, end, tuple(choices)))

    def token(self, operator: str, node: ast.AST, a: int, b: int, pattern, table) -> None:
        """The operator token between two operands (comments and parentheses skipped)."""
        gap = _COMMENT.sub(lambda m: b" " * len(m.group(0)), self.src[a:b])
        match = pattern.search(gap)
        if match:
            found = match.group(1 if pattern is _AUG_TOKEN else 0)
            key = b" ".join(found.split()).decode()
            at = a + match.start()
            self.add(operator, node, at, at + len(found), table.get(key, ()))

    # ---- traversal

    def generic_visit(self, node: ast.AST) -> None:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            self.skip.add(id(body[0]))
        for name in ("annotation", "returns"):
            if getattr(node, name, None) is not None:
                self.skip.update(id(n) for n in ast.walk(getattr(node, name)))
        super().generic_visit(node)

    def visit(self, node: ast.AST) -> None:
        if id(node) in self.skip:
            return
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return
        method = getattr(self, "site_" + type(node).__name__, None)
        if method is not None and hasattr(node, "end_col_offset"):
            method(node)
        self.generic_visit(node)

    def site_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for left, right in zip(operands, operands[1:], strict=False):
            self.token("comparison", node, self.span(left)[1], self.span(right)[0],
                       _CMP_TOKEN, COMPARISON)  # fmt: skip

    def site_BinOp(self, node: ast.BinOp) -> None:
        if not (_is_str(node.left) or _is_str(node.right)):  # str + str -> str - str: TypeError
            a, b = self.span(node.left)[1], self.span(node.right)[0]
            self.token("arithmetic", node, a, b, _BIN_TOKEN, ARITHMETIC)

    def site_AugAssign(self, node: ast.AugAssign) -> None:
        if not _is_str(node.value):
            a, b = self.span(node.target)[1], self.span(node.value)[0]
            self.token("arithmetic", node, a, b, _AUG_TOKEN, ARITHMETIC)
        self.remove(node)

    def site_BoolOp(self, node: ast.BoolOp) -> None:
        for left, right in zip(node.values, node.values[1:], strict=False):
            a, b = self.span(left)[1], self.span(right)[0]
            self.token("boolean", node, a, b, _BOOL_TOKEN, {"and": ("or",), "or": ("and",)})

    def site_Constant(self, node: ast.Constant) -> None:
        start, end = self.span(node)
        if isinstance(node.value, bool):
            self.add("bool-constant", node, start, end, (str(not node.value),))
        elif isinstance(node.value, int):
            self.add("int-constant", node, start, end, (str(node.value + 1), str(node.value - 1)))
        elif isinstance(node.value, str):
            self.strings(node)

    def site_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.strings(node)
        self.skip.update(id(n) for n in ast.walk(node) if n is not node)  # 3.11: bad positions

    def strings(self, node: ast.AST) -> None:
        start, end = self.span(node)
        segment = self.src[start:end]
        for m in _OP_NAME.finditer(segment):
            name = m.group(0).decode()
            others = tuple(s for s in SIBLINGS.get(name, ()) if s != name)
            self.add("mlir-op", node, start + m.start(), start + m.end(), others)
        for m in _PREDICATE.finditer(segment):
            group = FLOAT_PREDICATES if m.group(1) == b"f" else INT_PREDICATES
            self.predicate(node, start + m.start(2), m.group(2).decode(), group)
        value = getattr(node, "value", None)
        if isinstance(value, str) and value in FLOAT_PREDICATES + INT_PREDICATES:
            group = FLOAT_PREDICATES if value in FLOAT_PREDICATES else INT_PREDICATES
            self.predicate(node, start + segment.index(value.encode()), value, group)

    def predicate(self, node: ast.AST, at: int, name: str, group: list[str]) -> None:
        if name in group:
            self.add("mlir-op", node, at, at + len(name), tuple(p for p in group if p != name))

    def site_Call(self, node: ast.Call) -> None:
        self.swap("swap-arguments", node, node.args)

    def site_Tuple(self, node: ast.Tuple) -> None:
        self.swap("swap-tuple", node, node.elts)

    def swap(self, operator: str, node: ast.AST, items: list[ast.expr]) -> None:
        for left, right in zip(items, items[1:], strict=False):
            if isinstance(left, ast.Starred) or isinstance(right, ast.Starred):
                continue
            (a0, a1), (b0, b1) = self.span(left), self.span(right)
            if a1 <= b0 and self.src[a0:a1] != self.src[b0:b1]:
                swapped = self.src[b0:b1] + self.src[a1:b0] + self.src[a0:a1]
                self.add(operator, node, a0, b1, (swapped.decode(),))

    def site_UnaryOp(self, node: ast.UnaryOp) -> None:
        start, _ = self.span(node)
        token = {ast.Not: b"not", ast.USub: b"-", ast.Invert: b"~"}.get(type(node.op))
        if token and self.src.startswith(token, start):
            end = start + len(token)
            while self.src[end : end + 1] == b" ":
                end += 1
            self.add("drop-negation", node, start, end, ("",))

    def site_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):  # docstrings, ``...``
            self.remove(node)

    def site_Assign(self, node: ast.Assign) -> None:
        self.remove(node)

    def site_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.remove(node)

    def remove(self, node: ast.stmt) -> None:
        self.add("remove-statement", node, *self.span(node), ("pass",))


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and _is_str(node.value)


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def sites(source: str) -> list[Site]:
    """Every mutation site of ``source``, in source order."""
    visitor = _Sites(source.encode())
    visitor.visit(ast.parse(source))
    return sorted(visitor.sites, key=lambda s: (s.start, s.end, s.operator))


def mutant_at(source: str, file: str, site: Site, choice: str, id: str = "m") -> Mutant | None:
    """The mutant writing ``choice`` at ``site``; None unless it parses to a different tree."""
    data = source.encode()
    mutant = Mutant(id, file, site.line, site.operator, site.start,
                    data[site.start : site.end].decode(), choice)  # fmt: skip
    try:
        changed = ast.dump(ast.parse(mutant.apply(source))) != ast.dump(ast.parse(source))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return None
    return mutant if changed else None


def draw(sources: dict[str, str], count: int, seed: int) -> list[Mutant]:
    """``count`` distinct mutants over ``sources`` (path -> text): an operator uniformly among
    those with sites left, then a site and a replacement uniformly (so rare operators such as
    ``mlir-op`` are not drowned by the thousands of integer constants)."""
    rng = random.Random(seed)
    pool: dict[str, list[tuple[str, Site]]] = {op: [] for op in OPERATORS}
    for path in sorted(sources):
        for site in sites(sources[path]):
            pool[site.operator].append((path, site))
    drawn: list[Mutant] = []
    while len(drawn) < count:
        live = [op for op in OPERATORS if pool[op]]
        if not live:
            break
        candidates = pool[rng.choice(live)]
        path, site = candidates.pop(rng.randrange(len(candidates)))
        for choice in rng.sample(site.choices, len(site.choices)):
            mutant = mutant_at(sources[path], path, site, choice, f"m{len(drawn) + 1:02d}")
            if mutant is not None:
                drawn.append(mutant)
                break
    return drawn


#: Files no mutant is drawn in (the GPT-2 model, left out while no case reached it, is in: the
#: sample runs GPT-2 models, ``equivalence.MODELS``).
EXCLUDED: tuple[str, ...] = ()


def mutable_files(root: Path, pattern: str = "compiler/**/*.py") -> list[str]:
    """The files ``pattern`` selects under ``root`` (relative paths), less the ``__main__``
    entry points and test or demo code."""
    out = []
    for path in sorted(root.glob(pattern)):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if (
            rel in EXCLUDED
            or parts[-1] == "__main__.py"
            or "__pycache__" in parts
            or any(p.startswith(("test", "demo", "toy")) for p in parts)
        ):
            continue
        out.append(rel)
    return out


__all__ = ["OPERATORS", "Mutant", "Site", "draw", "mutable_files", "mutant_at", "sites"]
