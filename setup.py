"""The one build step pyproject.toml cannot declare: generating ``gostop.v1`` from proto/.

setuptools reads everything else from pyproject.toml. A wheel gets the generated modules in its
build directory; an editable install gets them in the source tree (clients/python/gostop/v1,
ignored by git), where ``make`` also refreshes them when a .proto file changes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _generate(out: Path) -> list[Path]:
    spec = importlib.util.spec_from_file_location("gen_proto", HERE / "scripts" / "gen_proto.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files: list[Path] = module.generate(out, HERE / "proto")
    return files


class BuildPy(build_py):
    """build_py, plus the generated ``gostop.v1``."""

    def run(self) -> None:
        super().run()
        target = HERE / "clients" / "python" if self.editable_mode else Path(self.build_lib)
        self._generated = [str(p) for p in _generate(target)]

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *getattr(self, "_generated", [])]


setup(cmdclass={"build_py": BuildPy})
