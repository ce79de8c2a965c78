"""Generate the Python messages and gRPC stubs of proto/ (package ``gostop.v1``).

The build runs this (setup.py) into the wheel, and ``make`` into the source tree
(``clients/python/gostop/v1``, ignored by git), so the code is never committed and never edited:
protoc writes ``gostop/v1/...`` as the proto package implies, and the gRPC stubs import the
messages as ``gostop.v1`` with no rewriting.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
SOURCE_TREE = ROOT / "clients" / "python"


def _connect_plugin() -> str:
    """The Connect code generator (``protoc-gen-connectrpc``, a build requirement): beside this
    Python, or on PATH."""
    beside = Path(sys.executable).parent / "protoc-gen-connectrpc"
    found = str(beside) if beside.is_file() else shutil.which("protoc-gen-connectrpc")
    if found is None:
        raise RuntimeError("protoc-gen-connectrpc is not installed: pip install protoc-gen-connectrpc")
    return found


def generate(out: Path, proto: Path = PROTO) -> list[Path]:
    """Write ``gostop/v1/*_pb2*.py`` (and ``.pyi`` stubs), the gRPC stubs and the Connect services
    (``*_connect.py``, for ``google.protobuf`` messages, asyncio) under ``out``; return the files written."""
    from grpc_tools import protoc

    files = sorted(str(p.relative_to(proto)) for p in proto.rglob("*.proto"))
    if not files:
        raise RuntimeError(f"no .proto files under {proto}")
    folder = out / "gostop" / "v1"
    folder.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["grpc_tools.protoc", f"-I{proto}", f"-I{include}", f"--python_out={out}",
                        f"--pyi_out={out}", f"--grpc_python_out={out}",
                        f"--plugin=protoc-gen-connectrpc={_connect_plugin()}", f"--connectrpc_out={out}",
                        "--connectrpc_opt=protobuf=google,io=async", *files])
    if code != 0:
        raise RuntimeError(f"protoc failed ({code}) on {', '.join(files)}")
    (folder / "__init__.py").write_text('"""Generated from proto/gostop/v1 by the build: do not edit."""\n')
    (folder / "py.typed").touch()
    return sorted(folder.iterdir())


def main() -> int:
    generate(SOURCE_TREE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
