"""Third-party modules named in `MGBENCH_PLUGINS` (comma-separated module names).

A plugin module declares a framework (`FRAMEWORK`, read by `mgbench.frameworks.registry`) and
may add models to the catalogue (`ADDED_MODELS`, read by `mgbench.core.models`): both read the
modules here, so a plugin reaches every layer that needs it, in every process of a run (the
variable travels with the run's environment), without mgbench importing anything of it but
what it names. Its modules import mgbench's, never the other way round, so importing them on
demand (never while mgbench's own modules are being imported) is safe at any layer.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from mgbench.core.errors import UsageError

PLUGINS_ENV = "MGBENCH_PLUGINS"


def plugin_modules() -> list[ModuleType]:
    """Each module `MGBENCH_PLUGINS` names, imported. A module that is missing or raises while it
    is imported is one UsageError naming it: every verb, `list` included, reads them, and a
    plugin's traceback would hide which setting broke it. A plugin's `SystemExit` is such an
    error too, not the end of mgbench: it would end every verb silently, with its exit code."""
    modules = []
    for name in filter(None, (name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            modules.append(importlib.import_module(name))
        except (Exception, SystemExit) as error:  # a plugin is third-party code: whatever it raises at import
            raise UsageError(
                f"{plugin_named(name)}, which cannot be imported: {type(error).__name__}: {error}"
            ) from None
    return modules


def plugin_named(name: str) -> str:
    """Where a plugin module came from, for the one line that refuses it."""
    return f"{PLUGINS_ENV} names {name!r}"
