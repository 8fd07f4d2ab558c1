"""Live recordings of the reference firmware under QEMU that the live tests share: mcuprof
run and its JSON report read, a run recorded with the truth plugin and replayed under
`mcuprof record --pace icount`, a never-ending image stopped so that the truth is written,
and shares checked within z standard errors of the truth's: sqrt(p(1-p)/N) for samples each
taken on its own, and for wall-clock halts the spread between batches of consecutive halts
(batch_errors), since how far the core runs between two halts is up to the host."""
from __future__ import annotations

import json
import math
import sys
import struct
import subprocess
import unittest
from pathlib import Path

import fwtest
import qemu_runner
import run_header

Z = 4.0


def mcuprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(fwtest.CLI), *args], capture_output=True, text=True, timeout=600)


def report_json(path: Path, elf: Path, *extra: str) -> dict:
    r = mcuprof("report", str(path), "--elf", str(elf), "--format", "json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def counts_of(doc: dict) -> dict[str, float]:
    return {row["name"]: row["samples"] for row in doc["functions"]}


def truth_by_function(run_name: str, counts: dict[int, int]) -> dict[str, float]:
    return dict(fwtest.by_function(counts, fwtest.symbols(run_name)))


def within(observed: dict[str, float], truth: dict[str, float], names, n: float, z: float = Z):
    """(name, observed share, true share, bound) for every name outside z standard errors."""
    total_truth = sum(truth.get(k, 0) for k in names)
    bad = []
    for k in names:
        p = truth.get(k, 0) / total_truth
        q = observed.get(k, 0) / n
        se = math.sqrt(p * (1 - p) / n)
        if abs(q - p) > z * se:
            bad.append((k, round(100 * q, 3), round(100 * p, 3), round(100 * z * se, 3)))
    return bad


def recorded_run(test: unittest.TestCase, elf: Path, work: Path, uart: bool,
                 truth_args: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Runs the image to its end under QEMU's record mode with the truth plugin (and its
    `truth_args`); returns the record/replay log and the truth's counts file. A replay must have
    the devices the recording had: with `uart`, both write the UART to a file (the replay's gets
    the same text)."""
    rr, truth = work / "rr.bin", work / "truth.txt"
    with qemu_runner.QemuRun(elf, record=rr, truth=truth, truth_args=truth_args,
                             uart=work / "recorded-uart.txt" if uart else None, timeout=300) as q:
        test.assertEqual(q.wait(), 0)
    return rr, truth


def replayed_recording(test: unittest.TestCase, name: str, samples_wanted: int, seed: str, *extra: str,
                       uart: Path | None = None, truth_args: tuple[str, ...] = ()):
    """Runs the image once, recording it (QEMU record/replay) with the truth plugin, then
    replays it under `mcuprof record --pace icount` with about `samples_wanted` samples over
    the whole run (the replay writes the firmware's UART to `uart` when given: the same
    output as the recorded run). Returns the JSON report and the truth's per-address counts.
    The run's length is counted in instructions, so the sample count does not depend on how
    fast QEMU runs."""
    elf = fwtest.elf_path(name)
    work = fwtest.work_dir("mcuprof-live-")
    rr, truth = recorded_run(test, elf, work, uart=uart is not None, truth_args=truth_args)
    counts = fwtest.read_counts(truth)
    total = sum(counts.values())
    rec = work / "rec.bin"
    with qemu_runner.QemuRun(elf, replay=rr, gdb=True, halted=True, uart=uart, timeout=600) as q:
        r = mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}",
                    "--pace", "icount", "--interval", str(total // samples_wanted),
                    "--samples", str(10 * samples_wanted), "--seed", seed,
                    "--elf", str(elf), "-o", str(rec), "--format", "json", *extra)
        test.assertEqual(r.returncode, 0, r.stderr)
        q.wait()
    test.assertIn("the target exited", r.stderr)   # the samples cover the whole run
    return json.loads(r.stdout), counts


# The truth plugin's cost an instruction for the three-loop wall-clock tests: a little above
# QEMU's own time an instruction with one a translation block, so the guest runs a round of
# its loops (5000 instructions) in a few halts' time and consecutive halts stay nearly
# independent.
LOOPS_COST_NS = 250


def time_census_of(elf: Path, work: Path, name: str, record) -> tuple[object, dict[int, int], dict[int, int]]:
    """`record(q)` run against `elf` in QEMU at uniform cost (gdbstub on q.gdb_port) between
    two census snapshots: what it returned, and the time census of its window by address, the
    host time in which a halt requested at a wall-clock instant would have stopped at each
    instruction (firmware-ref/truth/truth.c, charge_time). That, not the instruction counts, is
    the reference of wall-clock halts: a wall-clock sampler draws from host time, and how QEMU's
    host time spreads over the instructions is up to the host and its load. The window's
    instruction counts of the three loops are printed beside. Third, the window's stalls by
    address (qemu_runner.snapshot_stalls: stretches the census gave at once to one instruction,
    the host preempting QEMU's vCPU thread), for wall_clock_loops_check's `stalls`."""
    with qemu_runner.QemuRun(elf, gdb=True, truth=work / "truth.txt", uniform_cost_ns=LOOPS_COST_NS, uart=None,
                             workdir=work, timeout=600) as q:
        q.wait_listening(q.gdb_port)
        before = q.snapshot_census()
        result = record(q)
        after = q.snapshot_census()
        q.stop()
    counts = truth_by_function(name, qemu_runner.census_window(before[0], after[0]))
    loops = ("hot_a", "hot_b", "hot_c")
    total = sum(counts.get(k, 0) for k in loops)
    print(f"\n{name}: the window's instruction counts " +
          ", ".join(f"{k} {100 * counts.get(k, 0) / max(1, total):.2f} %" for k in loops), file=sys.stderr)
    return result, qemu_runner.census_window(before[1], after[1]), qemu_runner.census_window(before[2], after[2])


def still_running(q: qemu_runner.QemuRun) -> bool:
    """QEMU's own word (QMP query-status) that the guest runs: not halted by a debugger."""
    return q.qmp("query-status")["running"]


def recorded_samples(path: Path) -> list[tuple[int, int]]:
    """(PC, core) of every sample of a samples file in the order taken (docs/formats.md,
    Recording: the core in bits 8-15 of the flags; a halt of several cores writes core 0's
    sample first), read without mcuprof."""
    data = path.read_bytes()
    at, samples = run_header.records_start(data, str(path)), []
    while at + 8 <= len(data):
        kind, size, _ = struct.unpack_from("<HHI", data, at)
        if kind == 1:
            pc = struct.unpack_from("<QI", data, at + 8)[1]
            flags = struct.unpack_from("<I", data, at + 8 + 28)[0]
            samples.append((pc, (flags >> 8) & 0xFF))
        at += 8 + size
    return samples


def recorded_pcs(path: Path) -> list[int]:
    """The PCs of a samples file in the order taken, read without mcuprof."""
    return [pc for pc, _ in recorded_samples(path)]


def batch_errors(rows: list[str], names) -> dict[str, float]:
    """Each name's standard error of its share of `rows` (a row name per sample, in the order
    taken) from the spread between batches of consecutive samples: min(30, floor(sqrt(N)))
    batches of N // k, the last taking the rest, and the ratio estimator of cluster sampling,
    var(p) = k / (k - 1) * sum_c (y_c - p m_c)^2 / N^2 (Cochran, Sampling Techniques, 6.13).
    Written here from the formula, apart from mcuprof's code (src/profile/attribution.cc)."""
    n = len(rows)
    k = min(30, math.isqrt(n))
    assert k >= 2, f"{n} samples are too few for batches"
    bounds = [c * (n // k) for c in range(k)] + [n]
    errors = {}
    for name in names:
        p = sum(1 for r in rows if r == name) / n
        spread = 0.0
        for c in range(k):
            batch = rows[bounds[c]:bounds[c + 1]]
            spread += (sum(1 for r in batch if r == name) - p * len(batch)) ** 2
        errors[name] = math.sqrt(k / (k - 1) * spread / (n * n))
    return errors


def wall_clock_loops_check(test: unittest.TestCase, rec: Path, name: str, counts: dict[int, int],
                           doc: dict | None = None, stalls: dict[int, int] | None = None) -> None:
    """The three loops of a wall-clock halting recording against a census of the truth plugin
    (time_census_of's, for halts paced by the host's clock): each loop's
    share among the three within 4 standard errors from the spread between batches of
    consecutive halts (batch_errors). How far QEMU's core runs between two halts is up to the
    host: on a loaded one little, and neighbouring halts then fall in the same loop, so binomial
    errors are too small (1.1-1.9 times, measured at load 10). The errors must still be small
    enough for the check to mean something: at most 4 times the binomial ones. With `doc`,
    mcuprof's JSON report of the recording: its errors are batches', equal to these. With
    `stalls` (time_census_of's third), each share is held to the interval between the census
    and the census less its stalls, as every OpenOCD rig's is (openocd_record_suite, docs/live.md
    "The hla_swd PCSR residue"): a halt waits out a stall and lands in it once, however long it
    was, so a loaded host's stalls inflate the census where no sampler can follow."""
    loops = ["hot_a", "hot_b", "hot_c"]
    syms = fwtest.symbols(name)
    pcs = recorded_pcs(rec)
    every = [syms.lookup(pc & ~1) for pc in pcs]
    rows = [r for r in every if r in loops]
    n = len(rows)
    test.assertGreater(n, 0.8 * len(every))
    truth = truth_by_function(name, counts)
    total_truth = sum(truth.get(k, 0) for k in loops)
    free = truth_by_function(name, fwtest.stall_free_census(counts, stalls or {}))
    total_free = sum(free.get(k, 0) for k in loops)
    errors = batch_errors(rows, loops)
    # What a failure needs to be read (issue 44: hot_a once at 85.3 % against 69.9 % beyond 4
    # batch errors, not reproduced): how often a halt found the PC of the halt before (the core
    # ran no instruction between them, or whole passes of one loop), the shares among the
    # first halts of each run of equal PCs (repeats left out; a repeat is likelier in the
    # longest loop, so there hot_a reads 1-3 points under its share with nothing biased:
    # 66.6-68.3 % in 21 recordings at load 5-18, QEMU 7.2 and 10), and hot_a's lowest and
    # highest share in a batch (a bias in every batch, or in a few).
    firsts = [every[i] for i in range(len(pcs)) if (i == 0 or pcs[i] != pcs[i - 1]) and every[i] in loops]
    k = min(30, math.isqrt(n))
    batches = [rows[c * (n // k):(c + 1) * (n // k) if c < k - 1 else n] for c in range(k)]
    batch_a = [batch.count("hot_a") / len(batch) for batch in batches]
    print(f"{name}: {100 * sum(a == b for a, b in zip(pcs, pcs[1:])) / max(1, len(pcs) - 1):.1f} % of halts at the "
          f"PC of the halt before; without those repeats " +
          ", ".join(f"{x} {100 * firsts.count(x) / max(1, len(firsts)):.2f} %" for x in loops) +
          f"; hot_a per batch {100 * min(batch_a):.1f} to {100 * max(batch_a):.1f} %", file=sys.stderr)
    bad = []
    for k in loops:
        p, q, se = truth.get(k, 0) / total_truth, rows.count(k) / n, errors[k]
        p_free = free.get(k, 0) / total_free
        binomial = math.sqrt(p * (1 - p) / n)
        print(f"{name} {k}: {100 * q:.2f} % against {100 * p:.2f} % ({100 * p_free:.2f} % less its stalls), "
              f"standard error {100 * se:.2f} pp ({se / binomial:.2f} times the binomial)", file=sys.stderr)
        test.assertLessEqual(se, 4 * binomial, f"{k}: halts so correlated that the check means little")
        if max(min(p, p_free) - q, q - max(p, p_free)) > Z * se:
            bad.append((k, round(100 * q, 3), round(100 * p, 3), round(100 * Z * se, 3)))
    test.assertEqual(bad, [])
    if doc is not None:
        test.assertEqual(doc["errors"]["method"], "batches")
        test.assertEqual(doc["errors"]["batches"], min(30, math.isqrt(len(every))))
        reported = {row["name"]: row["stderr"] for row in doc["functions"]}
        for k, se in batch_errors(every, loops).items():
            test.assertAlmostEqual(reported[k], 100 * se, delta=1e-6, msg=k)


def three_loops_within_4_se(test: unittest.TestCase, result: subprocess.CompletedProcess, name: str,
                            counts: dict[int, int], rec: Path, stalls: dict[int, int] | None = None) -> None:
    """A wall-clock recording of 5000 samples of the three-loop image (`rec`), printed as JSON:
    ended by its count, and each loop's share within 4 standard errors of the truth's census
    (wall_clock_loops_check)."""
    test.assertEqual(result.returncode, 0, result.stderr)
    doc = json.loads(result.stdout)
    test.assertEqual(doc["samples"], 5000)
    test.assertEqual(doc["sampler"]["end"], "sample count reached")
    wall_clock_loops_check(test, rec, name, counts, doc, stalls)
