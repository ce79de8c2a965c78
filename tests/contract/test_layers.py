"""Layers import only downwards: engine <- wire <- service | client <- bots <- env <- tools, and the
service's programs (``gostop serve``, the bot worker: clients of its API) above service, client and bots.

Every import of our own modules (at the top of a module or inside a function) is read from the
source and checked against the layer table below (README.md shows it), and no two of our modules
may import each other in a circle. In the service's core, only its two ports and the status mapping
speak a transport (import gRPC or Connect). The modules are those of the ``gostop`` namespace, read from
the folders pyproject.toml maps it to.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"gostop.engine": ROOT / "engine", "gostop.service": ROOT / "service",
           "gostop": ROOT / "clients/python/gostop"}
"""Import prefix -> folder. The ``gostop`` folder's links to engine/ and service/ and its generated
``v1`` are not read through it."""
GENERATED = "gostop.v1"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, module prefixes), the most specific prefix wins
    ("engine", ("gostop.engine",)),
    ("wire", (GENERATED, "gostop.wire")),
    ("service", ("gostop.service",)),
    ("programs", ("gostop.service.programs",)),
    ("client", ("gostop.client",)),
    ("bots", ("gostop.bots",)),
    ("env", ("gostop.env",)),
    ("tools", ("gostop", "gostop.tools", "gostop.__main__", "gostop.engine.__main__")),
)
MAY_IMPORT: dict[str, set[str]] = {
    "engine": {"engine"},
    "wire": {"engine", "wire"},
    "service": {"engine", "wire", "service"},
    "programs": {"engine", "wire", "service", "client", "bots", "programs"},
    "client": {"engine", "wire", "client"},
    "bots": {"engine", "bots"},
    "env": {"engine", "bots", "env"},
    "tools": {"engine", "wire", "service", "client", "bots", "env", "programs", "tools"},
}
TRANSPORTS = frozenset({"grpc", "grpc_status", "connectrpc", "grpc_health", "grpc_reflection"})
"""Top-level import names of the transports' libraries."""
TRANSPORT_MODULES = frozenset({"gostop.service.server", "gostop.service.http", "gostop.service.status"})
"""The modules of the service's core that may import a transport: the gRPC servicer, the HTTP port
(Connect, gRPC-Web) and the mapping of the core's errors to their statuses. The rest of the core
(games, repository, the per-call wrapper, stores, metrics, config...) is transport-free. The
programs are clients of the API and speak it as ``gostop.client`` does."""
ENGINE_PUBLIC = frozenset(f"gostop.engine{m}" for m in (
    "", ".actions", ".cards", ".determinize", ".errors", ".events", ".match", ".observer", ".play", ".previews",
    ".render", ".rng", ".rules", ".scoring", ".serialize", ".settlement", ".state", ".table_events", ".testing",
    ".views",
))
"""The engine's modules that code outside it may import (never a name beginning with ``_``). The
others are its internals: the working copy (``working``), a turn's steps (``turns``), the deal's and
legality's insides (``dealing``, ``legality``: their public names are the package's), the build
selection (``native``). Search and environments go through ``Playout``."""
OLD_NAMES = ("engine", "service", "gostop_client")
"""Top-level import names of before the ``gostop`` namespace: nothing may import them."""


def layer_of(module: str) -> str:
    best, length = "", -1
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = layer, len(prefix)
    assert best, f"{module} is in no layer: add it to LAYERS"
    return best


