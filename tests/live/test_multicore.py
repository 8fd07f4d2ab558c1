"""Every core of a multi-core chip (issue 29): mps2-an521, QEMU's SSE-200 with two Cortex-M33, and
our own two-core image (firmware-ref/src/scen_dual.c: core 1 released by core 0, work of its own
per core, shared_step run by both with different weights).

- The truth plugin counts per vCPU: on the image that runs to its end, every function's count on
  each core is its rounds times the instructions of one call, counted by hand from the
  disassembly (spin's loop at -O2 is 6 instructions a pass, plus 3 for entry and exit: 6n + 3
  for spin(n)); no core executes the other's functions.
- `record --gdb` to QEMU's gdbstub samples both cores at each halt: QEMU runs the truth plugin
  in its uniform-cost mode without -icount, so that each vCPU runs in a thread of its own
  (MTTCG) at the same host time per instruction; per-core census snapshots taken just before
  and after the recording give each core's exact count of the recording's own window. Each
  core's shares are held against its own window within 4 standard errors from the spread
  between batches of that core's consecutive halts, never below sqrt(p(1-p)/N) with N that
  core's samples (on a loaded host the core runs little between halts, and binomial errors
  alone are too small). The recording ends by its sample count; the image never ends.
- `record --qemu` and `truth --qemu` refuse the machine in one line naming the alternative.
- `top --gdb` shows a table per core.
- `report --by core` and the per-core tables (text and JSON) come from the same recording;
  `diff --core N` compares one core; the recording keeps the core of every sample.

Ports are chosen at run time; every QEMU started here is stopped by the test that started it.
"""
from __future__ import annotations

import html.parser
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import fwtest
from top_output import core_sections
import qemu_runner
import run_header
from task_checks import check_tasks_per_core
from live_runs import batch_errors, recorded_samples

CLI = fwtest.CLI
FINITE = "dual_an521"
FOREVER = "dual_forever_an521"
ROUNDS = 4000          # scen_dual.c's ROUNDS for dual_an521 (firmware-ref/CMakeLists.txt)
COST_NS = 2000
HALTS = 1500
Z = 4.0
MIN_SHARE = 0.005


def spin_call(n: int) -> int:
    """Instructions of one call of a function that is spin(n) alone (c0_heavy, shared_step, ...)."""
    return 6 * n + 3


