"""The on-chip top-N table with decay (issue 10) on the moving-hot-spot scenario
(firmware-ref/src/scen_phase.c): calibrate() alone for the first INIT samples, then hot_a,
hot_b and the ignored idle loop until SAMPLES.

The table's weights are undone by hand into sample counts, independently of mcuprof: an entry
that appeared at sample a and is still listed at sample n holds 2 x (its samples) minus one
decay turn per N samples, so its samples are (hits + (n - a) / N) / 2. Those counts are
compared with the truth plugin's instruction counts within 4 standard errors."""
from __future__ import annotations

import json
import math
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
import fwtest  # noqa: E402
import qemu_runner  # noqa: E402
from test_live_rsp import mcuprof  # noqa: E402

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
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-topn-"))

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


if __name__ == "__main__":
    unittest.main()
