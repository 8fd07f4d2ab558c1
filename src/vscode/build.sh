#!/bin/sh
# Builds the extension in DIR (a copy of src/vscode: npm writes nothing into the source tree)
# and packages it as VSIX. npm ci against package-lock.json runs again only when the lock changes.
# The recording header's TypeScript types (src/run_header.d.ts) are generated from its schema,
# docs/schema/run-header.schema.json, by json-schema-to-typescript (`npm run types`).
# Usage: build.sh DIR VSIX
set -eu
src=$(cd "$(dirname "$0")" && pwd)
dir=$1
vsix=$2
mkdir -p "$dir"
rm -rf "$dir/src" "$dir/test" "$dir/out"
cp -r "$src/src" "$src/test" "$src/package.json" "$src/tsconfig.json" "$dir/"
if ! cmp -s "$src/package-lock.json" "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
  cp "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts > npm-ci.log 2>&1) || { cat "$dir/npm-ci.log"; exit 1; }
fi
(cd "$dir" && RUN_HEADER_SCHEMA="$src/../../docs/schema/run-header.schema.json" npm run --silent types \
  && node node_modules/typescript/bin/tsc -p .)
python3 "$src/pack.py" "$dir" "$vsix"
