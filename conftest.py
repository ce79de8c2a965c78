"""pytest, for every test path: the engine's doctests where the engine runs compiled.

``--doctest-modules`` collects the doctests of ``clients/python/gostop/engine/*.py``. Where the
compiled engine is loaded (``gostop.engine.BUILD``, docs/engine-performance.md), the modules it
compiled are extension modules: pytest, importing one by name, would find the extension and not
the source it collected (a collection error), and mypyc keeps no docstrings to run. Those sources
are left to ``make test``'s pure-Python pass (``GOSTOP_PURE_PYTHON=1``), which runs their
doctests; the engine's other modules are collected as usual.
"""

from __future__ import annotations

from pathlib import Path


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if collection_path.suffix != ".py" or collection_path.parent.name != "engine":
        return None
    import gostop.engine

    build = gostop.engine.BUILD
    here = Path(gostop.engine.__file__).resolve().parent
    if build.compiled and collection_path.stem in build.modules and collection_path.parent.resolve() == here:
        return True
    return None
