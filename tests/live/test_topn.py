"""The on-chip top-N table with decay (issue 10) on the moving-hot-spot scenario
(firmware-ref/src/scen_phase.c): calibrate() alone for the first INIT samples, then hot_a,
hot_b and the ignored idle loop until SAMPLES; and `mcuprof top`, the live view, with and
without its decay (issue 8).

The table's weights are undone by hand into sample counts, independently of mcuprof: an entry
that appeared at sample a and is still listed at sample n holds 2 x (its samples) minus one
decay turn per N samples, so its samples are (hits + (n - a) / N) / 2. Those counts are
compared with the truth plugin's instruction counts within 4 standard errors."""
from __future__ import annotations

import json
import math
import os
import pty
import re
import signal
import struct
import subprocess
import unittest
from pathlib import Path

import fwtest  # noqa: E402
import qemu_runner  # noqa: E402
from live_runs import (mcuprof, recorded_pcs, recorded_run, still_running, time_census_of,
                       wall_clock_loops_check)
from spawn import spawn

Z = 4.0
TABLE_IMAGE = "phase_topn_m4"
MAIN_LOOP = ("hot_a", "hot_b")


def table_lines(text: str) -> list[str]:
    return [l for l in text.splitlines() if l.startswith(("prof topn ", "t ", "end"))]


def parse_table(text: str) -> tuple[dict[str, int], list[tuple[int, int, int]]]:
    """The header's fields and the (block, hits, permille) entries of a 'prof topn' dump."""
    lines = table_lines(text)
    header = dict(f.split("=") for f in lines[0].split()[2:])
    entries = [(int(b, 16), int(h), int(p)) for _, b, h, p in (l.split() for l in lines if l.startswith("t "))]
    return {k: int(v) for k, v in header.items()}, entries


# The scenario's defaults (scen_phase.c), unless the manifest's -D says otherwise.
DEFAULTS = {"SAMPLES": 12000, "INIT_SAMPLES": 2000}


def define(name: str, key: str) -> int:
    return fwtest.manifest_define(name, key, DEFAULTS[key])


class OnchipTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.elf = fwtest.elf_path(TABLE_IMAGE)
        cls.syms = fwtest.symbols(TABLE_IMAGE)
        cls.work = fwtest.work_dir("mcuprof-topn-")

    def read_over_link(self, at: str, uart: Path | None, dump: Path) -> dict:
        with qemu_runner.QemuRun(self.elf, gdb=True, halted=True, uart=uart, timeout=300) as q:
            r = mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--read-onchip", "--at", at,
                        "--elf", str(self.elf), "-o", str(dump), "--format", "json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(q.wait(timeout=120), 0)   # detached: the firmware ran on to its exit
        return json.loads(r.stdout)

    def test_read_over_the_link_equals_the_uart_print(self):
        uart, dump = self.work / "uart.txt", self.work / "onchip.txt"
        doc = self.read_over_link("prof_dump", uart, dump)
        printed, read = table_lines(uart.read_text()), table_lines(dump.read_text())
        self.assertEqual(len(printed), 2 + 8)
        self.assertEqual(read, printed)
        # The profile is the listed weight: the sum of the entries' hits.
        _, entries = parse_table(uart.read_text())
        self.assertEqual(doc["samples"], sum(h for _, h, _ in entries))
        # 16-byte blocks over functions aligned to 16 bytes: no block is shared.
        self.assertNotIn("bucket-straddles", fwtest.warning_kinds(doc))

    def test_before_the_phase_change_calibrate_holds_the_table(self):
        doc = self.read_over_link("main_loop", None, self.work / "init.txt")
        names = [r["name"] for r in doc["functions"]]
        self.assertEqual(names[0], "calibrate", doc["functions"])
        self.assertGreater(fwtest.percent(doc, "calibrate"), 99.0)

    def test_after_the_phase_change_the_main_loop_ranks_first_as_the_truth_says(self):
        uart, truth = self.work / "uart-truth.txt", self.work / "counts.txt"
        qemu_runner.run_to_exit(self.elf, uart_path=uart, truth_path=truth, timeout=120)
        header, entries = parse_table(uart.read_text())
        n, size, slots = header["n"], 1 << header["shift"], header["entries"]
        init = define(TABLE_IMAGE, "INIT_SAMPLES")
        self.assertEqual(n, define(TABLE_IMAGE, "SAMPLES"))

        # mcuprof's ranking of the table, through the bucket core.
        doc = fwtest.cli_json("report", str(uart), "--elf", str(self.elf))
        names = [r["name"] for r in doc["functions"]]
        self.assertEqual(set(names[:2]), set(MAIN_LOOP), doc["functions"])
        self.assertIn("calibrate", names)   # still listed: the decay is slow (see docs/method.md)

        # By hand: the samples of the three hot functions' blocks, from their hits and their
        # decay turns (the rarely hit blocks of the loops' callers come and go: not these).
        samples = {}
        for block, hits, _ in entries:
            owners = {self.syms.lookup(a) for a in range(block, block + size, 2)} - {"?"}
            self.assertLessEqual(len(owners), 1, f"block {block:#x} holds {owners}")
            name = owners.pop() if owners else "?"
            if hits == 0 or name not in MAIN_LOOP + ("calibrate",):
                continue
            since = 0 if name == "calibrate" else init
            samples[name] = samples.get(name, 0) + (hits + (n - since) / slots) / 2
        counted = sum(samples.values())
        self.assertAlmostEqual(counted + header["ignored"], n, delta=0.01 * n)

        # The truth: instructions per function over the whole run (calibrate runs only in the
        # first phase, the rest only in the second; the idle loop is not in the table).
        counts = fwtest.by_function(fwtest.read_counts(truth), self.syms)
        main = sum(counts[k] for k in MAIN_LOOP)
        for name in MAIN_LOOP:
            p, q = counts[name] / main, samples[name] / sum(samples[k] for k in MAIN_LOOP)
            se = math.sqrt(p * (1 - p) / (n - init))
            self.assertLess(abs(q - p), Z * se, f"{name}: table {q:.4f}, truth {p:.4f}, SE {se:.4f}")
        idle = counts["idle_spin"] / (main + counts["idle_spin"])
        q = header["ignored"] / (n - init)
        self.assertLess(abs(q - idle), Z * math.sqrt(idle * (1 - idle) / (n - init)), (q, idle))
        self.assertAlmostEqual(samples["calibrate"], init, delta=Z * math.sqrt(init))


# ------------------------------------------------------------------ mcuprof top

HEADER = re.compile(r"^top (?P<t>[0-9.]+) s(?: \(end: (?P<end>.*)\))?: (?P<n>\d+) samples, (?P<rate>\d+) samples/s, "
                    r"target running (?P<duty>[0-9.]+) %, effective samples (?P<eff>\d+)")
ROW = re.compile(r"^\s*(?P<pct>[0-9.]+)\s+(?P<se>[0-9.]+)\s+(?P<w>[0-9.]+)  (?P<name>\S.*)$")


def parse_top(text: str) -> list[dict]:
    """The tables of `top`'s plain output: header fields and rows {name: (percent, se, weight)}."""
    tables = []
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            tables.append({**m.groupdict(), "rows": {}})
            continue
        m = ROW.match(line)
        if m and tables:
            tables[-1]["rows"][m["name"]] = (float(m["pct"]), float(m["se"]), float(m["w"]))
    return tables


