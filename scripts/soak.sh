#!/usr/bin/env bash
# Runs the test labels that drive QEMU (live, vprobe, faults, integration) several times on an
# idle machine and as many times with every core kept busy by other work, and prints how often
# each test passed in each condition. A test that depends on how fast QEMU runs shows up here.
#
#   scripts/soak.sh [-n RUNS] [-L LABEL_REGEX] [-j JOBS] [BUILD]
#
# RUNS defaults to 2, LABEL_REGEX to 'live|vprobe|faults|integration', BUILD to build (after
# `make build`). The load is one busy loop per core at normal priority, started before and
# stopped after each loaded run. Exit status 0 when every test passed every time.
set -euo pipefail
runs=2
labels='live|vprobe|faults|integration'
jobs=2
while getopts "n:L:j:" opt; do
    case $opt in
    n) runs=$OPTARG ;;
    L) labels=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-L LABEL_REGEX] [-j JOBS] [BUILD]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
build=$(cd "${1:-build}" && pwd)
results=$build/soak   # each run's ctest log and JUnit report stay here for a look afterwards
rm -rf "$results"; mkdir -p "$results"
load_pids=()

stop_load() {
    for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    load_pids=()
}
trap stop_load EXIT

start_load() {
    for _ in $(seq "$(nproc)"); do
        bash -c 'while :; do :; done' &
        load_pids+=($!)
    done
}

for condition in idle loaded; do
    for run in $(seq "$runs"); do
        [ "$condition" = loaded ] && start_load
        started=$(date +%s)
        (cd "$build" && ctest -L "$labels" -j"$jobs" --output-on-failure \
            --output-junit "$results/$condition-$run.xml" > "$results/$condition-$run.log" 2>&1) || true
        stop_load
        echo "soak: $condition run $run of $runs: $(( $(date +%s) - started )) s, load average $(cut -d' ' -f1 /proc/loadavg)" \
             "($(grep -E '^[0-9]+% tests passed' "$results/$condition-$run.log" || echo 'no ctest summary'))"
    done
done

python3 - "$results" "$runs" <<'EOF'
import sys, xml.etree.ElementTree as ET
from pathlib import Path
results, runs = Path(sys.argv[1]), int(sys.argv[2])
passes = {}
for condition in ("idle", "loaded"):
    for run in range(1, runs + 1):
        path = results / f"{condition}-{run}.xml"
        if not path.exists():
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            ok = case.get("status") == "run"
            entry = passes.setdefault(case.get("name"), {"idle": 0, "loaded": 0})
            entry[condition] += ok
width = max((len(n) for n in passes), default=4)
print(f"{'test':<{width}}  idle  loaded   (passes of {runs} runs each)")
bad = 0
for name in sorted(passes):
    e = passes[name]
    bad += (e["idle"] < runs) + (e["loaded"] < runs)
    mark = "" if e["idle"] == runs and e["loaded"] == runs else "   <- not every time"
    print(f"{name:<{width}}  {e['idle']:>4}  {e['loaded']:>6}{mark}")
print(f"soak: {len(passes)} tests, {bad} test-conditions short of {runs} passes")
sys.exit(1 if bad else 0)
EOF
