"""The build steps pyproject.toml cannot declare: generating ``gostop.v1`` from proto/, and compiling
the engine's hot modules with mypyc.

setuptools reads everything else from pyproject.toml. A wheel gets the generated modules in its
build directory; an editable install gets them in the source tree (clients/python/gostop/v1,
ignored by git), where ``make`` also refreshes them when a .proto file changes.

The engine (docs/engine-performance.md, "The compiled engine"): where a C compiler and the Python
headers are present and ``GOSTOP_PURE_PYTHON`` is not set, the modules of
``engine/native.py``'s ``COMPILED_MODULES`` are compiled with mypyc (a build requirement) into
``gostop/engine/_compiled/``, with a manifest that ``gostop.engine`` reads at import: it uses the
compiled modules only while their sources are unchanged. The wheel is then specific to the
platform and the Python version (as black's and mypy's are); without a compiler it is the
pure-Python engine, which behaves the same. A compiler that is present but fails stops the build
(``GOSTOP_PURE_PYTHON=1`` builds without it). ``make`` rebuilds the editable install's compiled
engine when a source changes: ``python -c 'import setup; setup.build_engine_in_tree()'``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ENGINE = HERE / "engine"
GROUP = "gostop.engine.compiled"
"""mypyc's name for the compiled modules' shared library (the extension ``compiled__mypyc``, found,
as the modules are, in the build's folder on ``gostop.engine.__path__``)."""


def _load(name: str, path: Path) -> ModuleType:
    """A module of the source tree by its path (the build imports nothing from the package)."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _generate(out: Path) -> list[Path]:
    files: list[Path] = _load("gen_proto", HERE / "scripts" / "gen_proto.py").generate(out, HERE / "proto")
    return files


def _native() -> ModuleType:
    """``engine/native.py``: the compiled modules' names, the manifest's layout and its digests."""
    return _load("gostop_build_native", ENGINE / "native.py")


# ------------------------------------------------------------------------ the engine, compiled


def why_not_compiled() -> str | None:
    """Why this build leaves the engine pure Python (None: it compiles it)."""
    native = _native()
    if native.pure_requested():
        return f"{native.PURE_ENV} is set"
    if platform.python_implementation() != "CPython":
        return f"mypyc compiles for CPython, not {platform.python_implementation()}"
    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if os.name != "nt" and shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h)"
    return None


def _fresh(package: Path, mypyc_version: str) -> bool:
    """The compiled build under ``package`` is of its current sources, this Python and this mypyc."""
    native = _native()
    try:
        manifest = json.loads((package / native.COMPILED_DIR / native.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(
        manifest.get("mypyc") == mypyc_version and manifest.get("sources") == native.digests(package)
        and manifest.get("compiled") == list(native.COMPILED_MODULES) and native.select(package, {}).compiled
    )


def compile_engine(package: Path, *, if_stale: bool = False) -> list[Path]:
    """Compile the engine sources in ``package`` (a ``gostop/engine`` folder) into its ``_compiled``
    folder; return the files written. ``if_stale``: nothing to do when the build there is fresh.

    mypyc compiles a copy of the sources (its C files and objects go to a temporary folder). The
    new build gets a folder of its own and the manifest is replaced last, atomically, so that a
    process starting meanwhile loads the old build or the new one, never a mix; older builds are
    removed but the one before (a process may still be importing from it).
    """
    from mypy.version import __version__ as mypyc_version

    native = _native()
    if if_stale and _fresh(package, mypyc_version):
        return []
    root = package / native.COMPILED_DIR
    with tempfile.TemporaryDirectory(prefix="gostop-mypyc-") as tmp:
        work = Path(tmp)
        src = work / "src" / "gostop" / "engine"
        src.mkdir(parents=True)
        (src.parent / "__init__.py").write_text("")
        (src / "__init__.py").write_text("")
        for name in (*native.COMPILED_MODULES, *native.SUPPORT_MODULES):
            shutil.copyfile(package / f"{name}.py", src / f"{name}.py")
        # The manifest is of the copies compiled (a source edited meanwhile makes the build stale).
        key = json.dumps([native.FORMAT, native.digests(src), native.ext_suffix(), mypyc_version])
        final = root / f"b-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        manifest = native.manifest(src, final.name, mypyc_version, GROUP.rpartition(".")[2] + "__mypyc")
        built = _mypyc(work, [src / f"{n}.py" for n in native.COMPILED_MODULES],
                       [src / f"{n}.py" for n in native.SUPPORT_MODULES])
        root.mkdir(exist_ok=True)
        (root / ".gitignore").write_text("# The compiled engine (setup.py): built, never committed.\n*\n")
        staging = root / f".{final.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        (staging / native.MODULES_DIR).mkdir(parents=True)
        for path in built:  # the library at the top, as mypyc expects it, the modules in gostop/engine
            library = path.name == manifest["library"] + native.ext_suffix()
            shutil.copyfile(path, staging / path.name if library else staging / native.MODULES_DIR / path.name)
        if final.is_dir():  # built already, by another process (its folder is complete: it was renamed)
            shutil.rmtree(staging)
        else:
            staging.rename(final)
    pending = root / f".{native.MANIFEST}.{os.getpid()}"
    pending.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(pending, root / native.MANIFEST)
    older = sorted((p for p in root.glob("b-*") if p != final), key=lambda p: p.stat().st_mtime)
    for old in older[:-1]:
        shutil.rmtree(old, ignore_errors=True)
    return [root / native.MANIFEST, root / ".gitignore", *sorted(p for p in final.rglob("*") if p.is_file())]


def _mypyc(work: Path, compiled: list[Path], support: list[Path]) -> list[Path]:
    """mypyc over ``compiled`` (type-checked with ``support``, ``--strict``); the extension files."""
    from mypyc.build import mypycify
    from setuptools.command.build_ext import build_ext

    options = ["--config-file=", "--strict", "--cache-dir", str(work / "mypy-cache")]
    try:
        extensions = mypycify(
            [*options, *map(str, compiled), *map(str, support)], only_compile_paths=list(map(str, compiled)),
            opt_level="3", debug_level="0", group_name=GROUP, target_dir=str(work / "c"),
        )
    except SystemExit as stop:  # mypyc reports the errors, then exits
        raise RuntimeError(
            f"mypyc could not compile the engine ({stop}); GOSTOP_PURE_PYTHON=1 builds the pure-Python engine"
        ) from None
    command = build_ext(Distribution({"ext_modules": extensions, "script_name": "setup.py"}))
    command.build_lib, command.build_temp = str(work / "lib"), str(work / "obj")
    command.ensure_finalized()
    command.run()
    return sorted((work / "lib" / "gostop" / "engine").glob("*" + _native().ext_suffix()))


def build_engine_in_tree() -> None:
    """``make``: compile the editable install's engine (``engine/_compiled``) again if it is stale."""
    reason = why_not_compiled()
    if reason is not None:
        print(f"engine: pure Python ({reason})")
    elif compile_engine(ENGINE, if_stale=True):
        print("engine: compiled with mypyc")
    else:
        print("engine: the compiled build is up to date")


# ---------------------------------------------------------------------------------- setuptools


class BuildPy(build_py):
    """build_py, plus the generated ``gostop.v1`` and the compiled engine."""

    def run(self) -> None:
        super().run()
        target = HERE / "clients" / "python" if self.editable_mode else Path(self.build_lib)
        generated = _generate(target)
        reason = why_not_compiled()
        if reason is None:
            package = ENGINE if self.editable_mode else Path(self.build_lib) / "gostop" / "engine"
            generated += compile_engine(package, if_stale=self.editable_mode)
        else:
            print(f"gostop: the engine stays pure Python: {reason}", file=sys.stderr)
        self._generated = [str(p) for p in generated]

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *getattr(self, "_generated", [])]


class EngineDistribution(Distribution):
    """Has extension modules when the engine is compiled: the wheel is then tagged for the platform
    and the Python version, not ``py3-none-any``."""

    def has_ext_modules(self) -> bool:
        return why_not_compiled() is None


if __name__ == "__main__":  # the build backend runs this file as __main__; make imports it
    setup(cmdclass={"build_py": BuildPy}, distclass=EngineDistribution)