def modules() -> Iterator[tuple[str, Path]]:
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            if package == "gostop" and rel.parts[0] in ("engine", "service", "v1"):
                continue  # read from their own folders; v1 is generated
            parts = [*package.split("."), *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def own_imports(module: str, path: Path, *, typing: bool = True) -> set[str]:
    """Every module of ours ``module`` imports, anywhere in its source (relative imports resolved);
    without ``typing``, not those under ``if TYPE_CHECKING:`` (never run: no circle at run time)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip: set[int] = set()
    if not typing:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if name.split(".")[0] in ("gostop", *OLD_NAMES):
                found.add(name)
    return found


def _known(name: str, known: set[str]) -> str | None:
    """The module of ours that ``name`` (a module, or a name imported from one) refers to (the
    generated ``gostop.v1`` modules count as one)."""
    if name == GENERATED or name.startswith(GENERATED + "."):
        return GENERATED
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(*, typing: bool = True) -> dict[str, set[str]]:
    found = dict(modules())
    known = set(found) | {GENERATED}
    edges: dict[str, set[str]] = {}
    for module, path in found.items():
        targets = {_known(n, known) for n in own_imports(module, path, typing=typing)}
        edges[module] = {t for t in targets if t is not None and t != module}
    edges[GENERATED] = set()
    return edges


def violations(edges: dict[str, set[str]]) -> list[str]:
    out = []
    for module, targets in sorted(edges.items()):
        mine = layer_of(module)
        for target in sorted(targets):
            theirs = layer_of(target)
            if theirs not in MAY_IMPORT[mine]:
                out.append(f"{module} ({mine}) imports {target} ({theirs})")
    return out


def imported_names() -> dict[str, set[str]]:
    """Every module of ours outside the engine -> the names it imports from the engine."""
    return {module: {n for n in own_imports(module, path) if n == "gostop.engine" or n.startswith("gostop.engine.")}
            for module, path in modules() if layer_of(module) != "engine"}


def engine_reach_ins(imports: dict[str, set[str]]) -> list[str]:
    """Imports of engine internals (a module not in ``ENGINE_PUBLIC``, or a private name) from outside it."""
    known = {m for m, _ in modules() if m.startswith("gostop.engine")}
    out = []
    for module, names in sorted(imports.items()):
        for name in sorted(names):
            target = _known(name, known) or name
            private = [p for p in name.split(".") if p.startswith("_") and not p.startswith("__")]
            if target not in ENGINE_PUBLIC or private:
                out.append(f"{module} imports {name}" + (f" ({target} is internal)" if target not in ENGINE_PUBLIC
                                                         else " (a private name)"))
    return out


def third_party_imports() -> dict[str, set[str]]:
    """Every module of ours -> the top-level names of the other packages it imports, anywhere in its source."""
    out: dict[str, set[str]] = {}
    for module, path in modules():
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
        out[module] = names - {"gostop", *OLD_NAMES}
    return out


def transport_imports(imports: dict[str, set[str]]) -> list[str]:
    """Imports of a transport's library by a module of the service's core other than ``TRANSPORT_MODULES``."""
    return [f"{module} imports {name}" for module, names in sorted(imports.items())
            if layer_of(module) == "service" and module not in TRANSPORT_MODULES
            for name in sorted(names & TRANSPORTS)]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle (as the strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_import_goes_down_the_layers() -> None:
    assert violations(graph()) == []


def test_nothing_outside_the_engine_imports_its_internals() -> None:
    assert engine_reach_ins(imported_names()) == []


def test_only_the_ports_of_the_service_speak_a_transport() -> None:
    assert transport_imports(third_party_imports()) == []


def test_the_transport_modules_exist_and_speak_one() -> None:
    imports = third_party_imports()
    assert sorted(m for m in TRANSPORT_MODULES if not imports.get(m, set()) & TRANSPORTS) == []


@pytest.mark.parametrize(("module", "name"), [
    ("gostop.service.games", "grpc"),  # the core speaking gRPC
    ("gostop.service.calls", "connectrpc"),  # the per-call wrapper speaking Connect
    ("gostop.service.metrics", "grpc_health"),
    ("gostop.service.config", "grpc_reflection"),
    ("gostop.service.errors", "grpc_status"),
])
def test_the_check_catches_a_transport_in_the_core(module: str, name: str) -> None:
    imports = third_party_imports()
    assert module in imports
    imports[module] = imports[module] | {name}
    assert transport_imports(imports), f"{module} -> {name} was not caught"


def test_the_public_engine_modules_exist() -> None:
    known = {m for m, _ in modules()}
    assert sorted(ENGINE_PUBLIC - known) == []


@pytest.mark.parametrize(("module", "name"), [
    ("gostop.env.aec", "gostop.engine.working.Work"),  # the working copy
    ("gostop.bots.mcts", "gostop.engine.turns.step"),  # a turn's steps
    ("gostop.env.openspiel", "gostop.engine.play._ID_MEMO"),  # a private name of a public module
    ("gostop.wire.convert", "gostop.engine.native"),  # the build selection
])
def test_the_check_catches_a_reach_into_the_engine(module: str, name: str) -> None:
    imports = imported_names()
    assert module in imports
    imports[module] = imports[module] | {name}
    assert engine_reach_ins(imports), f"{module} -> {name} was not caught"


def test_nothing_imports_the_old_top_level_names() -> None:
    """Not the package, its tests, scripts or examples."""
    found = dict(modules())
    for folder in ("tests", "scripts", "bench", "clients/python/examples"):
        found.update((str(path.relative_to(ROOT)), path) for path in (ROOT / folder).rglob("*.py"))
    found["setup"] = ROOT / "setup.py"
    old = sorted(f"{module} imports {name}" for module, path in found.items() for name in own_imports(module, path)
                 if name.split(".")[0] in OLD_NAMES)
    assert old == []


def test_no_import_circles() -> None:
    """(A package and its own submodules import each other by design: ``__init__`` re-exports; imports
    for type checking only are not run.)"""
    edges = graph(typing=False)
    plain = {m: {t for t in ts if not t.startswith(m + ".") and not m.startswith(t + ".")} for m, ts in edges.items()}
    assert cycles(plain) == []


@pytest.mark.parametrize(("module", "target"), [
    ("gostop.engine.play", "gostop.service.games"),  # the engine reaching up into the service
    ("gostop.engine.views", "gostop.v1"),  # the engine depending on the messages
    ("gostop.wire.convert", "gostop.service.games"),  # the wire depending on the service
    ("gostop.bots.greedy", "gostop.client"),  # a bot depending on the transport
    ("gostop.client", "gostop.service.server"),  # the client depending on the server
    ("gostop.client.runner", "gostop.bots"),  # the client depending on the bots
    ("gostop.env.aec", "gostop.client"),  # an environment depending on the transport
    ("gostop.bots.greedy", "gostop.env.observation"),  # a bot depending on the research environments
    ("gostop.service.games", "gostop.tools.cli"),  # the service depending on the command line
    ("gostop.service.server", "gostop.service.programs.botworker"),  # the service's core importing a program
    ("gostop.service.games", "gostop.service.programs.serve"),
    ("gostop.service.programs.serve", "gostop.tools.cli"),  # a program depending on the command line
    ("gostop.service.programs.botworker", "gostop.env.observation"),  # a program depending on the environments
])
def test_the_check_catches_an_upward_import(module: str, target: str) -> None:
    edges = graph()
    assert module in edges and target in edges
    edges[module] = edges[module] | {target}
    assert violations(edges), f"{module} -> {target} was not caught"


def test_the_check_catches_a_circle() -> None:
    edges = graph()
    edges["gostop.client.runner"] = edges["gostop.client.runner"] | {"gostop.tools.play"}
    assert edges["gostop.tools.play"] >= {"gostop.client.runner"}
    assert cycles(edges), "play <-> runner was not caught"
