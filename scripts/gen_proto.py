"""Generate the Python protobuf and gRPC modules from proto/ into service/pb/.

The generated gRPC module imports its messages as ``gostop.v1``; they are rewritten to a
relative import so that the generated tree lives inside the ``service`` package.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
OUT = ROOT / "service" / "pb"


def main() -> int:
    files = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    OUT.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO}",
            f"-I{include}",
            f"--python_out={OUT}",
            f"--pyi_out={OUT}",
            f"--grpc_python_out={OUT}",
            *files,
        ]
    )
    if code != 0:
        return int(code)
    for path in OUT.rglob("*.py"):
        text = path.read_text()
        fixed = text.replace("from gostop.v1 import", "from . import")
        if fixed != text:
            path.write_text(fixed)
    for folder in [OUT, *[p for p in OUT.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()
    (OUT / "py.typed").touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
