#!/usr/bin/env bash
# Runs the vitest suite on Node 24 in a copy of the checkout, so that the checkout's node_modules (better-sqlite3
# compiled for Node 20) stays as it is for the steps after it.   .ci/node24.sh WORK_DIR [vitest arguments...]
# WORK_DIR receives vitest-results.json and node-version; the Node binaries and the copy are removed at the end.
# NODE24_VERSION: the runtime (default: the newest 24.x). NODE24_HEADERS_VERSION: the headers better-sqlite3 is
# compiled against (default 24.18.1). From 24.19.0 on, node_object_wrap.h adds an environment cleanup hook to every
# ObjectWrap, and better-sqlite3 12 compiled against it can abort in Statement::~Statement ("Assertion failed: (env)
# != nullptr", nodejs/node#65446); compiled against 24.18.1 it also runs on later 24.x. better-sqlite3 13 does not
# use ObjectWrap but needs Node 22 or later.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:?usage: .ci/node24.sh WORK_DIR [vitest arguments...]}"
shift
mkdir -p "$work"
work="$(cd "$work" && pwd)"
tree="$work/tree"
trap 'rm -rf "$tree" "$work/node" "$work/headers"' EXIT

# `npm install node@X` fetches the Node binary for this platform, with its C headers, in its preinstall script.
platform="$(node -p 'process.platform + "-" + process.arch')"
install_node() { # version dir
  mkdir -p "$2"
  printf '{ "private": true, "allowScripts": { "node": true } }\n' >"$2/package.json"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$2" "node@$1" >/dev/null
}
install_node "${NODE24_VERSION:-24}" "$work/node"
runtime="$work/node/node_modules/node/node_modules/node-$platform"
headers_version="${NODE24_HEADERS_VERSION:-24.18.1}"
headers="$runtime"
if [ "$("$runtime/bin/node" -v)" != "v$headers_version" ]; then
  install_node "$headers_version" "$work/headers"
  headers="$work/headers/node_modules/node/node_modules/node-$platform"
fi
export PATH="$runtime/bin:$PATH" npm_config_nodedir="$headers"
node -v >"$work/node-version"
echo "node24: runtime $(node -v), native modules built against v$headers_version headers"

# The copy holds what git sees in the checkout (tracked and new files, uncommitted edits included), not what
# .gitignore leaves out (node_modules, dist, data).
rm -rf "$tree" && mkdir -p "$tree"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
  while IFS= read -r -d '' f; do if [ -e "$repo/$f" ]; then printf '%s\0' "$f"; fi; done |
  tar -C "$repo" --null -T - -cf - | tar -C "$tree" -xf -

# The checkout's installed packages and build, with better-sqlite3 (the one native module that is not N-API)
# rebuilt for Node 24: minutes faster than a second `npm ci`, and the same package versions as the Node 20 run.
cp -a "$repo/node_modules" "$repo/dist" "$tree/"
cd "$tree"
npm rebuild better-sqlite3 --no-audit --no-fund
rm -f "$work/vitest-results.json"
npx vitest run --reporter=default --reporter=json --outputFile="$work/vitest-results.json" "$@"
