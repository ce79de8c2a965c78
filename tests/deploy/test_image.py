"""The container image, built from the Dockerfile and run.

tests/deploy/test_helm.py reads the Dockerfile; here the image is built for real, with no registry
and no Docker engine, from Debian's packages only:

- the base images are made here: ``mmdebstrap`` makes a minimal Debian root filesystem with Python
  (bookworm: Python 3.11, as ``python:3.11-slim``) and one with Node (trixie: Node 20.19, which both
  npm packages accept) plus npm from the npm registry (``npm pack``, as the official node images
  bundle it); ``buildah`` turns each into a local image. The tarballs are kept in ``.tools/image``,
  named by a digest of what goes into them (suite, packages, npm version, this machine's own
  certificate authorities), so a second run on one machine skips them;
- ``buildah bud --pull=never --isolation=chroot --layers --format=docker`` builds the Dockerfile
  against them (``PYTHON_IMAGE``, ``NODE_IMAGE``); ``--layers`` keeps the steps' results, so an
  unchanged Dockerfile and context rebuild in seconds, and a changed one from the changed step;
- the image's configuration (user, entrypoint, ports, labels, working directory, health check) is
  checked against the chart's values, its content for what must not ship (compilers, Node, pip's
  cache, the sources);
- the image runs as a pod runs it: its root filesystem mounted read-only, an empty ``/tmp`` (the
  chart's emptyDir) and ``/dev/shm``, the server as PID 1 of its own PID namespace under the chart's
  user and group with no capabilities and no_new_privs, with the image's environment under the
  chart's (its ConfigMap and Secret), the image's entrypoint; the network is the host's, so the
  ports are free loopback ports. The server answers Health, a whole game over gRPC and over the
  Connect protocol and gRPC-Web, the web table and its metrics; the image's ``gostop-healthcheck``
  and the chart's preStop command run in the image; SIGTERM stops the server with exit code 0;
- the image is written as an OCI archive (``test-artifacts/image``), read back, and its
  configuration checked; docs/kubernetes.md shows these same commands.

The build time, the image's size and its layer count are printed at the end of the run (and kept in
``test-artifacts/image/report.json``). buildah and mmdebstrap are Debian packages that ``make
image-tools`` installs (``make test`` does it first); where they cannot be installed, these tests are
skipped with the reason. The run needs root (it mounts file systems).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from test_helm import DEFAULT, dockerfile_stages, free_port, one, server_container, server_env

from gostop.bots import make_bot
from gostop.client import GostopClient
from gostop.client.runner import run_seats
from gostop.service.calls import SERVICE
from gostop.v1 import game_pb2 as pb
from testkit.connect import ConnectStub
from testkit.servers import Api

# Not in make check: the container image, built and run.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOC = ROOT / "docs" / "kubernetes.md"
CACHE = ROOT / ".tools" / "image"
# Written by `make image-tools` when apt-get could not install buildah and mmdebstrap: the reason.
UNAVAILABLE = ROOT / ".tools" / "stamps" / "image-tools-unavailable"
ARTIFACTS = ROOT / "test-artifacts" / "image"
IMAGE = "localhost/gostop:test"
# Certificate authorities added to this machine (Debian's place for them): the bases trust them too,
# so that the build reaches PyPI and npm wherever this machine does (e.g. through a TLS proxy).
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
# As Debian's slim images: no manual pages, translations or documentation but the licences.
SLIM = ("path-exclude=/usr/share/man/*", "path-exclude=/usr/share/locale/*",
        "path-include=/usr/share/locale/locale.alias", "path-exclude=/usr/share/doc/*",
        "path-include=/usr/share/doc/*/copyright")
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# No registry: the bases are local. buildah's default isolation needs namespaces a virtual machine may
# refuse; chroot's steps share the host's network. The Docker format keeps the HEALTHCHECK. --layers
# keeps every step's result for the next build.
BUD_FLAGS = ("--pull=never", "--isolation=chroot", "--layers", "--format=docker")


@dataclass(frozen=True)
class Base:
    """A base image made here: a Debian root filesystem by mmdebstrap, as the Dockerfile's ``arg``."""

    name: str
    suite: str
    packages: tuple[str, ...]
    arg: str
    command: str
    npm: str = ""
    """npm's version, added from the npm registry (``npm pack``) into /usr/local, as node images have it."""

    def key(self) -> str:
        """A digest of everything that goes into the base: a change makes a new one."""
        cas = sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in local_cas())
        text = json.dumps([self.suite, self.packages, self.npm, SLIM, cas, CONTAINER_PATH])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def tag(self) -> str:
        return f"localhost/gostop-{self.name}-base:{self.key()}"


