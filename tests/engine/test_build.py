"""The engine build that runs: the one expected (compiled with mypyc where a C compiler is present,
else the pure-Python sources), what it says it is, never a stale one, and alike in behaviour: its
frozen values construct, compare, copy and pickle the same (docs/engine-performance.md, "The
compiled engine"). ``make test`` runs the engine tests on both builds and tells each pass, through
``GOSTOP_EXPECT_ENGINE``, which build it must find.
"""

from __future__ import annotations

import ast
import copy
import copyreg
import dataclasses
import inspect
import json
import os
import pickle
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import gostop.engine
from gostop.engine import BUILD, PRESET_PLAYERS, PRESETS, Rules, apply, legal_actions, native, new_round
from gostop.engine.native import COMPILED_MODULES, MANIFEST, SUPPORT_MODULES, ext_suffix, select

ENGINE = Path(gostop.engine.__file__).resolve().parent
EXPECT = "GOSTOP_EXPECT_ENGINE"


def test_the_engine_build_is_the_one_expected() -> None:
    """A silent fallback to the pure-Python engine (or a compiled engine where none was asked for)
    fails ``make test``: it sets ``GOSTOP_EXPECT_ENGINE`` to ``mypyc`` where the build compiles the
    engine, and to ``python`` in its pure-Python pass."""
    expected = os.environ.get(EXPECT)
    if expected is None:
        pytest.skip(f"{EXPECT} is not set (make test sets it)")
    assert BUILD.kind == expected, f"the engine build is {BUILD.kind}, not {expected}: {BUILD.reason}"


def origin_of(module: str) -> str:
    """The file ``gostop.engine.<module>`` was loaded from."""
    spec = sys.modules[f"gostop.engine.{module}"].__spec__
    assert spec is not None and spec.origin is not None
    return spec.origin


def test_the_modules_loaded_are_those_of_the_build() -> None:
    for name in COMPILED_MODULES:
        origin = origin_of(name)
        if BUILD.compiled:
            assert origin == str(Path(BUILD.directory) / f"{name}{ext_suffix()}")
            assert Path(origin).is_file()
        else:
            assert Path(origin).resolve() == ENGINE / f"{name}.py"
    for name in (*SUPPORT_MODULES, "native", "views", "serialize", "match"):
        assert Path(origin_of(name)).resolve() == ENGINE / f"{name}.py", "never compiled"
    assert BUILD.modules == (COMPILED_MODULES if BUILD.compiled else ())


def test_compiled_modules_import_only_what_the_build_compiles_or_reads() -> None:
    """The build compiles ``COMPILED_MODULES`` from a copy holding them and ``SUPPORT_MODULES``: an
    import of any other engine module would fail the build (and must be added to one of the two)."""
    known = {*COMPILED_MODULES, *SUPPORT_MODULES}
    for name in COMPILED_MODULES:
        tree = ast.parse((ENGINE / f"{name}.py").read_text(encoding="utf-8"))
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
        assert imported <= known, f"{name}.py imports {sorted(imported - known)}"


# ------------------------------------------------------------------ choosing the build


