"""The built wheel, installed as a user would: one ``gostop`` namespace, the generated code inside it,
and extras that mean what they say.

The wheel is built from a copy of the sources without any generated code (the build must make it),
then installed into fresh virtual environments (dependencies from the package index): alone, it
gives the engine, the wire layer, the clients and the bots, and says which extra serving needs;
with ``[server]``, ``gostop serve`` answers Health and stops on SIGTERM. Where a C compiler is
present the wheel's engine is compiled with mypyc and the installed engine runs compiled; with
``GOSTOP_PURE_PYTHON=1`` the build makes a pure-Python wheel (setup.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import setup
from testkit.redis_server import free_port

# Not in make check: wheels built and installed in new environments.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COMPILED = setup.why_not_compiled() is None
"""The build compiles the engine here (a C compiler, mypyc: setup.py's own answer)."""
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "proto", "scripts/gen_proto.py", "engine",
           "service", "clients/python")


def IGNORE(folder: str, names: list[str]) -> set[str]:
    """Caches, the examples, and the generated code of a work tree (clients/python/gostop/v1, the
    compiled engine)."""
    skipped = {n for n in names if n in ("__pycache__", "examples", "_compiled") or n.endswith(".pyc")}
    if Path(folder).name == "gostop" and Path(folder).parent.name == "python":
        skipped |= {"v1"} & set(names)
    return skipped


