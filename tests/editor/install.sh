#!/bin/sh
# Installs what the editor test runs the extension in, into DIR (build/editor-test): code-server
# (VS Code, from the npm registry) and playwright-core, the versions package-lock.json pins.
# code-server's own postinstall would download ripgrep from GitHub, so its steps are done here
# without it: VS Code's dependencies (its npm-shrinkwrap.json), its native modules built for this
# Node, the links it makes. Search in files is the one feature ripgrep gives that we do without.
# A second run with the same lock file does nothing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
stamp="$dir/.installed"
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)-$(node --version)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
rm -rf "$dir"
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
cd "$dir"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
npm ci --ignore-scripts > npm-ci.log 2>&1 || { cat npm-ci.log; exit 1; }
# argon2 (code-server's password hashing, loaded at start): no prebuilt binary can be fetched
# from GitHub, so node-pre-gyp builds it
npm rebuild argon2 > npm-argon2.log 2>&1 || { cat npm-argon2.log; exit 1; }
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts > "$dir/npm-vscode.log" 2>&1 || { cat "$dir/npm-vscode.log"; exit 1; }
# the native modules VS Code's server loads (not the Windows ones, not ripgrep's download)
native=$(node -e 'const p = require("./npm-shrinkwrap.json").packages;
  console.log(Object.keys(p).filter(k => k && p[k].hasInstallScript && !/ripgrep|windows/.test(k))
    .map(k => k.replace(/^node_modules\//, "")).join(" "))')
mkdir -p node_modules/@vscode/ripgrep/bin
# node-pty's post-install step (a compile_commands.json, by npx) fails offline after its build
npm rebuild $native > "$dir/npm-native.log" 2>&1 || grep -q 'pty.node' "$dir/npm-native.log" || true
for m in node_modules/@vscode/spdlog/build/Release/spdlog.node node_modules/node-pty/build/Release/pty.node; do
  [ -f "$m" ] || { cat "$dir/npm-native.log"; echo "install.sh: $m was not built"; exit 1; }
done
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
echo "$want" > "$stamp"
