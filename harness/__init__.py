"""Differential and structural testing of the compiler (and of other compilers through it):
cases, references, oracles, a corpus of minimized findings, and the fuzzing CLI
(``python -m harness``).

Layout: ``case`` (what to try) -> ``run`` (task protocol, isolated worker, references, runner)
-> ``oracles`` (registered by name) -> ``triage`` (one signature, minimization, bisection) ->
``corpus`` (atomic, content-addressed entries) -> ``session`` (drivers, time box, progress) ->
``report`` (page, reproducers) -> ``cli``/``plugin``.

Extensions (a primitive, a backend, an oracle defined outside this package) are modules named in
``HARNESS_PLUGINS`` (comma-separated): every harness process imports them, the isolated workers
included, so what they register is known everywhere.
"""

import importlib
import os


def load_plugins() -> list[str]:
    """Import the modules named in ``HARNESS_PLUGINS``; returns their names."""
    names = [n.strip() for n in os.environ.get("HARNESS_PLUGINS", "").split(",") if n.strip()]
    for name in names:
        importlib.import_module(name)
    return names


load_plugins()
