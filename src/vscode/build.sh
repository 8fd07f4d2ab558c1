#!/bin/sh
# Builds the extension in DIR (a copy of src/vscode: npm writes nothing into the source tree)
# and packages it as VSIX. npm ci against package-lock.json runs again only when the lock changes.
# The recording header's TypeScript types (src/run_header.d.ts) are generated from its schema,
# docs/schema/run-header.schema.json, by json-schema-to-typescript (`npm run types`).
# Usage: build.sh DIR VSIX
#
# The extension is optional (CMakeLists.txt): when npm cannot fetch its packages, VSIX.unbuilt
# says why and the build goes on; `make test` then fails on it. A failure after the fetch (the
# TypeScript compiler, the packing) is this project's code and fails the build.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
dir=$1
vsix=$2
rm -f "$vsix.unbuilt"
mkdir -p "$dir"
rm -rf "$dir/src" "$dir/test" "$dir/out"
cp -r "$src/src" "$src/test" "$src/package.json" "$src/tsconfig.json" "$dir/"
# npm's error code (npm 9: "npm ERR! code X", npm 10 and later: "npm error code X") and its log.
unfetched() {
  code=$(sed -n 's/^npm \(ERR!\|error\) code \(.*\)/\2/p' "$2" | head -n1)
  echo "$1 ${code:-failed} (registry $(npm config get registry); log $2)" > "$vsix.unbuilt"
  rm -f "$vsix"   # an earlier build's, not this one's
}
if ! cmp -s "$src/package-lock.json" "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
  # One ping without retries first: npm ci retries an unreachable registry for about a minute,
  # and the build runs this again each time until the extension is built.
  if ! (cd "$dir" && npm ping --fetch-retries=0 --fetch-timeout=15000 > npm-ping.log 2>&1); then
    unfetched "npm cannot reach its registry:" "$dir/npm-ping.log"
    exit 0
  fi
  cp "$src/package-lock.json" "$dir/"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts > npm-ci.log 2>&1); then
    rm -rf "$dir/node_modules"
    unfetched "npm ci could not fetch the extension's packages:" "$dir/npm-ci.log"
    exit 0
  fi
fi
(cd "$dir" && RUN_HEADER_SCHEMA="$src/../../docs/schema/run-header.schema.json" npm run --silent types \
  && node node_modules/typescript/bin/tsc -p .)
python3 "$src/pack.py" "$dir" "$vsix"