def top(q, elf: Path, *extra: str) -> subprocess.CompletedProcess:
    return mcuprof("top", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", str(elf), "--rows", "0", *extra)


def start_top(q, elf: Path) -> subprocess.Popen:
    """top sampling every millisecond until stopped, its plain tables on a pipe."""
    return spawn([str(fwtest.CLI), "top", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", str(elf),
                  "--interval", "1ms", "--refresh", "200ms"],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class LiveTop(unittest.TestCase):
    def test_plain_tables_while_sampling_and_shares_against_the_truth(self):
        # A never-ending image: the view ends by its sample count however fast QEMU runs.
        name = "loops_forever_m4"
        elf = fwtest.elf_path(name)
        work = fwtest.work_dir("mcuprof-top-")
        rec = work / "rec.bin"
        r, times, stalls = time_census_of(elf, work, name, lambda q: top(q, elf, "--interval", "200us", "--samples", "3000",
                                                                  "--refresh", "300ms", "-o", str(rec)))
        self.assertEqual(r.returncode, 0, r.stderr)
        tables = parse_top(r.stdout)
        self.assertGreaterEqual(len(tables), 3, r.stdout)   # refreshes while sampling, then the end
        self.assertTrue(all(t["end"] is None for t in tables[:-1]))
        last = tables[-1]
        self.assertEqual(last["end"], "sample count reached")
        self.assertEqual(int(last["n"]), 3000)
        self.assertEqual(int(last["eff"]), 3000)   # no decay: every weight is 1
        self.assertGreater(float(last["duty"]), 0)
        counts = [int(t["n"]) for t in tables]
        self.assertEqual(counts, sorted(counts))
        # -o kept every sample, as record does, and the last table counts exactly those.
        pcs = recorded_pcs(rec)
        self.assertEqual(len(pcs), 3000)
        syms = fwtest.symbols(name)
        loops = ["hot_a", "hot_b", "hot_c"]
        observed = {k: w for k, (_, _, w) in last["rows"].items()}
        self.assertEqual({k: observed.get(k, 0) for k in loops},
                         {k: sum(1 for pc in pcs if syms.lookup(pc & ~1) == k) for k in loops})
        # Those samples against the time census of their window, 4 SE of the spread between
        # batches of consecutive halts (live_runs.wall_clock_loops_check).
        wall_clock_loops_check(self, rec, name, times, stalls=stalls)
        # The printed standard error is sqrt(p(1-p)/n) of the printed share: top gives wall-clock
        # halts binomial errors (report gives them batches'; docs/topn.md says so).
        pct, se, _ = last["rows"]["hot_a"]
        self.assertAlmostEqual(se, 100 * math.sqrt(pct / 100 * (1 - pct / 100) / 3000), delta=0.011)

    def test_a_halt_just_past_the_wfi_is_sleep_as_report_counts_it(self):
        """sleep_forever_m4 halted at wall-clock instants (asleep most of the time by any clock):
        top's "(sleep)" row holds exactly the samples whose PC is just past the image's one WFI
        (arm-none-eabi-objdump's, counted here from the samples file), and `report` of that
        file counts the same, as sleep and as the CPU load's."""
        name = "sleep_forever_m4"
        elf = fwtest.elf_path(name)
        work = fwtest.work_dir("mcuprof-top-")
        rec = work / "rec.bin"
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, uart=None, timeout=600) as q:
            r = top(q, elf, "--interval", "500us", "--samples", "600", "--refresh", "1s", "-o", str(rec))
            self.assertEqual(r.returncode, 0, r.stderr)
        last = parse_top(r.stdout)[-1]
        self.assertEqual(int(last["n"]), 600)
        listing = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True,
                                 check=True).stdout
        wfi = [int(line.split(":")[0], 16) for line in listing.splitlines() if "\twfi" in line]
        self.assertEqual(len(wfi), 1)
        pcs = recorded_pcs(rec)
        self.assertEqual(len(pcs), 600)
        asleep = sum(1 for pc in pcs if pc == wfi[0] + 2)
        self.assertGreater(asleep, 0)
        self.assertEqual(last["rows"]["(sleep)"][2], asleep)
        rep = fwtest.cli_json("report", str(rec), "--elf", str(elf))
        self.assertEqual(next(row["samples"] for row in rep["functions"] if row["name"] == "(sleep)"), asleep)
        self.assertEqual(rep["cpu_load"]["sleep_samples"], asleep)

    def test_decayed_view_after_the_phase_change_agrees_with_the_onchip_table(self):
        elf = fwtest.elf_path(TABLE_IMAGE)
        syms = fwtest.symbols(TABLE_IMAGE)
        work = fwtest.work_dir("mcuprof-top-")
        rec, uart = work / "rec.bin", work / "uart.txt"
        half_life = 100
        # The run is recorded, then replayed under `top` paced by instruction count (3000
        # samples over the whole run): the sample count and the phases' shares do not depend
        # on how fast QEMU runs. The replay prints the same on-chip table as the recorded run.
        rr, truth = recorded_run(self, elf, work, uart=True)
        total = sum(fwtest.read_counts(truth).values())
        with qemu_runner.QemuRun(elf, replay=rr, gdb=True, halted=True, uart=uart, timeout=600) as q:
            r = top(q, elf, "--decay", str(half_life), "--pace", "icount", "--interval", str(total // 3000),
                    "--seed", "77", "--refresh", "500ms", "-o", str(rec))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(q.wait(timeout=120), 0)
        last = parse_top(r.stdout)[-1]
        self.assertEqual(last["end"], "the target exited with code 0")

        # The decay by hand from the samples file: sample i of N weighs 2^((i - N + 1) / H).
        pcs = recorded_pcs(rec)
        n = len(pcs)
        self.assertEqual(int(last["n"]), n)
        self.assertGreater(n, 6 * half_life)
        weights = {}
        for i, pc in enumerate(pcs):
            k = syms.lookup(pc)
            weights[k] = weights.get(k, 0) + 2 ** ((i - n + 1) / half_life)
        total = sum(weights.values())
        squares = sum(4 ** ((i - n + 1) / half_life) for i in range(n))
        self.assertAlmostEqual(int(last["eff"]), total * total / squares, delta=1)
        for k in ("hot_a", "hot_b", "idle_spin"):
            pct, _, w = last["rows"][k]
            self.assertAlmostEqual(pct, 100 * weights[k] / total, delta=0.011, msg=k)
            self.assertAlmostEqual(w, weights[k], delta=0.06, msg=k)

        # After the phase change the decayed view ranks the main loop first, as the on-chip
        # table of the same run does (the idle loop is on the table's ignore list, not here).
        host = [k for k in last["rows"] if k != "idle_spin"]
        self.assertEqual(set(host[:2]), set(MAIN_LOOP), last["rows"])
        # calibrate held the first part of the run (a sixth of its instructions): without
        # decay its share would be that, with it a tenth of that at most.
        cumulative = sum(1 for pc in pcs if syms.lookup(pc) == "calibrate") / n
        decayed = last["rows"].get("calibrate", (0, 0, 0))[0]
        self.assertGreater(cumulative, 0)
        self.assertLess(decayed, 1.0)
        self.assertLess(decayed, 100 * cumulative / 10)
        chip = fwtest.cli_json("report", str(uart), "--elf", str(elf))
        self.assertEqual(set(row["name"] for row in chip["functions"][:2]), set(MAIN_LOOP))

    def test_on_a_terminal_the_view_is_redrawn_in_place(self):
        elf = fwtest.elf_path("loops_forever_m4")
        master, slave = pty.openpty()
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, uart=None, timeout=300) as q:
            p = spawn([str(fwtest.CLI), "top", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", str(elf),
                       "--interval", "1ms", "--samples", "600", "--refresh", "200ms"],
                      stdout=slave, stderr=subprocess.PIPE)
            os.close(slave)
            screen = b""
            while True:   # until the program closes its end of the terminal
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                screen += chunk
            self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
            os.close(master)
        frames = screen.split(b"\x1b[H\x1b[2J")   # ECMA-48: cursor home, erase display
        self.assertGreaterEqual(len(frames), 3, screen[:400])
        self.assertEqual(frames[0], b"")
        self.assertIn(b"(end: sample count reached): 600 samples", frames[-1])

    def test_a_reader_that_goes_away_ends_it_and_leaves_the_target_running(self):
        elf = fwtest.elf_path("loops_forever_m4")
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, qmp=True, singlestep=True, uart=None,
                                 timeout=300) as q:
            p = start_top(q, elf)
            self.assertTrue(p.stdout.readline().startswith("top "))   # like `mcuprof top | head -1`
            p.stdout.close()
            self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
            self.assertTrue(still_running(q), "top left the target halted")

    def test_ctrl_c_ends_it_and_leaves_the_target_running(self):
        elf = fwtest.elf_path("loops_forever_m4")
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, qmp=True, singlestep=True, uart=None,
                                 timeout=300) as q:
            p = start_top(q, elf)
            seen = []
            for line in p.stdout:   # not a terminal: one table per refresh, as they come
                if line.startswith("top "):
                    seen.append(line)
                    if len(seen) == 2:
                        break
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            tables = parse_top(out)
            self.assertEqual(tables[-1]["end"], "interrupted by a signal")
            self.assertIn("hot_a", tables[-1]["rows"])
            self.assertTrue(still_running(q), "top left the target halted")


if __name__ == "__main__":
    unittest.main()