def build_wheel(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    source = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, target, symlinks=True, ignore=IGNORE)
        else:
            shutil.copy(ROOT / name, target)
    assert not list(source.rglob("*_pb2.py")), "the copy must hold no generated code"
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                             "--wheel-dir", str(out), str(source)], capture_output=True, text=True, timeout=900,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stdout + result.stderr
    [built] = out.glob("gostop-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory, {"GOSTOP_PURE_PYTHON": ""})


def dist_info(wheel: Path) -> str:
    return "-".join(wheel.name.split("-")[:2]) + ".dist-info"


def test_the_wheel_s_engine_is_compiled_where_a_compiler_is(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    manifest = "gostop/engine/_compiled/manifest.json"
    if not COMPILED:
        assert wheel.name.endswith("-py3-none-any.whl") and manifest not in names
        return
    assert not wheel.name.endswith("-none-any.whl"), "a wheel with extension modules is for one platform"
    layout = json.loads(zipfile.ZipFile(wheel).read(manifest))
    top = f"gostop/engine/_compiled/{layout['dir']}"
    suffix = layout["ext_suffix"]
    assert f"{top}/{layout['library']}{suffix}" in names
    assert {f"{top}/gostop/engine/{m}{suffix}" for m in layout["compiled"]} <= names
    assert "gostop/engine/play.py" in names, "the sources ship too (the same behaviour, pure Python)"


def test_without_the_compiler_the_wheel_is_pure_python(tmp_path_factory: pytest.TempPathFactory) -> None:
    pure = build_wheel(tmp_path_factory, {"GOSTOP_PURE_PYTHON": "1"})
    assert pure.name.endswith("-py3-none-any.whl")
    assert not [n for n in zipfile.ZipFile(pure).namelist() if "_compiled" in n or n.endswith(".so")]


def venv(path: Path, requirement: str) -> Path:
    """A fresh virtual environment at ``path`` with ``requirement`` installed; its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    result = subprocess.run([str(path / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                             requirement], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return path / "bin"


def test_the_wheel_is_one_namespace_with_its_generated_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"gostop", dist_info(wheel)}, tops
    for module in ("gostop/v1/__init__.py", "gostop/v1/game_pb2.py", "gostop/v1/game_pb2_grpc.py",
                   "gostop/v1/bot_pb2.py", "gostop/v1/bot_pb2_grpc.py", "gostop/v1/bot_pb2.pyi",
                   "gostop/v1/game_pb2.pyi", "gostop/v1/game_connect.py", "gostop/service/http.py",
                   "gostop/engine/play.py", "gostop/wire/convert.py",
                   "gostop/service/server.py", "gostop/client/client.py", "gostop/bots/mcts.py",
                   "gostop/tools/cli.py", "gostop/py.typed"):
        assert module in names, f"{module} is not in the wheel"
    package = ROOT / "clients/python/gostop"
    sources = {f"gostop/{path.relative_to(package)}" for path in package.rglob("*.py")
               if "__pycache__" not in path.parts and path.relative_to(package).parts[0] != "v1"}
    sources |= {f"gostop/{name}/{path.relative_to(ROOT / name)}" for name in ("engine", "service")
                for path in (ROOT / name).rglob("*.py")}
    assert sorted(sources - set(names)) == [], "modules missing from the wheel (pyproject.toml's packages)"
    grpc_module = zipfile.ZipFile(wheel).read("gostop/v1/game_pb2_grpc.py").decode()
    assert "from gostop.v1 import game_pb2" in grpc_module, "generated as the proto package implies"
    info = dist_info(wheel)
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "gostop = gostop.tools.cli:main" in entry_points
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    required = [line.removeprefix("Requires-Dist: ") for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")]
    plain = sorted(r.split(">")[0].split("=")[0].split("<")[0] for r in required if "extra ==" not in r)
    assert plain == ["grpcio", "grpcio-status", "orjson", "protobuf"], plain
    assert {"Provides-Extra: server", "Provides-Extra: tournament", "Provides-Extra: dev"} <= set(metadata.splitlines())
    server = [r for r in required if "extra == \"server\"" in r]
    assert any(r.startswith("connectrpc==") for r in server) and any(r.startswith("hypercorn") for r in server), server


ALONE = """
import importlib
import gostop.engine, gostop.wire.convert, gostop.client, gostop.bots, gostop.tools.bot
print("engine:", gostop.engine.BUILD.kind, gostop.engine.BUILD.reason)
from gostop.bots import make_bot
from gostop.engine import Rules, new_round, view
state, _ = new_round(Rules.preset("standard"), seed=1)
seat_view = view(state, state.to_move)
assert make_bot("greedy").choose(seat_view, seat_view.legal_actions) in seat_view.legal_actions
for name in ("engine", "service", "gostop_client"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit(f"{name} is importable")
try:
    import gostop.service
except ImportError as exc:
    print(exc)
else:
    raise SystemExit("gostop.service imported without the [server] extra")
"""


def test_the_wheel_alone_gives_engine_client_and_bots(wheel: Path, tmp_path: Path) -> None:
    bin_ = venv(tmp_path / "venv", str(wheel))
    result = subprocess.run([str(bin_ / "python"), "-I", "-c", ALONE], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"engine: {'mypyc' if COMPILED else 'python'} " in result.stdout, result.stdout
    assert "gostop.service needs the [server] extra" in result.stdout
    assert "pip install 'gostop[server]'" in result.stdout
    demo = subprocess.run([str(bin_ / "gostop"), "demo", "--seed", "3"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert demo.returncode == 0 and "gostop demo" in demo.stdout, demo.stdout + demo.stderr
    serve = subprocess.run([str(bin_ / "gostop"), "serve"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert serve.returncode == 2, serve.stdout + serve.stderr
    assert serve.stderr.startswith("gostop serve: gostop.service needs the [server] extra"), serve.stderr
    assert "Traceback" not in serve.stderr


def test_with_the_server_extra_gostop_serve_runs(wheel: Path, tmp_path: Path) -> None:
    bin_ = venv(tmp_path / "venv", f"{wheel}[server]")
    port, http_port = free_port(), free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    process = subprocess.Popen([str(bin_ / "gostop"), "serve", "--listen", f"127.0.0.1:{port}", "--metrics-port", "0",
                                "--http-listen", f"127.0.0.1:{http_port}"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        status = None
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 60
            while status != health_pb2.HealthCheckResponse.SERVING and time.monotonic() < deadline:
                assert process.poll() is None, process.communicate()[0]
                try:
                    status = health.Check(health_pb2.HealthCheckRequest(service="gostop.v1.GameService"),
                                          timeout=2).status
                except grpc.RpcError:
                    time.sleep(0.2)
        assert status == health_pb2.HealthCheckResponse.SERVING
        # The HTTP port of the installed wheel answers the Connect protocol (its generated code and runtime).
        request = urllib.request.Request(f"http://127.0.0.1:{http_port}/gostop.v1.GameService/ListRuleSets",
                                         data=b"{}", headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert b'"ruleSets"' in reply.read()
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 0, output
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