PYTHON_BASE = Base("python", "bookworm", ("ca-certificates", "python3", "python3-venv", "python-is-python3"),
                   "PYTHON_IMAGE", "python3")
NODE_BASE = Base("node", "trixie", ("ca-certificates", "nodejs"), "NODE_IMAGE", "node", npm="10.9.4")
BASES = (PYTHON_BASE, NODE_BASE)


def local_cas() -> list[Path]:
    return sorted(LOCAL_CAS.rglob("*.crt")) if LOCAL_CAS.is_dir() else []


def run(args: Sequence[str | Path], timeout: float = 600) -> str:
    """Run a command (no input); its standard output. A failure fails the test with the command's output."""
    done = subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"{shlex.join(map(str, args))[:300]}: exit {done.returncode}\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-6000:]}", pytrace=False)
    return done.stdout


def buildah(*args: str | Path, timeout: float = 600) -> str:
    return run(["buildah", *args], timeout=timeout).strip()


def require_tools() -> None:
    """buildah and mmdebstrap (and root): skip where they cannot be installed, fail where they were not."""
    missing = [t for t in ("buildah", "mmdebstrap", "npm", "unshare", "setpriv", "chroot") if not shutil.which(t)]
    if missing and UNAVAILABLE.exists():
        pytest.skip(f"the image is not built here: {UNAVAILABLE.read_text().strip()}")
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: run `make image-tools` (Debian packages); `make test` does it"
                    " first", pytrace=False)
    if os.geteuid() != 0:
        pytest.skip("the image test mounts file systems (the image's read-only root): it runs as root only")


# --- the base images ---------------------------------------------------------------------------


def npm_tarball(version: str) -> Path:
    """npm itself from the npm registry, as ``npm pack`` fetches it (the official node images ship it)."""
    target = CACHE / f"npm-{version}.tgz"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        out = run(["npm", "pack", "--silent", f"npm@{version}", "--pack-destination", CACHE], timeout=300)
        assert out.strip().splitlines()[-1] == target.name, out
    return target


def make_base(base: Base) -> float:
    """The base image ``base.tag()`` in buildah's storage, made if missing (its tarball too); seconds spent."""
    if image_id(base.tag()):
        return 0.0
    started = time.monotonic()
    tarball = CACHE / f"{base.name}-base-{base.key()}.tar"
    if not tarball.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        hooks: list[str] = []
        if local_cas():
            hooks += [f"--customize-hook=copy-in {LOCAL_CAS} /usr/local/share",
                      '--customize-hook=chroot "$1" update-ca-certificates --fresh >/dev/null 2>&1']
        if base.npm:
            npm_dir = '"$1/usr/local/lib/node_modules/npm"'
            hooks.append(f"--customize-hook=mkdir -p {npm_dir} && tar -xzf {shlex.quote(str(npm_tarball(base.npm)))}"
                         f" --no-same-owner --strip-components=1 -C {npm_dir}"
                         ' && ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"'
                         ' && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"'
                         f' && test "$(chroot "$1" /usr/local/bin/npm --version)" = {base.npm}'
                         ' && rm -rf "$1/root/.npm"')
        partial = tarball.with_suffix(".partial.tar")
        run(["mmdebstrap", "--quiet", "--variant=minbase", "--format=tar", f"--include={','.join(base.packages)}",
             *(f"--dpkgopt={o}" for o in SLIM), *hooks, base.suite, partial], timeout=1800)
        partial.rename(tarball)
        for old in CACHE.glob(f"{base.name}-base-*.tar"):
            if old != tarball:
                old.unlink()
    container = buildah("from", "--name", f"gostop-{base.name}-base-{os.getpid()}", "scratch")
    try:
        mount = buildah("mount", container)
        run(["tar", "-xf", tarball, "--numeric-owner", "-C", mount])
        buildah("umount", container)
        buildah("config", "--env", f"PATH={CONTAINER_PATH}", "--env", "LANG=C.UTF-8", "--cmd", base.command,
                container)
        buildah("commit", "--quiet", container, base.tag())
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True, check=False)
    # The bases of earlier keys go (the build steps cached on them then go with them).
    repository = base.tag().rpartition(":")[0]
    for name in buildah("images", "--format", "{{.Name}}:{{.Tag}}").split():
        if name.startswith(f"{repository}:") and name != base.tag():
            subprocess.run(["buildah", "rmi", name], capture_output=True, check=False)
    return time.monotonic() - started


