"""The package's one lazy loader: a package's public names resolve on first access.

A package lists its names as ``{"name": "module:attribute"}`` (or ``"module"`` for a submodule)
and calls :func:`attach`, which returns the module-level ``__getattr__`` and ``__dir__`` (PEP 562),
the way scientific-python's ``lazy_loader.attach`` does, without the dependency. A resolved name
is cached in the package's namespace, so the import happens once. Importing this module imports
nothing beyond the standard library.

>>> import types, sys
>>> pkg = types.ModuleType("demo_pkg")
>>> sys.modules["demo_pkg"] = pkg
>>> pkg.__getattr__, pkg.__dir__ = attach("demo_pkg", {"sqrt": "math:sqrt", "json": "json"})
>>> pkg.sqrt(9.0), pkg.json.__name__, "sqrt" in vars(pkg)
(3.0, 'json', True)
>>> pkg.nope
Traceback (most recent call last):
AttributeError: module 'demo_pkg' has no attribute 'nope'
>>> del sys.modules["demo_pkg"]
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package_name: str,
    mapping: Mapping[str, str],
    *,
    eager: Iterable[str] = (),
    removed: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names load lazily.

    Parameters
    ----------
    package_name : str
        The package's ``__name__``.
    mapping : Mapping[str, str]
        Public name -> ``"module:attribute"``, or ``"module"`` when the name is a submodule.
    eager : Iterable[str]
        Names the package defines itself (listed by ``__dir__`` beside the lazy ones).
    removed : Mapping[str, str] or None
        Name -> message of the ``AttributeError`` raised for a name that moved away.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)`` to assign at the package's module level.
    """
    table = dict(mapping)
    gone = dict(removed or {})
    names = sorted({*table, *eager})

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            if name in gone:
                raise AttributeError(gone[name])
            raise AttributeError(f"module {package_name!r} has no attribute {name!r}")
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        value = getattr(module, attr) if attr else module
        setattr(sys.modules[package_name], name, value)
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
