#!/usr/bin/env python3
"""`mcuprof swo` end to end with a stand-in for OpenOCD: a Tcl RPC server (OpenOCD manual,
"Tcl RPC server": a script, then 0x1a; the answer, then 0x1a) that keeps a memory of the
registers written, and on `TPIU enable` serves a synthetic SWO stream on the -output port, as
OpenOCD does with a probe that captures SWO. No probe here captures SWO (QEMU has no TPIU),
so this is how the live part is checked: the stream's PC samples are profiled with counts
known by construction (symbols fixture: func_a 0x08000000, local_b 0x08000010, func_c
0x08000020), and at the end PC sampling is turned off again (DWT_CTRL as it was, PCSAMPLENA
clear) and the capture disabled.
"""
import json
import socket
import struct
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

import cli_args
import run_header
from elf_symbols import nm_symbols

ARGS = None
# Two images of one target, committed with the golden test's inputs: a bootloader at
# 0x08000000 and the application linked after it.
IMAGES = Path(__file__).resolve().parents[1] / "golden" / "inputs"
TERMINATOR = b"\x1a"
DEMCR, ITM_TCR, DWT_CTRL = 0xE000EDFC, 0xE0000E80, 0xE0001000
PCSAMPLENA = 1 << 12


def tcl_unquote(word: str) -> str:
    """Undoes TclClient::quote: backslash escapes (\\n, \\r, \\t, octal, any other char)."""
    out, i = [], 0
    while i < len(word):
        c = word[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = word[i + 1]
        if nxt in "nrt":
            out.append({"n": "\n", "r": "\r", "t": "\t"}[nxt])
            i += 2
        elif nxt.isdigit():
            out.append(chr(int(word[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeOpenOCD:
    """Answers the scripts mcuprof's TclClient sends: `format {%d %s} [catch {eval SCRIPT} VAR] $VAR`."""

    def __init__(self, stream: bytes):
        self.stream = stream
        self.memory = {DEMCR: 0, ITM_TCR: 0, DWT_CTRL: 0x40000000 | (1 << 16)}   # NUMCOMP 4, EXCTRCENA
        self.dwt_ctrl_before = self.memory[DWT_CTRL]
        self.writes = []
        self.commands = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.trace_port = None
        self.threads = [threading.Thread(target=self.serve, daemon=True)]
        self.threads[0].start()

    def answer(self, script: str) -> str:
        words = script.split()
        if words[0] == "capture":
            words = tcl_unquote(script[len("capture "):]).split()
        self.commands.append(words)
        if words[0] == "read_memory":
            return hex(self.memory.get(int(words[1], 0), 0))
        if words[0] == "mww":
            self.memory[int(words[1], 0)] = int(words[2], 0)
            self.writes.append((int(words[1], 0), int(words[2], 0)))
            return ""
        if words[:2] == ["tpiu", "names"]:
            return ""
        if words[:2] == ["dap", "names"]:
            return "fake.dap"
        if words[:2] == ["tpiu", "create"]:
            return ""
        if words[1:2] == ["configure"]:
            self.trace_port = int(words[words.index("-output") + 1].lstrip(":"))
            return ""
        if words[1:2] == ["enable"]:
            listener = socket.create_server(("127.0.0.1", self.trace_port))
            t = threading.Thread(target=self.serve_trace, args=(listener,), daemon=True)
            t.start()
            self.threads.append(t)
            return ""
        if words[1:2] == ["disable"]:
            return ""
        raise KeyError(script)

    def serve(self):
        conn, _ = self.server.accept()
        buffer = b""
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                while TERMINATOR in buffer:
                    message, buffer = buffer.split(TERMINATOR, 1)
                    text = message.decode()
                    start = text.index("{eval ") + len("{eval ")
                    end = text.index("} _mcuprof_tcl_result]")
                    try:
                        reply = "0 " + self.answer(tcl_unquote(text[start:end]))
                    except KeyError as e:
                        reply = f"1 invalid command name {e}"
                    conn.sendall(reply.encode() + TERMINATOR)

    def serve_trace(self, listener):
        conn, _ = listener.accept()
        listener.close()
        with conn:
            for i in range(0, len(self.stream), 1000):   # in pieces, as a line delivers it
                conn.sendall(self.stream[i:i + 1000])

    def close(self):
        self.server.close()


def swo_stream(pcs, sleep_every=0):
    """PC sample packets (None: a sleep packet, which carries no PC), after a sync."""
    out = bytearray(b"\0" * 5 + b"\x80")
    for pc in pcs:
        if pc is None:
            out += b"\x15\x00"                        # sleep sample: PC packet of 1 payload byte
        else:
            out += b"\x17" + struct.pack("<I", pc)   # periodic PC sample (ARMv7-M ARM D4.3.3)
    return bytes(out)


class SwoLive(unittest.TestCase):
    def test_profiles_the_served_stream_and_turns_sampling_off(self):
        pcs = [0x08000000, 0x08000004] * 300 + [0x08000010] * 300 + [0x08000020] * 100   # 600 / 300 / 100
        fake = FakeOpenOCD(swo_stream(pcs))
        try:
            r = subprocess.run([ARGS.mcuprof, "swo", "--openocd", f"127.0.0.1:{fake.port}", "--elf",
                                str(Path(ARGS.fixtures) / "symbols_fixture.elf"), "--cpu-hz", "72M", "--rate", "35000",
                                "--trace-output", f":{free_port()}", "--format", "json"],
                               capture_output=True, text=True, timeout=60)
        finally:
            fake.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["samples"], 1000)
        self.assertEqual([(row["name"], row["samples"]) for row in doc["functions"]],
                         [("func_a", 600), ("local_b", 300), ("func_c", 100)])
        # 72e6 / 35000 = 2057 cycles at least: 2048 is faster, so 3072 = 1024 x 3 (CYCTAP 1,
        # POSTPRESET 2), 23437.5 samples/s.
        self.assertAlmostEqual(doc["sampler"]["samples_per_second"], 72e6 / 3072)
        expected_ctrl = fake.dwt_ctrl_before | PCSAMPLENA | (1 << 10) | (1 << 9) | (2 << 5) | (2 << 1) | 1
        dwt_writes = [v for a, v in fake.writes if a == DWT_CTRL]
        # First the fields with sampling off, then sampling on, at the end as it was before.
        self.assertEqual(dwt_writes, [expected_ctrl & ~PCSAMPLENA, expected_ctrl, fake.dwt_ctrl_before])
        self.assertIn((0xE0000FB0, 0xC5ACCE55), fake.writes)   # ITM unlocked
        self.assertEqual(fake.memory[DEMCR], 1 << 24)
        tpiu = [c for c in fake.commands if c[0] == "mcuprof.tpiu"]
        self.assertEqual([c[1] for c in tpiu], ["configure", "enable", "disable"])
        configure = tpiu[0]
        self.assertEqual(configure[configure.index("-protocol") + 1], "uart")
        self.assertEqual(configure[configure.index("-traceclk") + 1], "72000000")
        self.assertEqual(configure[configure.index("-pin-freq") + 1], "2000000")


class SwoTwoImages(unittest.TestCase):
    def test_samples_in_both_images_are_named_after_each(self):
        boot, app = IMAGES / "vendor_boot_m4.elf", IMAGES / "vendor_app_m4.elf"
        start = {s.name: s.start for elf in (boot, app) for s in nm_symbols(elf, "Tt")}
        crc, mix = start["boot_crc32"], start["mix_step"]   # one image's each
        fake = FakeOpenOCD(swo_stream([crc] * 70 + [mix + 2] * 30))
        try:
            r = subprocess.run([ARGS.mcuprof, "swo", "--openocd", f"127.0.0.1:{fake.port}", "--elf", str(boot),
                                "--elf", str(app), "--cpu-hz", "72M", "--trace-output", f":{free_port()}",
                                "--format", "json"], capture_output=True, text=True, timeout=60)
        finally:
            fake.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual([(row["name"], row["address"], row["samples"]) for row in doc["functions"]],
                         [("boot_crc32", crc, 70), ("mix_step", mix, 30)])


class SwoRecording(unittest.TestCase):
    """swo -o: the capture as a recording, which report and diff read like any other; the two
    images named by the recording, so neither needs --elf."""

    def test_recording_holds_every_sample_in_order_and_reports_as_swo_printed(self):
        boot, app = IMAGES / "vendor_boot_m4.elf", IMAGES / "vendor_app_m4.elf"
        start = {s.name: s.start for elf in (boot, app) for s in nm_symbols(elf, "Tt")}
        crc, mix = start["boot_crc32"], start["mix_step"]
        # 60 crc, 30 mix, 10 sleep per 100, in that order, 10 times.
        pcs = ([crc] * 60 + [mix + 2] * 30 + [None] * 10) * 10
        fake = FakeOpenOCD(swo_stream(pcs))
        with tempfile.TemporaryDirectory() as scratch:
            rec = Path(scratch) / "capture.rec"
            try:
                r = subprocess.run([ARGS.mcuprof, "swo", "--openocd", f"127.0.0.1:{fake.port}", "--elf", str(boot),
                                    "--elf", str(app), "--cpu-hz", "72M", "--rate", "35000",
                                    "--trace-output", f":{free_port()}", "--format", "json", "-o", str(rec)],
                                   capture_output=True, text=True, timeout=60)
            finally:
                fake.close()
            self.assertEqual(r.returncode, 0, r.stderr)
            printed = json.loads(r.stdout)
            rows = [(row["name"], row["samples"]) for row in printed["functions"]]
            self.assertEqual(rows, [("boot_crc32", 600), ("mix_step", 300), ("(sleep)", 100)], rows)
            self.assertEqual(printed["samples"], 1000)

            header = run_header.read_header(rec)   # checked against the schema
            self.assertEqual(header["method"], "swo")
            self.assertEqual(header["pacing"]["shape"], "fixed")
            self.assertAlmostEqual(header["pacing"]["mean_seconds"], 3072 / 72e6)   # see SwoLive
            self.assertEqual([Path(header["elf"]).name] + [Path(i["elf"]).name for i in header.get("more_elves", [])],
                             ["vendor_boot_m4.elf", "vendor_app_m4.elf"], header)

            # report reopens both images from the recording, and prints what swo printed.
            report = subprocess.run([ARGS.mcuprof, "report", str(rec), "--format", "json"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(report.returncode, 0, report.stderr)
            again = json.loads(report.stdout)
            self.assertEqual(again["functions"], printed["functions"])
            # The sampler's summary is read back (the DWT's period), and the periodic stream is seen as such.
            text = subprocess.run([ARGS.mcuprof, "report", str(rec)], capture_output=True, text=True, timeout=60)
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn("the DWT's PC sample every 3072 cycles of 72000000 Hz over SWO", text.stdout)
            self.assertNotIn("unreadable", text.stdout)
            self.assertIn("lockstep", text.stdout)   # the stream repeats every 100 samples, as made
            # In stream order: the first 60 samples are crc's, then 30 mix's, then 10 asleep.
            for first, expected in ((60, [("boot_crc32", 60)]), (95, [("boot_crc32", 60), ("mix_step", 30), ("(sleep)", 5)])):
                head = subprocess.run([ARGS.mcuprof, "report", str(rec), "--first", str(first), "--format", "json"],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(head.returncode, 0, head.stderr)
                self.assertEqual([(row["name"], row["samples"]) for row in json.loads(head.stdout)["functions"]],
                                 expected)
            # DWT samples carry no xPSR: no exception is claimed for them.
            by_exception = subprocess.run([ARGS.mcuprof, "report", str(rec), "--by", "exception"],
                                          capture_output=True, text=True, timeout=60)
            self.assertNotEqual(by_exception.returncode, 0, by_exception.stdout)
            self.assertIn("exception", by_exception.stderr)

            # diff of the recording with itself, no --elf: both images' functions, nothing under "?".
            diff = subprocess.run([ARGS.mcuprof, "diff", str(rec), str(rec)],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(diff.returncode, 0, diff.stderr)
            self.assertIn("boot_crc32", diff.stdout)
            self.assertIn("mix_step", diff.stdout)
            self.assertNotRegex(diff.stdout, r"(?m)^\s*\?\s")

    def test_a_binary_format_is_refused_before_openocd_is_contacted(self):
        r = subprocess.run([ARGS.mcuprof, "swo", "--openocd", "127.0.0.1:1", "--elf",
                            str(Path(ARGS.fixtures) / "symbols_fixture.elf"), "--cpu-hz", "72M", "--format", "gmon"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("binary formats", r.stderr)


if __name__ == "__main__":
    cli_args.main(globals())