# --- the build ---------------------------------------------------------------------------------


@dataclass
class Built:
    """The image built from the Dockerfile, and what it took."""

    name: str
    docker: dict[str, Any]
    """Its Docker configuration (``config``: User, Entrypoint, ExposedPorts, Labels, Healthcheck...)."""
    layers: int
    base_seconds: float
    build_seconds: float
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.docker["config"]
        return config

    def env(self) -> dict[str, str]:
        return dict(item.split("=", 1) for item in self.config.get("Env") or [])


@contextlib.contextmanager
def image_lock() -> Iterator[None]:
    """One image build and run at a time on a machine (they share buildah's storage and the tag)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(dockerfile: Path = DOCKERFILE) -> Built:
    """Build the Dockerfile against the local bases as ``IMAGE``; the image replaced is removed."""
    with ThreadPoolExecutor(len(BASES)) as pool:  # the bases at once: mostly downloads
        base_seconds = max(pool.map(make_base, BASES))
    previous = image_id(IMAGE)
    started = time.monotonic()
    buildah("bud", *BUD_FLAGS, "--force-rm", "--quiet",  # (a failed step's container removed too)
            *(a for base in BASES for a in ("--build-arg", f"{base.arg}={base.tag()}")),
            "--file", dockerfile, "--tag", IMAGE, ROOT, timeout=3600)
    seconds = time.monotonic() - started
    inspected = json.loads(buildah("inspect", "--type", "image", IMAGE))
    if previous and previous != inspected["FromImageID"]:
        subprocess.run(["buildah", "rmi", previous], capture_output=True, check=False)
    return Built(IMAGE, inspected["Docker"], len(inspected["OCIv1"]["rootfs"]["diff_ids"]), base_seconds, seconds)


@contextlib.contextmanager
def mounted(image: str) -> Iterator[Path]:
    """The image's root filesystem (a working container of it, mounted)."""
    container = buildah("from", "--pull=never", "--name", f"gostop-image-test-{os.getpid()}", image)
    try:
        yield Path(buildah("mount", container))
    finally:
        subprocess.run(["buildah", "umount", container], capture_output=True, check=False)
        subprocess.run(["buildah", "rm", container], capture_output=True, check=False)


def tree_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (each hard-linked file once), symbolic links not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            if (stat.st_dev, stat.st_ino) not in seen and not os.path.islink(os.path.join(folder, name)):
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


class ImageReport:
    """A pytest plugin that prints the image's figures at the end of the run."""

    def __init__(self, figures: dict[str, Any]) -> None:
        self.figures = figures

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        f = self.figures
        terminalreporter.write_sep("-", "container image (tests/deploy/test_image.py)")
        terminalreporter.write_line(
            f"build {f['build_seconds']:.0f} s (bases made in {f['base_seconds']:.0f} s, 0 when cached); "
            f"{f['layers']} layers; {f['rootfs_mb']:.1f} MB unpacked, of which /opt/venv {f['venv_mb']:.1f} MB"
            + (f"; OCI archive {f['archive_mb']:.1f} MB" if "archive_mb" in f else ""))


@pytest.fixture(scope="module", name="built")
def built_fixture(request: pytest.FixtureRequest) -> Iterator[Built]:
    require_tools()
    with image_lock():
        image = build()
        with mounted(image.name) as rootfs:
            image.figures.update(build_seconds=image.build_seconds, base_seconds=image.base_seconds,
                                 layers=image.layers, rootfs_mb=tree_bytes(rootfs) / 1e6,
                                 venv_mb=tree_bytes(rootfs / "opt" / "venv") / 1e6)
        request.config.pluginmanager.register(ImageReport(image.figures), "gostop-image-report")
        yield image
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "report.json").write_text(json.dumps(image.figures, indent=2) + "\n")


