#!/usr/bin/env bash
# The Python SDK's wire messages and stubs, generated from proto/ (never hand-written):
#   sdk/python/scripts/generate.sh [out_dir]    (default: sdk/python/src/telha/_gen)
# Needs Debian's protobuf-compiler and protobuf-compiler-grpc (protoc 3.21, grpc_python_plugin
# 1.51): the versions whose runtimes (python3-protobuf, python3-grpcio) the package requires at least.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
out="${1:-$here/../src/telha/_gen}"
plugin="$(command -v grpc_python_plugin || true)"
if ! command -v protoc >/dev/null || [ -z "$plugin" ]; then
  echo "generate.sh: needs protoc and grpc_python_plugin: apt-get install protobuf-compiler protobuf-compiler-grpc" >&2
  exit 1
fi
mkdir -p "$out"
rm -rf "$out/telha"
protoc -I "$repo/proto" \
  --python_out="$out" --pyi_out="$out" \
  --grpc_python_out="$out" --plugin=protoc-gen-grpc_python="$plugin" \
  "$repo/proto/telha/v1/queue.proto"
# protoc writes imports as from the proto root (`from telha.v1 import ...`), which would resolve
# inside this package's own `telha`: point them at where the files live.
sed -i 's/^from telha\.v1 import/from telha._gen.telha.v1 import/' "$out/telha/v1/queue_pb2_grpc.py"
touch "$out/telha/__init__.py" "$out/telha/v1/__init__.py"
