"""Wall-clock timing for the benchmarks (bench/): the median of several runs of a command, since
the machine is shared and one run can be unlucky."""
import subprocess
import sys
import time


def median_run(command: list[str], runs: int) -> tuple[float, str]:
    """The median wall time of `runs` runs of `command`, and the last run's standard output;
    a failed run ends the benchmark with its error."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit("bench: %s failed: %s" % (" ".join(command), result.stderr.strip()))
    return sorted(times)[len(times) // 2], result.stdout


def interleaved_medians(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, str]]:
    """median_run for several commands, run in turn (one of each per round), so that a busy
    spell of a shared machine falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, str] = {}
    for _ in range(runs):
        for name, command in commands.items():
            seconds, outputs[name] = median_run(command, 1)
            times[name].append(seconds)
    return {name: (sorted(t)[len(t) // 2], outputs[name]) for name, t in times.items()}
