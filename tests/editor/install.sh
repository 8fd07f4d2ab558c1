#!/bin/sh
# Installs what the editor test runs the extension in, into DIR (build/editor-test): code-server
# (VS Code, from the npm registry) and playwright-core, the versions a lock file pins: on Node 20
# or later tests/editor/package-lock.json (code-server 4.100.3, playwright-core 1.65.2), on Node 18
# (Debian 12's nodejs) tests/editor/node18/package-lock.json (code-server 4.89.1, VS Code 1.89.1,
# and playwright-core 1.61.1: the last releases of each that run on Node 18).
# code-server's own postinstall would download ripgrep from GitHub, so its steps are done here
# without it: VS Code's dependencies (its npm-shrinkwrap.json), its native modules built for this
# Node, the links it makes. Search in files is the one feature ripgrep gives that we do without.
# A second run with the same lock file and Node does nothing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
stamp="$dir/.installed"
major=$(node -p 'process.versions.node.split(".")[0]')
# --legacy-peer-deps, for VS Code's own install: npm 9 (Debian 12's) refuses VS Code 1.89's peer
# dependencies otherwise (ERESOLVE: its @xterm add-ons, betas, want @xterm/xterm ^5.0.0 as peer);
# code-server's own postinstall passes it too
# NODE_API_EXPERIMENTAL_NOGC_ENV_OPT_OUT: VS Code 1.89's kerberos defines NAPI_EXPERIMENTAL and
# builds against node-addon-api 4.3, whose finalizers take a non-const env; Node 18.20's headers
# want a const one there unless this opt-out (theirs, js_native_api_types.h) is defined
legacy=
native_flags=
case $major in
  18|19) here="$here/node18"; legacy=--legacy-peer-deps; native_flags=-DNODE_API_EXPERIMENTAL_NOGC_ENV_OPT_OUT ;;
esac
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
npm install --omit=dev --ignore-scripts $legacy > "$dir/npm-vscode.log" 2>&1 || { cat "$dir/npm-vscode.log"; exit 1; }
# the native modules VS Code's server loads (not the Windows ones, not ripgrep's download): those
# with an install script, and those with only a binding.gyp (npm's implicit node-gyp build;
# VS Code 1.89's lock does not mark @vscode/spdlog and native-watchdog as having a script)
native=$(node -e 'const fs = require("fs"), p = require("./npm-shrinkwrap.json").packages;
  console.log(Object.keys(p).filter(k => k && (p[k].hasInstallScript || fs.existsSync(k + "/binding.gyp"))
    && !/ripgrep|windows/.test(k)).map(k => k.replace(/^node_modules\//, "")).join(" "))')
mkdir -p node_modules/@vscode/ripgrep/bin
# node-pty's post-install step (a compile_commands.json, by npx) fails offline after its build
CPPFLAGS="${CPPFLAGS:-} $native_flags" npm rebuild $native > "$dir/npm-native.log" 2>&1 || grep -q 'pty.node' "$dir/npm-native.log" || true
for m in node_modules/@vscode/spdlog/build/Release/spdlog.node node_modules/node-pty/build/Release/pty.node; do
  [ -f "$m" ] || { cat "$dir/npm-native.log"; echo "install.sh: $m was not built"; exit 1; }
done
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
echo "$want" > "$stamp"
