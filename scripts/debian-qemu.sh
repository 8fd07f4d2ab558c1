#!/usr/bin/env bash
# QEMU from Debian's packages, beside the system's, touching neither the system's apt sources
# nor its installed packages: apt-get runs with a private source list, state and cache.
#
#   scripts/debian-qemu.sh qemu10 DIR   QEMU 10 of bookworm-backports (Debian 12) unpacked into
#                                       DIR with dpkg -x (and any library it needs that the
#                                       system lacks); run it as DIR/qemu-system-arm, a wrapper
#                                       that sets QEMU_MODULE_DIR and the library path
#   scripts/debian-qemu.sh second DIR   for make test: where the system's QEMU is older than 10 on
#                                       Debian 12, QEMU 10 as qemu10 DIR makes it, and its path
#                                       printed; elsewhere (Debian 13's QEMU is 10) nothing
#   scripts/debian-qemu.sh headers      third_party/qemu-plugin/api*/qemu-plugin.h again from
#                                       the QEMU source packages of Debian 12 (7.2, API 1) and of
#                                       bookworm-backports (10.0, API 4): Debian's binary packages
#                                       leave the header out (debian/not-installed)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

. "$(dirname "$0")/lib/debian_mirror.sh"

# private_apt DIR LINE...: apt-get and apt-cache under DIR/apt with the given source lines only.
private_apt() {
  local state=$1/apt
  shift
  mkdir -p "$state"/lists/partial "$state"/cache/archives/partial "$state"/sources.list.d
  printf '%s\n' "$@" >"$state/sources.list"
  : >"$state/status" # an empty dpkg status: apt resolves nothing against the system's packages
  APT_OPTS=(-o "Dir::Etc::SourceList=$state/sources.list" -o "Dir::Etc::SourceParts=$state/sources.list.d"
            -o "Dir::State=$state" -o "Dir::State::Lists=$state/lists" -o "Dir::State::status=$state/status"
            -o "Dir::Cache=$state/cache" -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
  apt-get "${APT_OPTS[@]}" -qq update
}

qemu10() {
  local dir=$1 version
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -x "$dir/qemu-system-arm" ] && "$dir/qemu-system-arm" --version >/dev/null 2>&1; then
    return 0
  fi
  private_apt "$dir" "deb $mirror bookworm main" "deb $mirror bookworm-backports main"
  version=$(apt-cache "${APT_OPTS[@]}" madison qemu-system-arm | awk '$3 ~ /bpo12/ && !found {print $3; found = 1}')
  [ -n "$version" ] || { echo "debian-qemu: bookworm-backports has no qemu-system-arm" >&2; exit 2; }
  mkdir -p "$dir/debs" "$dir/root"
  (cd "$dir/debs" && apt-get "${APT_OPTS[@]}" -qq download \
     "qemu-system-arm=$version" "qemu-system-common=$version" "qemu-system-data=$version")
  # The libraries QEMU 10 needs that this system has not installed (a fresh Debian 12 with
  # QEMU 7.2 has most): their packages from bookworm, unpacked beside it.
  local deps=() name
  for name in $(for deb in "$dir"/debs/*.deb; do dpkg-deb -f "$deb" Depends; done \
                | tr ',' '\n' | sed 's/[[:space:]]*(.*//; s/|.*//; s/[[:space:]]//g' | grep -v '^qemu-' | sort -u); do
    [ "$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null)" = "install ok installed" ] || deps+=("$name")
  done
  if [ ${#deps[@]} -gt 0 ]; then
    (cd "$dir/debs" && apt-get "${APT_OPTS[@]}" -qq download "${deps[@]}")
  fi
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
  # QEMU loads its modules from the system's directory unless told (QEMU_MODULE_DIR): the
  # system's are 7.2's and would not load.
  cat >"$dir/qemu-system-arm" <<EOF
#!/bin/sh
# QEMU $version, unpacked by scripts/debian-qemu.sh
export QEMU_MODULE_DIR="$dir/root/usr/lib/x86_64-linux-gnu/qemu"
export LD_LIBRARY_PATH="$dir/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$dir/root/usr/bin/qemu-system-arm" -L "$dir/root/usr/share/qemu" "\$@"
EOF
  chmod +x "$dir/qemu-system-arm"
  "$dir/qemu-system-arm" --version | head -n1
}

headers() {
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  private_apt "$work" "deb-src $mirror bookworm main" "deb-src $mirror bookworm-backports main"
  local api source version upstream
  for api in 1:bookworm 4:bookworm-backports; do
    source=${api#*:}
    api=${api%%:*}
    version=$(apt-cache "${APT_OPTS[@]}" showsrc qemu | awk -v s="$source" '
      /^Version:/ && !found && ((s ~ /backports/) == ($2 ~ /bpo/)) {print $2; found = 1}')
    upstream=${version#*:}
    upstream=${upstream%-*}
    (cd "$work" && apt-get "${APT_OPTS[@]}" -qq source --download-only --tar-only "qemu=$version" 2>/dev/null \
       || ls "$work"/qemu_"$upstream".orig.tar.* >/dev/null)
    mkdir -p "$repo/third_party/qemu-plugin/api$api"
    tar -xJf "$work"/qemu_"$upstream".orig.tar.xz -O --wildcards '*/include/qemu/qemu-plugin.h' \
      >"$repo/third_party/qemu-plugin/api$api/qemu-plugin.h"
    echo "api$api: qemu $version ($source): $(sha256sum "$repo/third_party/qemu-plugin/api$api/qemu-plugin.h" | cut -c1-64)"
  done
}

second() {
  local codename major
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  major=$(qemu-system-arm --version | sed -n '1s/.*version \([0-9]*\)\..*/\1/p')
  if [ "$codename" = bookworm ] && [ "${major:-0}" -lt 10 ]; then
    qemu10 "$1" >/dev/null
    echo "$(cd "$1" && pwd)/qemu-system-arm"
  fi
}

case "${1:-}" in
  second) [ $# -eq 2 ] || { echo "usage: $0 second DIR" >&2; exit 1; }; second "$2" ;;
  qemu10) [ $# -eq 2 ] || { echo "usage: $0 qemu10 DIR" >&2; exit 1; }; qemu10 "$2" ;;
  headers) headers ;;
  *) echo "usage: $0 qemu10 DIR | second DIR | headers" >&2; exit 1 ;;
esac