@pytest.fixture(scope="module", name="rootfs")
def rootfs_fixture(built: Built) -> Iterator[Path]:
    with mounted(built.name) as path:
        yield path


# --- the image's configuration against the chart -------------------------------------------------


def test_image_configuration_matches_the_chart(built: Built) -> None:
    """What the builder produced (not what the Dockerfile says): user, entrypoint, ports, labels,
    working directory and health check, against the chart's values as rendered."""
    pod = one(DEFAULT, "Deployment")["spec"]["template"]["spec"]
    container = server_container(DEFAULT)
    context = pod["securityContext"]
    assert built.config["User"] == f"{context['runAsUser']}:{context['runAsGroup']}"
    assert context["runAsNonRoot"] and context["runAsUser"] != 0
    # The chart gives no command nor args: the image's entrypoint is the server.
    assert built.config["Entrypoint"] == ["gostop", "serve"] and not built.config.get("Cmd")
    assert "command" not in container and "args" not in container
    ports = {f"{p['containerPort']}/tcp" for p in container["ports"]}
    assert set(built.config["ExposedPorts"]) == ports
    env = built.env()
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(env["GOSTOP_LISTEN"].rpartition(":")[2]) == named["grpc"]
    assert int(env["GOSTOP_HTTP_LISTEN"].rpartition(":")[2]) == named["http"]
    assert int(env["GOSTOP_METRICS_PORT"]) == named["metrics"]
    assert env["PATH"].startswith("/opt/venv/bin:")
    # The only writable place of the pod, its emptyDir, is the image's working directory.
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"/tmp"} and built.config["WorkingDir"] == "/tmp"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # Labels: the chart's image (repository gostop, tag appVersion) and the package's version and licence.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    chart = (ROOT / "helm" / "gostop" / "Chart.yaml").read_text()
    app_version = re.search(r'^appVersion: "([^"]+)"$', chart, re.MULTILINE)
    assert app_version and container["image"] == f"gostop:{app_version.group(1)}"
    labels = built.config["Labels"]
    assert labels["org.opencontainers.image.title"] == container["image"].partition(":")[0] == project["name"]
    assert labels["org.opencontainers.image.version"] == app_version.group(1) == project["version"]
    assert labels["org.opencontainers.image.licenses"] == project["license"]
    assert built.config["Healthcheck"]["Test"] == ["CMD", "gostop-healthcheck"]
    assert built.config["StopSignal"] == "SIGTERM"
    # The final stage's instructions, one layer per file-changing one on top of the Python base's.
    final = dockerfile_stages()[-1]
    assert built.layers == 1 + sum(1 for i in final if i.keyword in ("RUN", "COPY", "ADD"))


def compilers_and_tools(rootfs: Path) -> list[str]:
    """Programs of the build that must not ship: compilers (C, mypyc, protoc), Node and npm."""
    forbidden = re.compile(r"^(cc|c\+\+|gcc|g\+\+|cpp|clang|clang\+\+|tcc|ld|as|mypyc|protoc|node|nodejs|npm|npx)"
                           r"(-[\d.]+)?$|^x86_64-linux-gnu-(gcc|g\+\+|cpp|ld|as)(-[\d.]+)?$")
    found = []
    for folder in ("usr/bin", "usr/local/bin", "bin", "usr/sbin", "opt/venv/bin"):
        if (rootfs / folder).is_dir():
            found += [f"/{folder}/{p.name}" for p in (rootfs / folder).iterdir() if forbidden.match(p.name)]
    return found


def context_sources() -> dict[tuple[int, str], Path]:
    """The build context's files that are only sources (the package itself, engine/, service/ and
    clients/python/, is installed): the build's files, proto/, the TypeScript client and the web
    table's sources; by size and digest (files under 64 bytes left out: too common to tell; the
    TypeScript client's copy of googleapis' protos too: googleapis-common-protos installs them)."""
    found: dict[tuple[int, str], Path] = {}
    roots = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "proto", "scripts/gen_proto.py",
             "clients/typescript", "clients/web"]
    vendored = ROOT / "clients" / "typescript" / "proto" / "google"
    for root in roots:
        for path in [ROOT / root] if (ROOT / root).is_file() else files_under(ROOT / root):
            if path.is_relative_to(vendored):
                continue
            data = path.read_bytes()
            if len(data) >= 64:
                found[(len(data), hashlib.sha256(data).hexdigest())] = path
    return found


