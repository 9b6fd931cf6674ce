"""Hypothesis profiles for the strategies tests and JAX in 64-bit mode (NumPy's dtypes).

``ci`` (the default) is small and derandomized so the suite is fast and repeatable; pick another
with ``HYPOTHESIS_PROFILE=dev`` or ``thorough``. A profile already registered elsewhere wins.
"""

from __future__ import annotations

import os
import sys

import jax
from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
# `strategies` and `compiler` live at the repository root; `strategy_fixtures` lives here.
for _path in (_ROOT, _HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

jax.config.update("jax_enable_x64", True)

_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
_PROFILES = {
    "ci": {"max_examples": 25, "derandomize": True, "database": None},
    "dev": {"max_examples": 200},
    "thorough": {"max_examples": 2000},
}
for _name, _options in _PROFILES.items():
    try:
        settings.get_profile(_name)
    except InvalidArgument:
        settings.register_profile(_name, deadline=None, suppress_health_check=_SLOW, **_options)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
