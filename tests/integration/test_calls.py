"""Instrumented call graph (seed 003): calls_m4 is built with -finstrument-functions and its
hooks write entry/exit records; QEMU has no ITM, so they go to USART1 as raw 32-bit words.

The test wraps every word in an ITM software-source packet for stimulus port 1 (ARMv7-M ARM
D4.2.8: header port << 3 | 0b11, then 4 bytes), as the ITM would send them, so the same ITM
parser and call-trace decoder run as on a real SWO capture; then checks the call counts
against what scenario "calls" does by construction, and the cycles for consistency.
"""
import json
import shutil
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path

from fwtest import CLI, IntegrationCase, elf_path, manifest_define, qemu_runner

NAME = "calls_m4"
CHANNEL = 1


def itm_stream(words: list[int], channel: int) -> bytes:
    out = bytearray(b"\0" * 5 + b"\x80")   # a synchronization packet first (D4.2.1)
    for w in words:
        out += bytes([(channel << 3) | 0b11]) + struct.pack("<I", w)
    return bytes(out)


class InstrumentedCallGraph(IntegrationCase):
    @classmethod
    def setUpClass(cls):
        cls.elf = elf_path(NAME)
        cls.dir = Path(tempfile.mkdtemp(prefix="mcuprof-calls-"))
        uart = cls.dir / "uart.bin"
        qemu_runner.run_to_exit(cls.elf, uart_path=uart, timeout=120)
        raw = uart.read_bytes()
        assert len(raw) % 4 == 0, f"the UART carried {len(raw)} bytes, not whole words"
        cls.words = list(struct.unpack(f"<{len(raw) // 4}I", raw))
        cls.stream = cls.dir / "calls.swo"
        cls.stream.write_bytes(itm_stream(cls.words, CHANNEL))
        cls.rounds = manifest_define(NAME, "ROUNDS", 10)
        cls.depth = manifest_define(NAME, "DEPTH", 4)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def mcuprof(self, *args: str) -> str:
        proc = subprocess.run([str(CLI), "report", str(self.stream), "--elf", str(self.elf), "--calls", *args],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def graph(self):
        g = json.loads(self.mcuprof("--format", "json"))
        functions = {f["name"]: f for f in g["functions"]}
        edges = {(g["functions"][e["caller"]]["name"], g["functions"][e["callee"]]["name"]): e for e in g["edges"]}
        return g, functions, edges

    def test_call_counts_are_those_of_the_scenario(self):
        g, functions, edges = self.graph()
        r, d = self.rounds, self.depth
        calls = {name: f["calls"] for name, f in functions.items()}
        self.assertEqual(calls, {"main": 1, "outer": r, "middle": 3 * r, "leaf": 12 * r + r + r,
                                 "EXTI0_IRQHandler": r, "recurse": d + 1})
        self.assertEqual({k: e["calls"] for k, e in edges.items()},
                         {("main", "outer"): r, ("outer", "middle"): 3 * r, ("middle", "leaf"): 12 * r,
                          ("outer", "leaf"): r, ("EXTI0_IRQHandler", "leaf"): r, ("main", "recurse"): 1,
                          ("recurse", "recurse"): d})
        # Every entry has its exit (main returns), nothing lost.
        self.assertEqual(g["warnings"], [])
        self.assertEqual(len(self.words), 3 * 2 * sum(calls.values()))

    def test_cycles_are_consistent(self):
        g, functions, edges = self.graph()
        for name, f in functions.items():
            out = [e for (caller, _), e in edges.items() if caller == name]
            self_edge = sum(e["inclusive"] for (caller, callee), e in edges.items() if caller == callee == name)
            # self + what its calls took = every activation's time; a recursive function's
            # inclusive time counts its outermost activations only, the inner ones are its self-edge.
            self.assertEqual(f["self"] + sum(e["inclusive"] for e in out), f["inclusive"] + self_edge, name)
            self.assertGreaterEqual(f["inclusive"] + self_edge, sum(e["inclusive"] for e in out), name)
            self.assertGreater(f["self"], 0, name)
        # The roots (main, and the handler, which interrupts rather than being called) hold
        # all the time there is.
        self.assertEqual(functions["main"]["inclusive"] + functions["EXTI0_IRQHandler"]["inclusive"], g["total"])

    def test_time_is_measured_to_the_cycle_across_the_counter_wrap(self):
        g, functions, edges = self.graph()
        # leaf(n) runs the same code for n = 20 (from middle), 50 (outer), 10 (the handler):
        # its time per call is a + b n, exactly, since QEMU's clock counts instructions.
        per_call = {n: edges[(caller, "leaf")]["inclusive"] / edges[(caller, "leaf")]["calls"]
                    for caller, n in (("middle", 20), ("outer", 50), ("EXTI0_IRQHandler", 10))}
        self.assertEqual(per_call[50] - per_call[20], 3 * (per_call[20] - per_call[10]))
        self.assertGreater(per_call[20], per_call[10])
        # The 26-bit stamps went round once: TIM2 starts at 0x03FF0000 and the run is longer
        # than the 0x10000 counts left, as the first and last stamps show.
        first, last = self.words[0] & 0x03FFFFFF, self.words[-3] & 0x03FFFFFF
        self.assertGreater(first, last)
        self.assertEqual(g["total"], last + (1 << 26) - first)
        self.assertIn("1 counter wraps", g["origin"])

    def test_callgrind_annotate_reads_it(self):
        path = self.dir / "callgrind.out"
        self.mcuprof("--format", "callgrind", "-o", str(path))
        _, functions, _ = self.graph()
        out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no", str(path)],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        total = int(next(l for l in out.splitlines() if "PROGRAM TOTALS" in l).split()[0].replace(",", ""))
        self.assertEqual(total, sum(round(f["self"]) for f in functions.values()))
        main_line = next(l for l in out.splitlines() if l.rstrip().endswith(":main"))
        self.assertEqual(int(main_line.split()[0].replace(",", "")), functions["main"]["inclusive"])

    def test_dot_renders(self):
        dot = self.mcuprof("--format", "dot")
        svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60, check=True).stdout
        for name in ("main", "outer", "middle", "leaf", "EXTI0_IRQHandler", "recurse"):
            self.assertIn(f">{name}</text>", svg)


if __name__ == "__main__":
    unittest.main()
