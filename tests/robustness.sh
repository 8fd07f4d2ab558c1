#!/usr/bin/env bash
# Robustness checks in a second build, with clang's sanitizers (ASan, UBSan) and libFuzzer:
#   robustness.sh build SOURCE BINARY FUZZ...  configure and build the sanitizer tree: the unit
#                                              tests and the fuzz targets fuzz_FUZZ
#   robustness.sh unit BINARY                  the unit tests under ASan and UBSan
#   robustness.sh fuzz SOURCE BINARY TARGET S  one fuzz target for S seconds from its seed corpus
# Any crash, sanitizer report or uncaught exception fails the step; its input is kept and named.
set -euo pipefail
step=$1
case "$step" in
build)
    source_dir=$2; tree=$3/sanitize
    launcher=()   # ccache when installed (the Makefile sets its base directory)
    if command -v ccache > /dev/null; then
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    # A unity build (CMake batches each library's sources into a few files, so each header is
    # read once a batch): 166 s against 200 s file by file on an idle 2-core machine with an
    # empty cache (2026-12-02). It also compiles each source next to others, where a helper's
    # name can meet another file's: that found dot_report.cc's quoted() losing to std::quoted.
    cmake -S "$source_dir" -B "$tree" -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${launcher[@]}" \
        -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCUPROF_SANITIZE=ON -DMCUPROF_FIRMWARE_DIR="$3/firmware-ref" > "$tree.configure.log" 2>&1 \
        || { cat "$tree.configure.log"; exit 1; }
    targets=(mcuprof_tests)
    for t in "${@:4}"; do targets+=("fuzz_$t"); done
    cmake --build "$tree" -j2 --target "${targets[@]}"
    ;;
unit)
    tree=$2/sanitize
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$tree/tests/mcuprof_tests"
    ;;
fuzz)
    source_dir=$2; tree=$3/sanitize; target=$4; seconds=$5
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cp "$source_dir/tests/fuzz/corpus/$target/"* "$work/"
    # -timeout: an input that takes over 10 s is a hang; crashes land in $3/fuzz-crashes.
    mkdir -p "$3/fuzz-crashes"
    if ! "$tree/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$3/fuzz-crashes/$target-" -print_final_stats=1 "$work" > "$work/log" 2>&1; then
        tail -60 "$work/log"
        exit 1
    fi
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/log" | sed "s/^/fuzz_$target: /"
    ;;
esac