def html_tables(page: str) -> dict[str, list[list[str]]]:
    """The cells of every table of an HTML page with an id, by id, row by row (the body's rows)."""
    class Tables(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.current, self.row, self.cell = {}, None, None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table" and dict(attrs).get("id"):
                self.current = self.tables.setdefault(dict(attrs)["id"], [])
            elif tag == "tr" and self.current is not None:
                self.row = []
            elif tag == "td" and self.row is not None:
                self.cell = ""

        def handle_endtag(self, tag):
            if tag == "td" and self.cell is not None:
                self.row.append(self.cell.strip())
                self.cell = None
            elif tag == "tr" and self.row:
                self.current.append(self.row)
                self.row = None
            elif tag == "table":
                self.current = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parser = Tables()
    parser.feed(page)
    return parser.tables


def by_function(counts: dict[int, int], image: str) -> dict[str, int]:
    return dict(fwtest.by_function(counts, fwtest.symbols(image)))


class TruthPerCore(unittest.TestCase):
    """The plugin's per-vCPU split on the image that ends, against counts by hand."""

    @classmethod
    def setUpClass(cls):
        work = fwtest.work_dir("mcuprof-dual-truth-")
        cls.truth_file = work / "truth.txt"
        # Without -icount: the two vCPUs run in threads of their own, as in the live test.
        with qemu_runner.QemuRun(fwtest.elf_path(FINITE), truth=cls.truth_file, uart=None, icount_shift=None,
                                 workdir=work, timeout=300) as q:
            cls.status = q.wait()
        cls.cores = qemu_runner.counts_by_core(cls.truth_file.read_text())

    def test_each_core_runs_its_own_work(self):
        self.assertEqual(self.status, 0)
        self.assertEqual(sorted(self.cores), [0, 1])
        core0, core1 = (by_function(self.cores[k], FINITE) for k in (0, 1))
        expected0 = {"c0_heavy": spin_call(90), "c0_light": spin_call(30), "shared_step": spin_call(60)}
        expected1 = {"c1_alpha": spin_call(40), "c1_beta": spin_call(80), "shared_step": spin_call(180)}
        for name, per_call in expected0.items():
            self.assertEqual(core0.get(name), ROUNDS * per_call, name)
        for name, per_call in expected1.items():
            self.assertEqual(core1.get(name), ROUNDS * per_call, name)
        self.assertEqual([f for f in core0 if f.startswith("c1_") or f.startswith("core1_")], [])
        self.assertEqual([f for f in core1 if f.startswith("c0_") or f.startswith("core0_")], [])

    def test_task_mode_refuses_two_vcpus(self):
        """Task mode splits one core's counts at its task switches: on a machine of two vCPUs
        the plugin refuses to start, in one line, and writes no census."""
        with tempfile.TemporaryDirectory(prefix="mcuprof-dual-tasks-") as name:
            work = Path(name)
            with qemu_runner.QemuRun(fwtest.elf_path(FINITE), truth=work / "truth.txt", uart=None,
                                     icount_shift=None, workdir=work, timeout=60,
                                     truth_args=[f"taskfile={work / 'tasks.txt'}", "tcbload=0x08000000",
                                                 "taskswitch=0x08000002"]) as q:
                status = q.wait()
                stderr = q.stderr_text()
            self.assertNotEqual(status, 0, stderr)
            self.assertIn("truth: taskfile= follows the tasks of one core; this machine has 2", stderr)
            self.assertFalse((work / "truth.txt").exists())
            self.assertFalse((work / "tasks.txt").exists())

    def test_report_reads_the_census_per_core(self):
        run = subprocess.run([str(CLI), "report", str(self.truth_file), "--elf", str(fwtest.elf_path(FINITE)),
                              "--format", "json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        doc = json.loads(run.stdout)
        self.assertEqual([c["core"] for c in doc["cores"]], [0, 1])
        for core in doc["cores"]:
            truth = by_function(self.cores[core["core"]], FINITE)
            self.assertEqual(core["samples"], sum(truth.values()))
            self.assertEqual({r["name"]: r["samples"] for r in core["functions"]}, truth)


class RecordBothCores(unittest.TestCase):
    """record --gdb on QEMU's gdbstub at uniform cost against each core's own window."""

    @classmethod
    def setUpClass(cls):
        cls.work = fwtest.work_dir("mcuprof-dual-live-")
        cls.rec = cls.work / "dual.rec"
        elf = fwtest.elf_path(FOREVER)
        with qemu_runner.QemuRun(elf, gdb=True, truth=cls.work / "truth.txt", uart=None, icount_shift=None,
                                 uniform_cost_ns=COST_NS, workdir=cls.work, timeout=900) as q:
            q.wait_listening(q.gdb_port)
            before = q.snapshot_by_core()
            cls.recording = subprocess.run([str(CLI), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", str(HALTS),
                                      "--interval", "5ms", "--seed", "29", "--elf", str(elf), "-o", str(cls.rec),
                                      "--format", "json"], capture_output=True, text=True, timeout=900)
            # The guest left running: a snapshot is served only by a running vCPU.
            after = q.snapshot_by_core()
            cls.still_running = q.running()
            q.stop()
        cls.windows = {core: by_function(qemu_runner.census_window(before[core], after[core]), FOREVER)
                       for core in before}

    def report(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(CLI), "report", str(self.rec), "--elf", str(fwtest.elf_path(FOREVER)), *args],
                              capture_output=True, text=True, timeout=300)

    def test_each_core_within_4_se_of_its_window(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        self.assertTrue(self.still_running)
        doc = json.loads(self.recording.stdout)
        self.assertEqual(doc["samples"], 2 * HALTS)   # one sample per core at each halt
        cores = {c["core"]: c for c in doc["cores"]}
        self.assertEqual(sorted(cores), [0, 1])
        syms = fwtest.symbols(FOREVER)
        recorded = recorded_samples(self.rec)
        for core, window in self.windows.items():
            n = cores[core]["samples"]
            self.assertEqual(n, HALTS)
            sampled = {r["name"]: r["samples"] for r in cores[core]["functions"]}
            total = sum(window.values())
            # The core's functions in the order its halts took them. How far a core runs between
            # two halts is up to the host: on a loaded one a few hundred instructions, less than
            # a round of core 1's work (about 1 800), so neighbouring halts fall in the same
            # function and binomial errors are too small (consecutive halts of core 1 in the same
            # function 55-68 % of the time against 44 % for independent draws, load 9.5-17). Each
            # row's error is therefore the spread between batches of consecutive halts
            # (live_runs.batch_errors, as mcuprof's report gives it), never below the binomial
            # one: exponential waits put the halts at Poisson instants of the time the cores run,
            # and a row's count then has the binomial variance plus the sum of the covariances
            # between instants, which is not negative (an autocovariance is positive
            # semi-definite); a row of under 1 % has about 10 samples, too few
            # for 30 batches to estimate its spread (one with no sample would get an error of 0).
            rows = [syms.lookup(pc & ~1) for pc, c in recorded if c == core]
            self.assertEqual(len(rows), n)
            checked = [name for name in window if window[name] / total >= MIN_SHARE]
            errors = batch_errors(rows, checked)
            bad, shown = [], []
            for name in sorted(set(window) | set(sampled), key=lambda k: -window.get(k, 0)):
                p = window.get(name, 0) / total
                q = sampled.get(name, 0) / n
                if p < MIN_SHARE:
                    shown.append(f"{name} {100 * q:.2f}/{100 * p:.2f}")
                    self.assertLess(q, MIN_SHARE + Z * math.sqrt(MIN_SHARE / n), name)
                    continue
                binomial = math.sqrt(p * (1 - p) / n)
                se = max(errors[name], binomial)
                z = (q - p) / se
                shown.append(f"{name} {100 * q:.2f}/{100 * p:.2f} z {z:.2f} ({errors[name] / binomial:.2f} x binomial)")
                self.assertLessEqual(errors[name], 4 * binomial,
                                     f"core {core} {name}: halts so correlated that the check means little")
                if abs(z) > Z:
                    bad.append((name, round(100 * q, 2), round(100 * p, 2), round(z, 2)))
            print(f"\ncore {core}: " + ", ".join(shown) + f" (% sampled/exact); beyond 4 SE: {bad}", file=sys.stderr)
            self.assertEqual(bad, [], f"core {core}")
            # mcuprof's own errors for the core are the same batches' (docs/live.md).
            self.assertEqual(cores[core]["errors"]["method"], "batches")
            reported = {r["name"]: r["stderr"] for r in cores[core]["functions"]}
            for name, se in batch_errors(rows, list(reported)).items():
                self.assertAlmostEqual(reported[name], 100 * se, delta=1e-6, msg=f"core {core} {name}")

    def test_by_core_and_per_core_tables(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        by_core = self.report("--by", "core", "--format", "json")
        self.assertEqual(by_core.returncode, 0, by_core.stderr)
        rows = json.loads(by_core.stdout)["functions"]
        self.assertEqual(sorted((r["name"].split(" (")[0], r["samples"]) for r in rows),
                         [("core 0", HALTS), ("core 1", HALTS)])
        text = self.report()
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("core 0 (thread p01.01): samples 1500", text.stdout)
        self.assertIn("core 1 (thread p02.02): samples 1500", text.stdout)

    def test_no_skew_said(self):
        # QEMU's gdbstub stops every vCPU for one stop reply: the recording says there is no skew,
        # and its samples carry no stop bounds (each 32 bytes, docs/formats.md).
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        stops = json.loads(self.recording.stdout)["core_stops"]
        self.assertEqual((stops["simultaneous"], stops["halts"]), (True, 0))
        data = self.rec.read_bytes()
        at, sizes = run_header.records_start(data, str(self.rec)), set()
        while at + 8 <= len(data):
            kind, size = struct.unpack_from("<HH", data, at)
            if kind == 1:
                sizes.add(size)
            at += 8 + size
        self.assertEqual(sizes, {32})
        text = self.report()
        self.assertIn("cores stopped at one instant at every halt, no skew", text.stdout)

    def test_firefox_thread_and_pprof_label_per_core(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        firefox = self.work / "dual.firefox.json"
        run = self.report("--format", "firefox", "-o", str(firefox))
        self.assertEqual(run.returncode, 0, run.stderr)
        threads = {t["name"]: t["samples"]["length"] for t in json.loads(firefox.read_text())["threads"]}
        self.assertEqual(threads, {"core 0 (thread p01.01)": HALTS, "core 1 (thread p02.02)": HALTS})
        # go tool pprof (the peer tool) reads the "core" label: -tags counts the samples per core,
        # and -tagfocus keeps one core, whose functions are then that core's alone.
        go = shutil.which("go")
        if go is None:
            fwtest._missing("go is not installed (Debian package golang-go)")
        profile = self.work / "dual.pb.gz"
        run = self.report("--format", "pprof", "-o", str(profile))
        self.assertEqual(run.returncode, 0, run.stderr)
        env = dict(os.environ, HOME=tempfile.gettempdir(), PPROF_TMPDIR=tempfile.gettempdir())
        tags = subprocess.run([go, "tool", "pprof", "-tags", str(profile)], capture_output=True, text=True,
                              timeout=300, env=env, check=True).stdout
        self.assertIn(f"{HALTS}.0 (50.00%): core 0 (thread p01.01)", tags)
        self.assertIn(f"{HALTS}.0 (50.00%): core 1 (thread p02.02)", tags)
        top = subprocess.run([go, "tool", "pprof", "-top", "-tagfocus=core=core 1", str(profile)],
                             capture_output=True, text=True, timeout=300, env=env, check=True).stdout
        self.assertIn("c1_beta", top)
        self.assertNotIn("c0_heavy", top)

    def test_html_table_per_core(self):
        """Each core's HTML table holds that core's rows of the JSON report, sample for sample, and
        each core's timeline its five hottest functions."""
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        page = self.work / "dual.html"
        run = self.report("--format", "html", "-o", str(page))
        self.assertEqual(run.returncode, 0, run.stderr)
        tables = html_tables(page.read_text())
        cores = {c["core"]: c for c in json.loads(self.report("--format", "json").stdout)["cores"]}
        for core, doc in cores.items():
            rows = tables[f"profile-core-{core}"]
            self.assertEqual({r[0]: float(r[4]) for r in rows}, {f["name"]: f["samples"] for f in doc["functions"]})
            # The core's timeline: its own hottest functions only.
            svg = re.search(f'<svg id="timeline-core-{core}".*?</svg>', page.read_text(), re.S)
            self.assertIsNotNone(svg, f"no timeline for core {core}")
            functions = set(re.findall(r'data-function="([^"]*)"', svg.group(0)))
            hottest = [f["name"] for f in doc["functions"]][:5]
            self.assertEqual(functions, set(hottest))

    def test_diff_of_one_core(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        run = subprocess.run([str(CLI), "diff", str(self.rec), str(self.rec), "--elf", str(fwtest.elf_path(FOREVER)),
                              "--core", "1", "--format", "json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = {r["name"]: r for r in json.loads(run.stdout)["rows"]}
        self.assertIn("c1_beta", rows)
        self.assertNotIn("c0_heavy", rows)
        self.assertEqual(sum(r["a_samples"] for r in rows.values()), HALTS)
        refused = subprocess.run([str(CLI), "diff", str(self.rec), str(self.rec), "--elf",
                                  str(fwtest.elf_path(FOREVER)), "--core", "2"], capture_output=True, text=True,
                                 timeout=300)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("no such core", refused.stderr)


class TasksPerCore(unittest.TestCase):
    """Each core's own current-task pointer, under kernels shaped like FreeRTOS SMP
    (pxCurrentTCBs[i]) and Zephyr SMP (_kernel.cpus[i].current): scen_dualtasks.c makes a task
    its core's current one before it calls the task's function, so every sample whose PC is in
    a task's function must carry that task's tag, and each core only its own tasks."""
    def check_kernel(self, image: str):
        elf = fwtest.elf_path(image)
        work = fwtest.work_dir("mcuprof-dual-tasks-")
        rec = work / "tasks.rec"
        with qemu_runner.QemuRun(elf, gdb=True, uart=None, icount_shift=None, workdir=work, timeout=300) as q:
            q.wait_listening(q.gdb_port)
            run = subprocess.run([str(CLI), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "400",
                                  "--elf", str(elf), "-o", str(rec)], capture_output=True, text=True, timeout=300)
            q.stop()
        self.assertEqual(run.returncode, 0, run.stderr)
        check_tasks_per_core(self, rec, image, CLI, 800)

    def test_freertos_smp_shape(self):
        self.check_kernel("dualtasks_freertos_an521")

    def test_zephyr_smp_shape(self):
        self.check_kernel("dualtasks_zephyr_an521")


class TopShowsEachCore(unittest.TestCase):
    """`top --gdb` on the two-core image: the last table has a section per core, each with that
    core's functions only and its own samples (no decay: the weights are sample counts)."""

    def test_a_table_per_core(self):
        elf = fwtest.elf_path(FOREVER)
        with qemu_runner.QemuRun(elf, gdb=True, uart=None, icount_shift=None, timeout=300) as q:
            q.wait_listening(q.gdb_port)
            run = subprocess.run([str(CLI), "top", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", str(elf),
                                  "--samples", "200", "--rows", "0"], capture_output=True, text=True, timeout=300)
            q.stop()
        self.assertEqual(run.returncode, 0, run.stderr)
        sections = core_sections(run.stdout)
        self.assertEqual(sorted(sections), [0, 1])
        for core, rows in sections.items():
            self.assertEqual(sum(rows.values()), 200, rows)
            foreign = "c1_" if core == 0 else "c0_"
            self.assertEqual([f for f in rows if f.startswith(foreign)], [], rows)


class QemuSessionRefuses(unittest.TestCase):
    """--qemu records and replays, which QEMU refuses on a multi-core machine: one line, exit 2,
    naming the way that works; never a profile of core 0 alone."""

    def test_record_and_truth_refuse_with_the_alternative(self):
        for command in ("record", "truth"):
            args = [str(CLI), command, "--qemu", "mps2-an521", "--elf", str(fwtest.elf_path(FINITE))]
            if command == "record":
                args += ["--samples", "10", "-o", str(fwtest.work_dir("mcuprof-dual-rr-") / "x.rec")]
            run = subprocess.run(args, capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertEqual(run.stdout, "")
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
            self.assertIn("more than one core", run.stderr)
            self.assertIn("record --gdb", run.stderr)


if __name__ == "__main__":
    unittest.main()
