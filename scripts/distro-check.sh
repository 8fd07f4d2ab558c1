#!/usr/bin/env bash
# The two README commands on a fresh Debian root:
#   scripts/distro-check.sh debian12|debian13 [--demo-only] [DIR]
#
# Builds a minimal root of that release with debootstrap (into DIR, default
# /var/tmp/mcuprof-distro-check/RELEASE, emptied first), clones this checkout's committed HEAD
# into it, and runs `make demo` then `make test` there under chroot, as root, with a clean
# environment: setup.sh installs each command's packages from that release, and the compiler
# cache starts empty. Prints each command's time and the closing line of `make test`; the logs
# are DIR.demo.log and DIR.test.log. Exits non-zero when either command failed.
# --demo-only runs `make demo` alone: the time the README gives for it. JOBS=N in the
# environment is passed to make (its -j; the Makefile's default is 2).
#
# Needs root (debootstrap, chroot, mounts) and debootstrap (installed when missing). /proc,
# /sys and /dev (with /dev/pts and /dev/shm: QEMU's pty, Chromium) are mounted into the root
# and unmounted on every exit. The root is left in place for a look afterwards (about 4 GB).
set -euo pipefail

usage="usage: $0 debian12|debian13 [--demo-only] [DIR]"
case "${1:-}" in
  debian12) suite=bookworm ;;
  debian13) suite=trixie ;;
  *) echo "$usage" >&2; exit 1 ;;
esac
release=$1
shift
targets="demo test"
if [ "${1:-}" = --demo-only ]; then
  targets=demo
  shift
fi
[ $# -le 1 ] || { echo "$usage" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/mcuprof-distro-check/$release}
if [ "$(id -u)" -ne 0 ]; then
  echo "distro-check: needs root (debootstrap, chroot, mount)" >&2
  exit 1
fi

. "$(dirname "$0")/lib/debian_mirror.sh"

mounted=()
cleanup() {
  local k
  for ((k = ${#mounted[@]} - 1; k >= 0; k--)); do
    umount -R "${mounted[k]}" 2>/dev/null || umount -lR "${mounted[k]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null

# A root left mounted by a killed run is unmounted before it is emptied.
for sub in dev sys proc; do
  if mountpoint -q "$root/$sub" 2>/dev/null; then umount -lR "$root/$sub"; fi
done
rm -rf "$root"
mkdir -p "$root"

start=$(date +%s)
# minbase has no make, which a user types `make demo` with; the host's git clones the checkout
# into the root below.
echo "distro-check: debootstrap $suite into $root"
debootstrap --variant=minbase --include=make,ca-certificates "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
  || { tail -n 20 "$root.debootstrap.log"; exit 1; }
echo "deb $mirror $suite-updates main" >>"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The certificate authorities this machine adds to Debian's (an organisation's, a TLS-inspecting
# proxy's: /usr/local/share/ca-certificates) go into the root as well, as they would be on any
# machine of this network: without them npm's registry fails there with
# SELF_SIGNED_CERT_IN_CHAIN, which says nothing about the release being checked.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" /usr/sbin/update-ca-certificates >/dev/null 2>&1
fi
echo "distro-check: root ready in $(( $(date +%s) - start )) s"

mount -t proc proc "$root/proc"; mounted+=("$root/proc")
mount -t sysfs sysfs "$root/sys"; mounted+=("$root/sys")
mount --rbind /dev "$root/dev"; mount --make-rslave "$root/dev"; mounted+=("$root/dev")

git clone --quiet "$repo" "$root/root/mcuprof"

in_root() {
  # Node reads its own list of authorities unless told of the system's, as this machine tells it.
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt} \
    /bin/bash -c "cd /root/mcuprof && $1"
}

status=0
for target in $targets; do
  t0=$(date +%s)
  if in_root "make $target ${JOBS:+JOBS=$JOBS}" >"$root.$target.log" 2>&1; then result=ok; else result=failed; status=1; fi
  seconds=$(( $(date +%s) - t0 ))
  echo "distro-check: $release make $target: $result in $((seconds / 60)) min $((seconds % 60)) s (log $root.$target.log)"
done
grep -h '^build: skipped' "$root.demo.log" || true
[ "$targets" = demo ] && exit $status
closing=$(grep -E '^tests: [0-9]+ passed' "$root.test.log" | tail -n1 || true)
echo "distro-check: $release closing line: ${closing:-(none; see $root.test.log)}"
grep -E '^(failed|skipped):' "$root.test.log" || true
exit $status
