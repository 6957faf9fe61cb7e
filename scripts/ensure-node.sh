#!/usr/bin/env bash
# Prints the directory of a Node.js binary that this project can run on (>= 22.19).
# Where the machine's node is older, Node 24 LTS is provisioned from the npm registry's
# node-linux-<arch> package into .tools/ (git-ignored) and that directory is printed instead.
# Progress goes to stderr so that `$(shell ...)` in the Makefile only sees the path.
set -euo pipefail

want="${PORTCULLIS_NODE_VERSION:-24.21.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"

node_ok() {
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' 2>/dev/null
}

if sys="$(command -v node)" && node_ok "$sys"; then
  dirname "$sys"
  exit 0
fi

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ensure-node: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac

dir="$root/.tools/node-$want-$arch"
if [ ! -x "$dir/bin/node" ]; then
  echo "ensure-node: system node is older than 22.19; provisioning Node $want (node-linux-$arch) into $dir" >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$want" >/dev/null)
  mkdir -p "$dir.partial"
  tar xzf "$tmp/node-linux-$arch-$want.tgz" -C "$dir.partial" --strip-components=1
  rm -rf "$dir" && mv "$dir.partial" "$dir"
fi
node_ok "$dir/bin/node" || { echo "ensure-node: $dir/bin/node does not run" >&2; exit 1; }
echo "$dir/bin"
