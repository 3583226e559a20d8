"""Names a package loads from its modules on first use (PEP 562's module __getattr__), so that importing
the package stays cheap: an export process starts without numpy or the file formats."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module


def lazy_names(package: str, homes: Mapping[str, Sequence[str]]) -> tuple[Callable, Callable]:
    """`__getattr__` and `__dir__` for `package`, whose names `homes[module]` live in `package.module`:
    a name is imported from its module when first asked for, then kept in the package."""
    home = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str):
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home[name]}"), name)
        setattr(sys.modules[package], name, value)  # found without __getattr__ from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
