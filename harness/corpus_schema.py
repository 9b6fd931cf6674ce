"""The JSON Schema of a corpus entry (draft 2020-12 style), and the small validator that checks it.

Corpus files are untrusted input: they are edited by hand, merged by git, written by older and
newer harnesses. ``harness.corpus`` checks every entry against ``ENTRY_SCHEMA`` when it loads it,
so a wrong type anywhere is one ``CorpusError`` naming the file and the field instead of a
``TypeError`` deep inside a fuzz session. The validator is written here rather than imported
(``jsonschema``) to keep the harness free of one more dependency; it implements exactly the
keywords listed in ``KEYWORDS`` and a test checks that the schema uses no others.

Choices that are not obvious:

- ``signature.kind`` is a *pattern*, not an enum: it becomes part of the file name (so no ``/``
  or ``..``), and oracles registered by plugins add kinds of their own; the kinds the built-in
  oracles report are listed under ``examples``.
- ``status`` and ``minimization.state`` are enums; the top level, ``signature``, ``case`` and
  every stored array reject unknown fields (a typo is an error, not a silent default), while the
  documentation bags (``mlir``, ``evidence``, ``minimization``) type the fields they know and
  accept others.
- The nesting depth, the file size and the decoded size of arrays are limits of the loader
  (``harness.corpus.MAX_*``), not of the schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from compiler.primitives import SPELLINGS

from .run.layouts import DEFAULT as LAYOUT_DEFAULT
from .run.layouts import LAYOUTS

#: The validation keywords implemented by ``problems``; the schema uses no others.
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "anyOf",
        "minimum",
        "maximum",
        "pattern",
        "maxLength",
        "maxItems",
    }
)
#: Keywords that only annotate (ignored by validation, as in JSON Schema).
ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
)

STATUSES = ("open", "fixed", "regressed")
#: How a stored program may be written, and the layouts its inputs may be handed over in.
INPUT_LAYOUTS = (LAYOUT_DEFAULT, *LAYOUTS)
#: The plain numeric dtypes a stored array may have (no objects, strings, structured or void).
ARRAY_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",  # ml_dtypes (harness/case.py EXTENSION_DTYPES)
    "float32",
    "float64",
    "complex64",
    "complex128",
)
INT64_MAX = 2**63 - 1

_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_COUNT = {"type": "integer", "minimum": 0, "maximum": INT64_MAX}

SIGNATURE: dict[str, Any] = {
    "description": "what makes two findings the same failure (hashed into the file name)",
    "type": "object",
    "required": ["kind", "backend", "ops", "dtype", "oracle"],
    "properties": {
        "kind": {
            "type": "string",
            "pattern": "^[a-z][a-z0-9_-]*$",
            "maxLength": 64,
            "examples": [
                "mismatch",
                "wrong-dtype",
                "wrong-shape",
                "wrong-error",
                "verifier-error",
                "pass-failure",
                "internal-error",
                "crash",
                "hang",
                "causality",
                "nondeterministic",
                "retrace",
                "aliasing",
                "metamorphic",
                "spec",
                "not-vectorized",
                "not-blas",
                "leak",
                "bad-free",
                "overrun",
                "input-written",
                "aliased-input",
                "uninstrumented",
                "stale-specialization",
                "race",
                "nested",
                "trees",
            ],
        },
        "backend": _STRING,
        "backends": _STRINGS,  # present when a name holds "+" (iree-cpu+host): "backend" is lossy
        "ops": _STRINGS,
        "dtype": _STRING,
        "oracle": _STRING,
        # present (true) for a failure of a layer above the program and backends (the @jit
        # cache): one entry covers it whatever the ops, dtype and backend
        "program_free": {"type": "boolean"},
        # present for a program-free failure told apart by what it depends on (a jit
        # sequence's change: "dtype", "static", "structure", ...)
        "facet": _STRING,
    },
    "additionalProperties": False,
}

#: One stored input array: inline bytes (little-endian, zlib, base64) or a generator recipe.
ARRAY: dict[str, Any] = {
    "type": "object",
    "required": ["dtype", "shape"],
    "properties": {
        "dtype": {"enum": list(ARRAY_DTYPES)},
        "shape": {"type": "array", "items": _COUNT, "maxItems": 32},
        "zlib": _STRING,
        "generator": {
            "type": "object",
            "required": ["seed", "scale"],
            "properties": {"seed": _COUNT, "scale": {"type": "number"}},
            "additionalProperties": False,
        },
    },
    "anyOf": [{"required": ["zlib"]}, {"required": ["generator"]}],
    "additionalProperties": False,
}

PROGRAM: dict[str, Any] = {
    "description": "strategies.model.Program.to_dict(); its ops and attributes are checked when "
    "the case is decoded for a replay",
    "type": "object",
    "required": ["format", "version", "inputs", "nodes", "output"],
    "properties": {
        "format": _STRING,
        "version": {"type": "integer", "minimum": 1},
        "inputs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["shape", "dtype"],
                "properties": {
                    "shape": {"type": "array", "items": _COUNT},
                    "dtype": _STRING,
                    "bound": {"type": ["integer", "null"]},
                },
                "additionalProperties": False,
            },
        },
        "nodes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["op", "args"],
                "properties": {
                    "op": _STRING,
                    "args": {"type": "array", "items": {"type": "object"}},
                    "attrs": {"type": "object"},
                },
                "additionalProperties": False,
            },
        },
        "output": {"type": "object"},
    },
    "additionalProperties": False,
}

INVALID_PROGRAM: dict[str, Any] = {
    "description": "strategies.model.InvalidProgram.to_dict(): a valid program plus a violation",
    "type": "object",
    "required": ["program", "violation"],
    "properties": {
        "program": PROGRAM,
        "violation": _STRING,
        "node": {"type": ["object", "null"]},
        "inputs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "shape": {"type": "array", "items": {"type": "integer"}},
                    "dtype": _STRING,
                    "bound": {"type": ["integer", "null"]},
                },
            },
        },
    },
    "additionalProperties": False,
}

CASE: dict[str, Any] = {
    "description": "harness.case.Case.to_dict() (format 1 wrote one 'check' name, still read)",
    "type": "object",
    "required": ["inputs"],
    "properties": {
        "inputs": {"type": "array", "items": ARRAY},
        "backends": _STRINGS,
        "checks": _STRINGS,
        "check": _STRING,
        "origin": _STRING,
        "extra": {
            "description": "case options: a jit sequence, a GPT-2 model (gpt2: its spec and "
            "seed, checked on load), a value regime, how the program is written (spelling) and "
            "the memory layout each input is handed over in",
            "type": "object",
            "properties": {
                "spelling": {"enum": list(SPELLINGS)},
                "layouts": {"type": "array", "items": {"enum": list(INPUT_LAYOUTS)}},
            },
        },
        "workarounds_off": {
            "description": "compiler workarounds for upstream bugs turned off while the case "
            "compiles (compiler/workarounds.py); a name no longer registered is off for good",
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*$", "maxLength": 64},
            "maxItems": 32,
        },
        "program": PROGRAM,
        "invalid": INVALID_PROGRAM,
    },
    "anyOf": [{"required": ["program"]}, {"required": ["invalid"]}],
    "additionalProperties": False,
}

ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "corpus entry",
    "description": "one finding as stored in corpus/<kind>-<signature>-<content>.json",
    "type": "object",
    "required": ["format", "signature", "status", "size", "case"],
    "properties": {
        "format": {"type": "integer", "minimum": 1},
        "id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "signature_id": {"type": "string", "pattern": "^[0-9a-f]{10}$"},
        "signature": SIGNATURE,
        "status": {"enum": list(STATUSES)},
        "size": _COUNT,
        "case": {
            "type": "object",
            "required": ["case", "oracle"],
            "properties": {"case": CASE, "oracle": _STRING},
            "additionalProperties": False,
        },
        "detail": _STRING,
        "reproducer": _STRING,
        "mlir": {
            "description": "the failing backend's stages: texts, portable commands, the module",
            "type": "object",
            "properties": {
                "backend": _STRING,
                "module": _STRING,
                "stages": _STRING_MAP,
                "commands": _STRING_MAP,
                "failing_stage": _STRING,
                "failing_pipeline": _STRING,
                "error": _STRING,
                "stderr": _STRING,
                "note": _STRING,
                "mlir_opt": _STRING,
            },
        },
        "versions": _STRING_MAP,
        "minimization": {
            "type": "object",
            "properties": {
                "state": {"enum": ["unminimized", "minimized"]},
                "steps": _STRINGS,
                "evaluations": _COUNT,
                "seconds": {"type": "number", "minimum": 0},
                "original_nodes": _COUNT,
                "nodes": _COUNT,
                "reproduced": {"type": "boolean"},
                "earlier": _COUNT,
                "pipeline_bisection": {"type": "object"},
                "found_as": SIGNATURE,
            },
        },
        "evidence": {
            "type": "object",
            "properties": {
                "stderr": _STRING,
                "stage": _STRING,
                # The cases the failure needs run first in its process (``case.Earlier``).
                "earlier": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["case"],
                        "properties": {
                            "case": CASE,
                            "only": _STRINGS,
                            "fresh": {"type": "boolean"},
                        },
                        "additionalProperties": False,
                    },
                },
            },
        },
    },
    "additionalProperties": False,
}


# --------------------------------------------------------------------------------------------
# The validator


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``bool`` is not an integer here)."""
    if isinstance(value, bool):
        return "boolean"
    for name in ("object", "array", "string", "integer", "number", "null"):
        if isinstance(value, _TYPES[name]):
            return name
    return type(value).__name__


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262: "$" matches only at the very end (Python's also matches
    # before a final newline, which would let "crash\n" through).
    return re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(where: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{_short(key)}]"


def problems(value: Any, schema: dict[str, Any], where: str = "") -> Iterator[str]:
    """Every way ``value`` breaks ``schema``, each as "field: problem" (outermost first)."""
    name = where or "entry"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_is(value, t) for t in allowed):
            yield f"{name}: expected {' or '.join(allowed)}, got {json_type(value)}"
            return
    if "enum" in schema and not any(
        type(value) is type(choice) and value == choice for choice in schema["enum"]
    ):
        yield f"{name}: {_short(value)} is not one of {', '.join(map(str, schema['enum']))}"
        return
    if _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{name}: {_short(value)} is below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{name}: {_short(value)} is above the maximum {schema['maximum']}"
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            yield f"{name}: longer than {schema['maxLength']} characters"
        elif "pattern" in schema and not _regex(schema["pattern"]).search(value):
            yield f"{name}: {_short(value)} does not match {schema['pattern']}"
    if isinstance(value, list) and len(value) > schema.get("maxItems", len(value)):
        yield f"{name}: more than {schema['maxItems']} items"
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from problems(item, schema["items"], f"{where}[{index}]")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                yield f"{_field(where, key)}: missing"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                yield from problems(item, properties[key], _field(where, key))
            elif extra is False:
                yield f"{_field(where, key)}: unknown field"
            elif isinstance(extra, dict):
                yield from problems(item, extra, _field(where, key))
    if "anyOf" in schema:
        branches = [next(problems(value, s, where), None) for s in schema["anyOf"]]
        if all(branches):
            yield " or ".join(str(b) for b in branches)


def first_problem(value: Any, schema: dict[str, Any] = ENTRY_SCHEMA) -> str | None:
    """The first way ``value`` breaks ``schema``, or None if it conforms."""
    return next(problems(value, schema), None)


def keywords_used(schema: Any) -> set[str]:
    """Every keyword ``schema`` uses (so a test can check the validator implements them all)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key == "properties":
                for sub in value.values():
                    found |= keywords_used(sub)
            elif key in ("items", "additionalProperties"):
                found |= keywords_used(value)
            elif key == "anyOf":
                for sub in value:
                    found |= keywords_used(sub)
    return found


__all__ = [
    "ANNOTATIONS",
    "ARRAY_DTYPES",
    "ENTRY_SCHEMA",
    "KEYWORDS",
    "STATUSES",
    "first_problem",
    "json_type",
    "keywords_used",
    "problems",
]
