#!/usr/bin/env bash
# Installs what mcuprof needs, from Debian's packages only: scripts/setup.sh [demo|test]
#   demo: what `make build` needs for the command-line tool, the truth plugin and the C/C++
#         reference firmware, and what `make demo` runs (QEMU). The optional parts (the VS Code
#         extension, the Rust images) are left to `make test`: the build says in one line what
#         it skipped.
#   test (the default): all of that, the optional parts' tools, and every tool the tests run.
# Idempotent: when every package is already present it only checks and returns (well under a second).
set -euo pipefail

set=${1:-test}
case "$set" in
  demo|test) ;;
  *) echo "usage: $0 [demo|test]" >&2; exit 1 ;;
esac

packages=(
  build-essential cmake pkg-config python3
  libboost-dev libboost-program-options-dev nlohmann-json3-dev doctest-dev
  # libusb-1.0: the ST-Link's own USB transport (record --stlink usb)
  libusb-1.0-0-dev
  # libiberty-dev: c++filt's demangler (src/image/demangle.cc)
  libiberty-dev
  # libncurses-dev: the terminfo library LLVM links (libtinfo-dev is only a transitional name for it on
  # Debian 12 and a virtual one on Debian 13, which dpkg never reports installed)
  llvm-19-dev zlib1g-dev libzstd-dev libncurses-dev libxml2-dev libedit-dev libffi-dev
  # the reference firmware: C by arm-none-eabi-gcc, the vendor images by clang-19 (src/vendor)
  gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi clang-19
  # the C++ reference firmware (firmware-ref/src/cxx): std::sort and friends for arm-none-eabi-g++
  libstdc++-arm-none-eabi-dev
  # the truth plugin: QEMU 10's plugin API header includes glib.h
  libglib2.0-dev
  # the demo runs the firmware in QEMU
  qemu-system-arm
)
if [ "$set" = test ]; then
  packages+=(
    # the Rust reference firmware (firmware-ref/src/rust): Debian's rustc and the source of its core
    # library (built for thumbv7em from source); the peer demangler its names are checked against
    # (the rustc-demangle crate's source, built by tests/CMakeLists.txt)
    rustc rust-src librust-rustc-demangle-dev
    # the sanitizer tree's runtime (tests/robustness.sh: ASan, UBSan, libFuzzer)
    libclang-rt-19-dev
    openocd gdb-multiarch python3-pyocd
    # consumers of the report formats, run by the tests: callgrind_annotate, dot, a browser
    valgrind graphviz chromium python3-jsonschema
    # a pty bridged to QEMU's gdbstub stands for a serial GDB server (a Black Magic Probe) in the tests
    socat
    # a test counts the ELF's opens by `record --qemu --stacks` (one image, opened once)
    strace
    # go tool pprof reads --format pprof; CPack's .deb names its dependencies with dpkg-shlibdeps and file
    golang-go dpkg-dev file
    # the editor test builds code-server's native modules (kerberos includes gssapi.h)
    libkrb5-dev
  )
  # the VS Code extension and its test (docs/ide.md): Node and npm, Debian's unless a node is
  # already installed (NodeSource's nodejs carries its own npm and conflicts with Debian's)
  if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
    packages+=(nodejs npm)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  # dpkg-query prints "install ok installed" only for a fully installed package
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup ($set): installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
