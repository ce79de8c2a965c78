"""Which build of the engine runs: the modules compiled with mypyc, or the pure-Python sources.

The wheel (and the editable install of ``make``) compiles the engine's hot modules with mypyc
where a C compiler is present (``setup.py``). A build is a folder ``_compiled/<build>/`` beside
this file, laid out as mypyc lays out a package: its shared library at the top
(``compiled__mypyc``), the modules under ``gostop/engine/``; and a manifest,
``_compiled/manifest.json``, names the current build and holds a SHA-256 digest of every source
it was compiled from. ``gostop.engine`` imports the compiled modules (its ``__path__`` starts
with the build's two folders) only if:

- ``GOSTOP_PURE_PYTHON`` is not set (to anything but ``0`` or the empty string);
- the manifest exists, and is for this Python (its extension-module suffix);
- every source is unchanged since the build (so that an edit to a source file is never shadowed
  by a stale compiled module: until the next build, the sources run);
- every compiled module's file is there.

Otherwise the pure-Python sources run, with the same behaviour; ``BUILD.reason`` says why.
This module is never compiled itself, and imports nothing from the engine.
"""

from __future__ import annotations

import copyreg
import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any, Final, Literal

COMPILED_MODULES: Final = (
    "cards", "dealing", "events", "legality", "observer", "play", "scoring", "settlement", "state", "turns",
    "working",
)
"""The modules the build compiles (``setup.py``): the rules' hot path, a step of ``apply`` or
``Playout`` with its events and frozen states, and a seat's observation vector kept current step by
step (the research environments' hot path)."""
SUPPORT_MODULES: Final = ("actions", "errors", "rng", "rules")
"""Interpreted modules the compiled ones import: type-checked with them, and part of the manifest
(a change to one makes the compiled build stale). ``errors`` stays interpreted (a compiled
exception class loses its attributes), ``actions`` and ``rules`` too (compiled constructors would
raise ``TypeError`` on a wrongly typed field before the engine's own ``MalformedAction`` or
``InvalidRules`` could), and ``rng`` (its 64-bit arithmetic is on Python's long integers either
way, and compiled it is slower)."""
FORMAT: Final = 2
"""Version of the manifest's layout."""
COMPILED_DIR: Final = "_compiled"
MANIFEST: Final = "manifest.json"
MODULES_DIR: Final = "gostop/engine"
"""Where a build's compiled modules are, within its folder (mypyc derives their ``__file__`` so)."""
PURE_ENV: Final = "GOSTOP_PURE_PYTHON"
"""Set (to anything but ``0`` or empty) at build time: compile nothing; at run time: load no compiled module."""


@dataclass(frozen=True, slots=True)
class Build:
    """The engine build in use: ``mypyc`` (compiled modules) or ``python`` (the sources)."""

    kind: Literal["mypyc", "python"]
    reason: str
    """Why this build: the compiler's version, or why the compiled modules are not used."""
    modules: tuple[str, ...] = ()
    """The engine modules imported from compiled extensions (names within ``gostop.engine``)."""
    directory: str = ""
    """The folder of the compiled modules (empty for ``python``)."""
    library: str = ""
    """The folder of their shared library (the build's top folder)."""

    @property
    def path(self) -> list[str]:
        """What ``gostop.engine.__path__`` puts first: the folders of the compiled modules and library."""
        return [self.directory, self.library] if self.compiled else []

    @property
    def compiled(self) -> bool:
        return self.kind == "mypyc"


def pure_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """``GOSTOP_PURE_PYTHON`` asks for the pure-Python engine."""
    return environ.get(PURE_ENV, "") not in ("", "0")


def source_digest(path: Path) -> str:
    """SHA-256 of a source file's bytes, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digests(package_dir: Path) -> dict[str, str]:
    """The digest of each source a build compiles or depends on (``COMPILED_MODULES``, ``SUPPORT_MODULES``)."""
    return {name: source_digest(package_dir / f"{name}.py") for name in (*COMPILED_MODULES, *SUPPORT_MODULES)}


def manifest(package_dir: Path, directory: str, mypyc: str, library: str) -> dict[str, Any]:
    """The manifest of a build of the sources in ``package_dir``, compiled into ``_compiled/<directory>``
    by ``mypyc`` (its version), whose shared library is the extension module ``library``."""
    return {
        "format": FORMAT, "dir": directory, "ext_suffix": ext_suffix(), "mypyc": mypyc,
        "compiled": list(COMPILED_MODULES), "library": library, "sources": digests(package_dir),
    }


def ext_suffix() -> str:
    """The file suffix of this Python's extension modules (``.cpython-311-x86_64-linux-gnu.so``)."""
    return EXTENSION_SUFFIXES[0]


def select(package_dir: Path, environ: Mapping[str, str] = os.environ) -> Build:
    """The build to use for the engine package in ``package_dir`` (see the module's docstring)."""
    if pure_requested(environ):
        return Build("python", f"{PURE_ENV} is set")
    root = package_dir / COMPILED_DIR
    try:
        manifest: dict[str, Any] = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Build("python", "no compiled build (installed without a C compiler, or with GOSTOP_PURE_PYTHON=1)")
    except (OSError, ValueError) as error:
        return Build("python", f"unreadable manifest of the compiled build: {error}")
    if manifest.get("format") != FORMAT:
        return Build("python", f"compiled build of another layout ({manifest.get('format')!r})")
    if manifest.get("ext_suffix") != ext_suffix():
        return Build("python", f"compiled for another Python ({manifest.get('ext_suffix')})")
    for name, digest in sorted(manifest["sources"].items()):
        try:
            now = source_digest(package_dir / f"{name}.py")
        except FileNotFoundError:
            continue  # an installation without sources: nothing can be stale
        if now != digest:
            return Build("python", f"compiled build is stale: {name}.py changed since it was built")
    top = root / manifest["dir"]
    directory = top / MODULES_DIR
    modules = tuple(manifest["compiled"])
    files = [directory / f"{m}{ext_suffix()}" for m in modules] + [top / f"{manifest['library']}{ext_suffix()}"]
    missing = [f.name.removesuffix(ext_suffix()) for f in files if not f.is_file()]
    if missing:
        return Build("python", f"compiled build is incomplete: {', '.join(missing)} missing")
    return Build("mypyc", f"compiled with mypyc {manifest['mypyc']}", modules, str(directory), str(top))


def support_copy_and_pickle(package: str) -> None:
    """``copy``, ``deepcopy`` and ``pickle`` of the frozen dataclasses of ``COMPILED_MODULES`` by
    their fields (``copyreg``), in either build.

    Compiled frozen dataclasses cannot be restored attribute by attribute, the way ``copy`` and
    ``pickle`` restore a slotted dataclass (their ``__setattr__`` refuses, and there is no
    ``__dict__``); rebuilt through their constructor, they can. The interpreted build registers
    the same reducers, so that both behave alike and their pickles are interchangeable.
    """
    for name in COMPILED_MODULES:
        module = sys.modules[f"{package}.{name}"]
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__ and dataclasses.is_dataclass(value):
                copyreg.pickle(value, _by_fields)


def _by_fields(obj: Any) -> tuple[type, tuple[Any, ...]]:
    return type(obj), tuple([getattr(obj, f.name) for f in dataclasses.fields(obj)])