def a_build(tmp_path: Path) -> Path:
    """A package folder with the engine's sources and a build of them as setup.py lays it out (its
    extension files empty: ``select`` reads no more than their names)."""
    package = tmp_path / "engine"
    package.mkdir()
    for name in (*COMPILED_MODULES, *SUPPORT_MODULES):
        shutil.copyfile(ENGINE / f"{name}.py", package / f"{name}.py")
    folder = package / native.COMPILED_DIR / "b-test"
    (folder / native.MODULES_DIR).mkdir(parents=True)
    for name in COMPILED_MODULES:
        (folder / native.MODULES_DIR / f"{name}{ext_suffix()}").write_bytes(b"")
    (folder / f"compiled__mypyc{ext_suffix()}").write_bytes(b"")
    manifest = native.manifest(package, folder.name, "test", "compiled__mypyc")
    (package / native.COMPILED_DIR / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return package


def test_a_fresh_build_is_used(tmp_path: Path) -> None:
    package = a_build(tmp_path)
    build = select(package, {})
    assert build.kind == "mypyc" and build.reason == "compiled with mypyc test", build
    assert build.modules == COMPILED_MODULES
    top = package / native.COMPILED_DIR / "b-test"
    assert build.path == [str(top / "gostop" / "engine"), str(top)]
    assert select(package, {"GOSTOP_PURE_PYTHON": "0"}).compiled
    assert select(package, {"GOSTOP_PURE_PYTHON": ""}).compiled


def test_gostop_pure_python_asks_for_the_sources(tmp_path: Path) -> None:
    build = select(a_build(tmp_path), {"GOSTOP_PURE_PYTHON": "1"})
    assert build == native.Build("python", "GOSTOP_PURE_PYTHON is set")


@pytest.mark.parametrize("name", ["turns", "rules"])
def test_an_edited_source_is_never_shadowed_by_a_stale_build(tmp_path: Path, name: str) -> None:
    """Regression: an engine source edited after the build ran, while the compiled module of its
    old text was imported instead (the opt-in build of old put its modules first on the path with
    no check). A compiled module or an interpreted one it depends on: either makes it stale."""
    package = a_build(tmp_path)
    with (package / f"{name}.py").open("a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    build = select(package, {})
    assert build.kind == "python"
    assert build.reason == f"compiled build is stale: {name}.py changed since it was built"


def test_an_installation_without_sources_uses_its_build(tmp_path: Path) -> None:
    package = a_build(tmp_path)
    (package / "turns.py").unlink()
    assert select(package, {}).compiled


def test_a_build_for_another_python_or_incomplete_is_not_used(tmp_path: Path) -> None:
    package = a_build(tmp_path)
    path = package / native.COMPILED_DIR / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(dict(manifest, ext_suffix=".cpython-399-x.so")), encoding="utf-8")
    assert select(package, {}).reason == "compiled for another Python (.cpython-399-x.so)"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    (package / native.COMPILED_DIR / "b-test" / native.MODULES_DIR / f"play{ext_suffix()}").unlink()
    assert select(package, {}).reason == "compiled build is incomplete: play missing"
    (package / native.COMPILED_DIR / "b-test" / f"compiled__mypyc{ext_suffix()}").unlink()
    assert select(package, {}).reason == "compiled build is incomplete: play, compiled__mypyc missing"
    path.unlink()
    assert select(package, {}).reason.startswith("no compiled build")
    path.write_text("{", encoding="utf-8")
    assert select(package, {}).reason.startswith("unreadable manifest")


# ------------------------------------------------------------------------- alike


def played_values() -> list[Any]:
    """The frozen values of random rounds of every preset and table size: states (with their seats,
    turns in progress, plays and payments), events (with scores and settlements) and deals; and the
    blocks of the observation's layout."""
    values: list[Any] = []
    chooser = random.Random(26)
    for preset in PRESETS:
        for players in PRESET_PLAYERS[preset]:
            rules = Rules.preset(preset, players=players)
            for seed in range(4):
                state, events = new_round(rules, seed)
                values += [state, *events]
                while not state.over:
                    actions = legal_actions(state)
                    state, events = apply(state, actions[chooser.randrange(len(actions))])
                    values += [state, *events, *state.seats, *state.plays, *state.payments]
                    if state.turn is not None:
                        values += [state.turn, state.turn.before]
                assert state.settlement is not None
                values += [state.settlement, *state.settlement.bills, *state.settlement.winner_factors]
    values.append(gostop.engine.Deal(((0, 1), (2, 3)), (4, 5), (6, 7), 1))
    values += gostop.engine.observer.LAYOUT  # (the observation's layout: frozen values too)
    return values


VALUES = played_values()


def frozen_dataclasses() -> list[type]:
    classes = []
    for name in COMPILED_MODULES:
        module = sys.modules[f"gostop.engine.{name}"]
        classes += [v for v in vars(module).values()
                    if isinstance(v, type) and v.__module__ == module.__name__ and dataclasses.is_dataclass(v)]
    return classes


def test_every_frozen_value_is_played_and_copies_by_its_fields() -> None:
    kinds = {type(v) for v in VALUES}
    classes = frozen_dataclasses()
    assert len(classes) >= 38
    for cls in classes:
        assert copyreg.dispatch_table.get(cls) is native._by_fields, f"{cls.__name__} is not registered"
    # Every kind of value but the events of rare rules is in a random round.
    assert {c.__name__ for c in classes if c not in kinds} <= {
        "GwangSold", "InstantLoss", "InstantWin", "Redealt", "SatOut", "JoinedRound", "Nagari", "Sseul",
        "PpeokRecaptured", "Jjok", "Ttadak", "Bombed", "FlipOnlyUsed", "Shaken", "GukjinDecided", "InstantPaid",
        "PpeokFormed", "Payment",
    }


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_frozen_values_copy_and_pickle(how: str) -> None:
    """Regression: the compiled engine's frozen dataclasses could not be copied or pickled (their
    ``__setattr__`` refuses the attribute-by-attribute restore): a state deep-copied by a property
    test, a settlement sent back by a tournament's worker process."""
    for value in VALUES:
        if how == "copy":
            twin = copy.copy(value)
        elif how == "deepcopy":
            twin = copy.deepcopy(value)
        else:
            twin = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(twin) is type(value) and twin == value


def test_frozen_values_rebuild_from_their_fields() -> None:
    """The constructors written out for mypyc (``init=False``) take the fields in order, by position
    or by name, as the generated ones did."""
    for value in VALUES[::7]:
        fields = dataclasses.fields(value)
        cls = type(value)
        assert cls(*[getattr(value, f.name) for f in fields]) == value
        assert cls(**{f.name: getattr(value, f.name) for f in fields}) == value
        assert dataclasses.replace(value) == value


def test_written_out_constructors_have_the_fields_signature() -> None:
    """Names, order and defaults of each ``__init__`` are those of its fields (where the build keeps
    the signatures: the compiled one gives a copy of the defaults)."""
    checked = 0
    for cls in frozen_dataclasses():
        try:
            signature = inspect.signature(cls)
        except ValueError:
            continue
        if not signature.parameters or list(signature.parameters) == ["args", "kwargs"]:
            continue
        fields = dataclasses.fields(cls)
        assert list(signature.parameters) == [f.name for f in fields], cls
        for parameter, field in zip(signature.parameters.values(), fields, strict=True):
            default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
            assert parameter.default == default, (cls, field.name)
        checked += 1
    assert checked or BUILD.compiled