def files_under(folder: Path) -> Iterator[Path]:
    """The files under ``folder``, but in the folders of what is installed, generated or built."""
    for parent, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("node_modules", "dist", "gen", "generated", "__pycache__")]
        yield from (Path(parent, name) for name in files)


def test_image_holds_no_compiler_pip_cache_or_sources(rootfs: Path) -> None:
    assert (rootfs / "opt" / "venv" / "bin" / "gostop").exists(), "the image's root filesystem"
    assert not compilers_and_tools(rootfs)
    assert not list(rootfs.glob("usr/lib/gcc*")), "a compiler's libraries"
    site = next((rootfs / "opt" / "venv" / "lib").glob("python3*/site-packages"))
    shipped = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert "gostop" in shipped
    assert not shipped & {"grpcio_tools", "protoc_gen_connectrpc", "mypy", "setuptools", "wheel", "cython"}, \
        "build tools in the venv"
    assert not (site / "grpc_tools").exists()
    # The project is installed from its wheel, not linked to a source tree.
    direct = json.loads(next(site.glob("gostop-*.dist-info/direct_url.json")).read_text())
    assert not direct.get("dir_info", {}).get("editable"), direct
    assert not list(site.glob("__editable__*")) and not list(site.glob("*.egg-link"))
    caches = [p for p in rootfs.glob("**/.cache") if p.is_dir()] + list(rootfs.glob("root/.npm"))
    assert not caches, f"caches: {caches}"
    assert not (rootfs / "src").exists(), "the build's sources"
    sources = context_sources()
    assert len(sources) > 20 and any(p.suffix == ".proto" for p in sources.values())
    copies: list[str] = []
    for folder, dirs, files in os.walk(rootfs):
        if "node_modules" in dirs:
            copies.append(folder)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink() and path.stat().st_size in {s for s, _ in sources}:
                key = (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
                if key in sources:
                    copies.append(f"/{path.relative_to(rootfs)} ({sources[key].relative_to(ROOT)})")
    assert not copies, f"sources in the image: {copies[:20]}"
    assert not any((rootfs / "tmp").iterdir()), "the working directory is empty"
    # The web table is there, built (the page and its assets), and bytecode compiled at build time.
    web = site / "gostop" / "web"
    assert (web / "index.html").exists() and list(web.glob("assets/*.js"))
    assert list((site / "gostop" / "engine" / "__pycache__").glob("*.pyc"))


# --- the image run as a pod runs it --------------------------------------------------------------


POD_SCRIPT = r"""
set -eu
root=$1 new=$2 tmp_size=$3
shift 3
mount --bind "$root" "$new"
mount -o remount,bind,ro "$new"
mount -t proc -o nosuid,nodev,noexec proc "$new/proc"
mount --rbind /sys "$new/sys"
mount -o remount,bind,ro "$new/sys"
mount -t tmpfs -o nosuid,mode=755,size=64k dev "$new/dev"
for node in null zero full random urandom tty; do
  : > "$new/dev/$node"
  mount --bind "/dev/$node" "$new/dev/$node"
done
mkdir "$new/dev/shm" "$new/dev/pts"
ln -s /proc/self/fd "$new/dev/fd"
ln -s /proc/self/fd/0 "$new/dev/stdin"
ln -s /proc/self/fd/1 "$new/dev/stdout"
ln -s /proc/self/fd/2 "$new/dev/stderr"
mount -t tmpfs -o nosuid,nodev,mode=1777,size=64m shm "$new/dev/shm"
mount -t tmpfs -o nosuid,nodev,mode=1777,size="$tmp_size" tmp "$new/tmp"
exec "$@"
"""
# The last step, in that pod: into the image's root and working directory, to the chart's user and
# group (fsGroup the supplementary one), then the image's program with the pod's environment.
ENTER = """
import json, os, sys
root, workdir, uid, gid, env, *argv = sys.argv[1:]
os.chroot(root)
os.chdir(workdir)
os.setgroups([int(gid)])
os.setgid(int(gid))
os.setuid(int(uid))
os.execvpe(argv[0], argv, json.loads(env))
"""


@dataclass(frozen=True)
class Pod:
    """How the chart runs the image: its user, group, environment and /tmp size, and the image's
    entrypoint and working directory."""

    uid: int
    gid: int
    env: dict[str, str]
    tmp_size: str
    entrypoint: list[str]
    workdir: str

    def command(self, rootfs: Path, new_root: Path, argv: Sequence[str], env: dict[str, str]) -> list[str]:
        """``argv`` run in the image: a mount and PID namespace of its own where the image's root is
        read-only and /tmp an empty tmpfs; the process PID 1, as the chart's user, with no
        capabilities (a root process that changes to another user keeps none; the bounding set
        keeps only what the change needs) and no_new_privs (allowPrivilegeEscalation false)."""
        enter = [shutil.which("setpriv") or "setpriv", "--no-new-privs", "--inh-caps=-all",
                 "--bounding-set=-all,+sys_chroot,+setuid,+setgid", sys.executable, "-I", "-c", ENTER,
                 str(new_root), self.workdir, str(self.uid), str(self.gid), json.dumps(env), *argv]
        return [shutil.which("unshare") or "unshare", "--mount", "--pid", "--fork", "--kill-child",
                "--propagation", "private", "/bin/sh", "-c", POD_SCRIPT, "pod", str(rootfs), str(new_root),
                self.tmp_size, *enter]


def pod_of_the_chart(built: Built) -> Pod:
    pod = one(DEFAULT, "Deployment")["spec"]["template"]["spec"]
    context = pod["securityContext"]
    [tmp] = [v for v in pod["volumes"] if v["name"] == "tmp"]
    size = re.fullmatch(r"(\d+)Mi", tmp["emptyDir"]["sizeLimit"])
    assert size
    # The pod's environment: the image's, under the chart's ConfigMap and Secret (envFrom).
    env = {**built.env(), **server_env(DEFAULT)}
    return Pod(context["runAsUser"], context["runAsGroup"], env, f"{size.group(1)}m",
               [*built.config["Entrypoint"], *(built.config.get("Cmd") or [])], built.config["WorkingDir"])


@dataclass
class InImage:
    """Commands run in the image (each in a pod of its own), on loopback ports of the host's network."""

    rootfs: Path
    pod: Pod
    work: Path
    grpc_port: int
    http_port: int
    metrics_port: int

    def env(self) -> dict[str, str]:
        """The pod's environment, HOME from the image's user database as container runtimes set it,
        the addresses on free loopback ports."""
        passwd = (self.rootfs / "etc" / "passwd").read_text().splitlines()
        [home] = [line.split(":")[5] for line in passwd if line.split(":")[2] == str(self.pod.uid)]
        return {**self.pod.env, "HOME": home,
                "GOSTOP_LISTEN": f"127.0.0.1:{self.grpc_port}", "GOSTOP_HTTP_LISTEN": f"127.0.0.1:{self.http_port}",
                "GOSTOP_METRICS_HOST": "127.0.0.1", "GOSTOP_METRICS_PORT": str(self.metrics_port)}

    def argv(self, argv: Sequence[str], name: str) -> list[str]:
        new_root = self.work / name
        new_root.mkdir()
        return self.pod.command(self.rootfs, new_root, argv, self.env())

    def run(self, argv: Sequence[str], name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(argv, name), env={"PATH": CONTAINER_PATH}, capture_output=True, text=True,
                              timeout=120, check=False)

    def start(self, argv: Sequence[str], name: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(self.argv(argv, name), env={"PATH": CONTAINER_PATH}, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture(name="in_image")
def in_image_fixture(built: Built, rootfs: Path, tmp_path: Path) -> InImage:
    return InImage(rootfs, pod_of_the_chart(built), tmp_path, free_port(), free_port(), free_port())


def status_of(pid: int) -> dict[str, str]:
    fields = (line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {k: v.strip() for k, v in fields}


def test_the_root_filesystem_is_read_only_but_tmp(in_image: InImage) -> None:
    """The emulation holds: in the image the chart's user may write /tmp only. /var/tmp, writable by
    anyone in the image as built, refuses the write (read-only file system), as it does in the pod."""
    probe = ("import os, sys\n"
             "open('/tmp/written', 'w').write('ok')\n"
             "try:\n"
             "    open('/var/tmp/written', 'w')\n"
             "except OSError as e:\n"
             "    print('refused', e.errno == 30)\n"
             "print(os.getuid(), os.getgid(), os.getgroups(), os.getpid(), os.getcwd())\n"
             "status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
             "print(status['CapEff'].strip(), status['NoNewPrivs'].strip())\n")
    done = in_image.run(["python", "-c", probe], "probe")
    assert done.returncode == 0, done.stderr
    pod = in_image.pod
    assert done.stdout.splitlines() == [
        "refused True", f"{pod.uid} {pod.gid} [{pod.gid}] 1 /tmp", "0000000000000000 1"], done.stdout
    # The image itself is unchanged: /var/tmp of its root filesystem is writable by anyone.
    assert (in_image.rootfs / "var" / "tmp").stat().st_mode & 0o1777 == 0o1777


def wait_serving(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                if stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"the server in the image did not start:\n{log.read_text()}")
            time.sleep(0.2)


def server_pid(process: subprocess.Popen[bytes]) -> int:
    """The server's process: unshare's child, PID 1 of its namespace."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def play_over_grpc(port: int) -> None:
    """A whole match (two rounds) by two random bots, over gRPC with the Python client."""
    with GostopClient(f"127.0.0.1:{port}") as client:
        game = client.create_game("standard", 2, rounds=2)
        seats = {seat: (token, make_bot("random", seed=seat)) for seat, token in game.tokens.items()}
        report = run_seats(client, game, seats)
        assert report.finished and report.match is not None and report.match.finished
        assert report.rounds_started == 1 and sum(report.decisions.values()) > 10


async def play_over_http(port: int, protocol: str) -> None:
    """A whole one-round match over the HTTP port (Connect or gRPC-Web), as the browsers play."""
    api = Api(None, ConnectStub(f"http://127.0.0.1:{port}", protocol), port)  # type: ignore[arg-type]
    game = await api.create("standard", 2, seed=None, rounds=1, metadata=())
    results = await api.play_round(game, random.Random(7))
    assert results and results[-1].view.phase == pb.PHASE_OVER
    final = await api.get(game)
    assert final.view.match.finished and final.version == game.version


def http_get(port: int, path: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        return response.status, response.headers.get("content-type", ""), response.read().decode()


def test_server_in_the_image_serves_a_whole_game_and_stops_on_sigterm(in_image: InImage, tmp_path: Path) -> None:
    """The image's entrypoint run as the chart runs it: Health, whole games over gRPC, Connect and
    gRPC-Web, the web table and metrics; the image's health probe and the chart's preStop command in
    the image; then SIGTERM, and exit code 0."""
    log = tmp_path / "server.log"
    server = in_image.start(in_image.pod.entrypoint, "server", log)
    try:
        wait_serving(in_image.grpc_port, server, log)
        pid = server_pid(server)
        status = status_of(pid)
        assert status["NSpid"].split()[-1] == "1", "the server is PID 1 of its namespace"
        assert status["Uid"].split()[0] == str(in_image.pod.uid) and status["CapEff"] == "0" * 16
        assert status["NoNewPrivs"] == "1"
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"/opt/venv/bin/gostop", b"serve"]

        play_over_grpc(in_image.grpc_port)
        for protocol in ("connect", "grpc-web"):
            asyncio.run(play_over_http(in_image.http_port, protocol))
        code, kind, page = http_get(in_image.http_port, "/")
        assert code == 200 and kind.startswith("text/html") and "<script" in page
        code, _, metrics = http_get(in_image.metrics_port, "/metrics")
        assert code == 200 and re.search(r'^grpc_server_handled_total\{.*grpc_method="CreateGame"', metrics,
                                         re.MULTILINE), metrics[:2000]

        # The image's HEALTHCHECK and the chart's exec probes' program, and the preStop hook.
        for args, expected in (([], 0), ([SERVICE], 0), ([""], 0), (["no.such.Service"], 1)):
            done = in_image.run(["gostop-healthcheck", *args], f"probe-{len(args)}-{expected}-{args[:1]}")
            assert done.returncode == expected, (args, done.stdout, done.stderr)
            assert ("SERVING" in done.stdout) == (expected == 0), (args, done.stdout)
        pre_stop = server_container(DEFAULT)["lifecycle"]["preStop"]["exec"]["command"]
        done = in_image.run(pre_stop, "pre-stop")
        assert done.returncode == 0, (pre_stop, done.stderr)
    finally:
        if server.poll() is None:
            os.kill(server_pid(server), signal.SIGTERM)
        code = server.wait(timeout=120)
    output = log.read_text()
    assert code == 0, output
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert lines, "the server logs JSON (GOSTOP_LOG_FORMAT of the chart)"
    assert not [entry for entry in lines if entry.get("level") in ("error", "critical")], output
    done = in_image.run(["gostop-healthcheck"], "probe-after")
    assert done.returncode == 1 and "UNAVAILABLE" in done.stderr, done.stderr


# --- the OCI archive ---------------------------------------------------------------------------


def test_oci_archive_holds_the_image(built: Built, tmp_path: Path) -> None:
    """``buildah push`` to an OCI archive (what an operator copies into the cluster's registry, see
    docs/kubernetes.md): its manifest and configuration are the image's, and buildah reads it back."""
    version = built.config["Labels"]["org.opencontainers.image.version"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    archive = ARTIFACTS / f"gostop-{version}.oci.tar"
    archive.unlink(missing_ok=True)
    buildah("push", "--quiet", IMAGE, f"oci-archive:{archive}:gostop:{version}")
    built.figures["archive_mb"] = archive.stat().st_size / 1e6
    with tarfile.open(archive) as tar:
        def blob(digest: str) -> Any:
            member = tar.extractfile(f"blobs/{digest.replace(':', '/')}")
            assert member is not None
            return json.load(member)

        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        [entry] = index["manifests"]
        assert entry["annotations"]["org.opencontainers.image.ref.name"] == f"gostop:{version}"
        manifest = blob(entry["digest"])
        config = blob(manifest["config"]["digest"])
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert len(manifest["layers"]) == built.layers
    for key in ("User", "Entrypoint", "ExposedPorts", "Labels", "Env", "WorkingDir", "StopSignal"):
        assert config["config"].get(key) == built.config.get(key), key
    # Read back by buildah (the library skopeo copies with), which stores it under the archive's
    # name: an image of that name from before gets its name back.
    name = f"localhost/gostop:{version}"
    before = image_id(name)
    read_back = buildah("from", "--pull=never", "--name", f"gostop-archive-test-{os.getpid()}",
                        f"oci-archive:{archive}")
    try:
        info = json.loads(buildah("inspect", read_back))
        assert info["OCIv1"]["config"]["User"] == built.config["User"]
        assert len(info["OCIv1"]["rootfs"]["diff_ids"]) == built.layers
    finally:
        subprocess.run(["buildah", "rm", read_back], capture_output=True, check=False)
        pulled = image_id(name)
        if before and pulled != before:
            buildah("tag", before, name)
        if pulled and pulled != before:
            subprocess.run(["buildah", "rmi", pulled], capture_output=True, check=False)


def image_id(name: str) -> str:
    """The id of the image ``name`` in buildah's storage, "" if there is none."""
    done = subprocess.run(["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}", name],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


# --- the documentation -------------------------------------------------------------------------


def test_docs_show_how_the_test_builds_the_image() -> None:
    """docs/kubernetes.md's image section gives the commands this test runs: the bases' suites and
    packages, npm's version, buildah bud's flags and build arguments, and the OCI archive."""
    text = DOC.read_text()
    section = text[text.index("## The image"):text.index("## Install")].replace("\\\n", " ")
    commands = [" ".join(line.split()) for line in section.splitlines()]
    for base in BASES:
        [mmdebstrap] = [c for c in commands if c.startswith("mmdebstrap ") and f" {base.suite} " in c]
        assert f"--variant=minbase --include={','.join(base.packages)} " in mmdebstrap, mmdebstrap
    assert f"npm pack npm@{NODE_BASE.npm}" in commands
    [bud] = [c for c in commands if c.startswith("buildah bud ")]
    assert bud.startswith(f"buildah bud {' '.join(BUD_FLAGS)} "), bud
    assert [a.partition("=")[0] for a in re.findall(r"--build-arg (\S+)", bud)] == [b.arg for b in BASES]
    assert any(c.startswith("buildah push gostop:0.1.0 oci-archive:") for c in commands)
    assert "tests/deploy/test_image.py" in section and "make image-test" in section
