"""The vendor-shaped reference firmware (firmware-ref/src/vendor, issue 41): an assembly start-up
without call-frame information, code run from RAM (.RamFunc inside .data, and .ramfunc of its
own), assembly helpers with and without a frame; built by GCC, by clang-19 for thumbv7em,
thumbv6m (microbit) and thumbv8m.main (mps2-an505), and stripped of its DWARF. Against oracles
that are not mcuprof:

- shares: every function row within 4 standard errors, sqrt(p(1-p)/N), of the truth plugin's
  census of the same `record --qemu` run, grouped by arm-none-eabi-nm's symbols (start, size),
  RAM functions included;
- stacks: at most 1 % of the chains truncated, and every chain (`report --format collapsed`) a
  path of the call tree main.c and helpers.s spell out, rooted at Reset_Handler, the reset
  vector's target, which has no call-frame information;
- the firmware check over QEMU's gdbstub, the target halted at reset (the RAM code not copied
  yet) and running: the right ELF is taken, a wrong one (another image, and the clang build of
  the same sources) refused with exit 2 and the target left running.
Every image runs to its own semihosting exit or is stopped by sample count; nothing depends on
the machine's speed."""
from __future__ import annotations

import collections
import json
import math
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from elf_symbols import nm_symbols

Z = 4.0
SAMPLES = 2000
IMAGES = (("vendor_m4", "netduinoplus2"), ("vendor_clang_m4", "netduinoplus2"), ("vendor_clang_m0", "microbit"),
          ("vendor_clang_m33", "mps2-an505"), ("vendor_nodebug_m4", "netduinoplus2"))
LEAVES = {"filter_block", "ram_checksum", "ram_scale", "asm_mix", "asm_copy"}
HANDLER_FRAMES = {"SysTick_Handler", "tick_work"}


def run_mcuprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(fwtest.CLI), *args], capture_output=True, text=True, timeout=600)


def mcuprof(*args: str) -> str:
    proc = run_mcuprof(*args)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def chain_fits_the_tree(frames: list[str]) -> bool:
    """Whether a chain, root first, is a path of the image's call tree: handler frames at its end
    (SysTick over anything), one_round inlined or not, the linker's veneer to the RAM code."""
    while frames and frames[-1] in HANDLER_FRAMES:
        frames = frames[:-1]
    frames = [f for f in frames if f != "one_round" and not (f.startswith("__") and f.endswith("_veneer"))]
    if frames[:1] != ["Reset_Handler"]:
        return False
    rest = frames[1:]
    return (rest in ([], ["copy_region"], ["SystemInit"], ["main"], ["main", "asm_mix", "mix_step"])
            or (len(rest) == 2 and rest[0] == "main" and rest[1] in LEAVES))


class VendorFirmware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vendor-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_shares_and_stacks_against_the_truth(self):
        for image, machine in IMAGES:
            with self.subTest(image=image):
                elf = fwtest.elf_path(image)
                rec, census_file = self.work / f"{image}.bin", self.work / f"{image}.census"
                doc = json.loads(mcuprof("record", "--qemu", machine, "--elf", str(elf), "--samples", str(SAMPLES),
                                         "--seed", "7", "--stacks", "-o", str(rec), "--census", str(census_file),
                                         "--format", "json"))
                census = fwtest.read_counts(census_file)
                functions = sorted({(s.start, s.size) for s in nm_symbols(elf, "TtWw") if s.size > 0}, reverse=True)
                truth = collections.Counter()
                for address, count in census.items():
                    owner = next((start for start, size in functions if start <= address < start + size), None)
                    truth[owner] += count
                total = sum(truth.values())
                n = doc["samples"]
                self.assertGreater(n, SAMPLES * 0.8)
                off = []
                for row in doc["functions"]:
                    if "address" not in row:
                        continue
                    p = truth.get(row["address"], 0) / total
                    se = math.sqrt(max(p * (1 - p), 1.0 / n) / n)
                    z = (row["samples"] / n - p) / se
                    if abs(z) > Z:
                        off.append(f"{row['name']}: {100 * row['samples'] / n:.2f} % against {100 * p:.2f} %, z {z:.2f}")
                self.assertEqual(off, [], f"{image}: rows off the census ({n} samples)")
                ram = [row for row in doc["functions"] if row.get("name") in ("ram_checksum", "ram_scale")]
                self.assertEqual(len(ram), 2, f"{image}: the RAM functions have rows of their own")

                truncation = doc["truncation"]
                self.assertEqual(truncation["unwound_samples"], n)
                self.assertLessEqual(truncation["samples"], 0.01 * n, f"{image}: {truncation}")
                self.assertFalse(truncation["inclusive_lower_bounds"])
                collapsed = mcuprof("report", str(rec), "--elf", str(elf), "--format", "collapsed")
                counted = 0
                for line in collapsed.splitlines():
                    chain, count = line.rsplit(" ", 1)
                    counted += int(count)
                    if chain.startswith("[truncated]"):
                        continue
                    self.assertTrue(chain_fits_the_tree(chain.split(";")), f"{image}: {line}")
                self.assertEqual(counted, n)
                if image == "vendor_nodebug_m4":
                    self.assertTrue(any(w.get("kind") == "no-debug-info" for w in doc.get("warnings", [])), doc.get("warnings"))

    def test_firmware_check_at_reset_and_running(self):
        right = fwtest.elf_path("vendor_forever_m4")
        wrong = (fwtest.elf_path("loops_forever_m4"), fwtest.elf_path("vendor_clang_forever_m4"))
        for halted in (True, False):
            with self.subTest(halted_at_reset=halted), \
                    qemu_runner.QemuRun(right, gdb=True, halted=halted, qmp=True, uart=None, timeout=600) as q:
                def record(elf: Path, name: str) -> subprocess.CompletedProcess:
                    return run_mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "200", "--interval",
                                       "200us", "--stacks", "--elf", str(elf), "-o", str(self.work / name))
                r = record(right, "right.bin")
                self.assertEqual(r.returncode, 0, r.stderr)
                for elf in wrong:
                    r = record(elf, "wrong.bin")
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn("does not run", r.stderr)
                    self.assertEqual(len([l for l in r.stderr.splitlines() if l.strip()]), 1, r.stderr)
                    self.assertEqual(q.qmp("query-status")["status"], "running")


if __name__ == "__main__":
    unittest.main()
