"""dulwich's C helpers (``apply_delta``, ``parse_tree``), loaded without
the dulwich package.

``import dulwich._pack`` first runs ``dulwich/__init__.py``, which imports
:mod:`typing` (``ParamSpec``, ``TypeVar``) and more for its deprecation
helpers: about 6 ms of every start-up on these machines, for two functions
whose extension modules import nothing. So the extension module is found
beside the package (``find_spec`` reads no code) and loaded by itself;
when that is not possible (a dulwich whose helpers are not separate
extension modules, or built without them) it is imported the ordinary way,
and the pure-Python fallback is used where dulwich has one. The module is
not entered in ``sys.modules``: a later ``import dulwich._pack`` (dulwich's
own pack code) loads it again, as it would have.

The finder and loader are the import system's own, which
``importlib.machinery`` re-exports: importing that package (and
``importlib.util``, with contextlib and warnings) cost another 2 ms.
"""

from __future__ import annotations

import sys

try:
    import _frozen_importlib_external as _machinery  # what importlib.machinery re-exports
except ImportError:  # pragma: no cover - another Python implementation
    import importlib.machinery as _machinery

__all__ = ["apply_delta", "parse_tree"]


def _load(name: str):
    """dulwich's extension module ``name`` (``_pack``, ``_objects``), or None."""
    full = f"dulwich.{name}"
    if full in sys.modules:
        return sys.modules[full]
    try:
        package = _machinery.PathFinder.find_spec("dulwich")
        locations = package.submodule_search_locations if package is not None else None
        spec = _machinery.PathFinder.find_spec(full, locations) if locations else None
        if spec is not None and isinstance(spec.loader, _machinery.ExtensionFileLoader):
            module = spec.loader.create_module(spec)
            spec.loader.exec_module(module)
            return module
    except (ImportError, OSError):
        pass
    try:
        __import__(full)
    except ImportError:
        return None
    return sys.modules[full]


_pack = _load("_pack")
if _pack is not None:
    apply_delta = _pack.apply_delta
else:  # pragma: no cover - a dulwich built without its extensions
    from dulwich.pack import apply_delta

_objects = _load("_objects")
if _objects is not None:
    parse_tree = _objects.parse_tree
else:  # pragma: no cover - a dulwich built without its extensions
    from dulwich.objects import parse_tree
