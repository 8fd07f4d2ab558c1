"""OpenOCD's generic cortex_m target through the virtual probe, on the never-ending image of every
board in firmware-ref's board table (issue 28): it examines the core QEMU runs (the vprobe's
debug unit answers with the target's own CPUID), halts it in a function of the image and lets
it run again, and `mcuprof record --mode pcsr` samples DWT_PCSR on every core, the Cortex-M0 of
microbit too (its TRM, ARM DDI 0432C 6.1.3: a DWT has DWT_PCSR), each sample's PC in a function
of the image. A part built without the DWT (vprobe --no-dwt, on microbit): `--mode pcsr` is
refused before the first sample, exit 2 and one line naming the core and its CPUID (read here
through OpenOCD), no sample recorded, the guest running and DEMCR as found; `--mode pcsr,halt`
samples it by halts with the fallback notice, kept in the recording; `top` likewise. On the Cortex-M33
(Security Extension) DSCSR.CDS names the security state of each halt, and DCRSR's banked
REGSEL values read the stack pointers of either state: the Secure state by the address of the
halted code (the an505's IDAU: bit 28 set is Secure), the stack pointers against OpenOCD's own
MSP and the stacks the vector tables give."""
from __future__ import annotations

import json
import re
import struct
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from elf_symbols import nm_symbols
import qemu_runner
import run_header
from live_runs import recorded_pcs
from openocd_rig import CLI, FW_DIR, OPENOCD, guest_runs, require, start_rig, stop_rig

SAMPLES = 200
DSCSR, DCRSR, DCRDR = 0xE000EE08, 0xE000EDF4, 0xE000EDF8
CDS = 1 << 16
MSP_NS, MSP_S = 0x18, 0x1A   # DCRSR.REGSEL (ARMv8-M ARM, DDI 0553, "DCRSR")
CPUID, DEMCR = 0xE000ED00, 0xE000EDFC
STACK_BYTES = 0x4000         # a stack pointer lies this far below its stack's top at most


def word_in_elf(elf: Path, address: int) -> int:
    """The little-endian word at `address` in the ELF, as objdump -s shows it."""
    out = subprocess.run(["arm-none-eabi-objdump", "-s", f"--start-address=0x{address:x}",
                          f"--stop-address=0x{address + 4:x}", str(elf)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    line = next(l for l in out.splitlines() if l.strip().startswith(f"{address:x}"))
    return int.from_bytes(bytes.fromhex(line.split()[1]), "little")


def value(text: str) -> int:
    """The value OpenOCD printed after the colon: `reg pc` ("pc (/32): 0x100003d4") and `mdw`
    ("0xe000ee08: 00010000")."""
    return int(text.split(":", 1)[1].split()[0], 16)


def recorded_events(path: Path) -> list[tuple[str, str]]:
    """(kind, message) of every event of a samples file (docs/formats.md, Recording: type 2,
    JSON), read without mcuprof."""
    data = path.read_bytes()
    at, events = run_header.records_start(data, str(path)), []
    while at + 8 <= len(data):
        kind, size, _ = struct.unpack_from("<HHI", data, at)
        if kind == 2:
            event = json.loads(data[at + 8:at + 8 + size])
            events.append((event.get("kind"), event.get("message")))
        at += 8 + size
    return events


def image_functions(elf: Path) -> dict[str, tuple[int, int]]:
    # Weak symbols too: a halt may land in libgcc's soft float (__aeabi_fmul is weak).
    return {s.name: (s.start, s.start + s.size) for s in nm_symbols(elf, "TtWw") if s.size > 0}


def outside(pcs: list[int], functions: dict[str, tuple[int, int]]) -> list[str]:
    """The PCs in no function of the image, in hex."""
    return [f"0x{pc:08x}" for pc in pcs if not any(start <= pc < end for start, end in functions.values())]


class ArchThroughVprobe(unittest.TestCase):
    def start(self, name: str, core: str, vprobe_options: tuple[str, ...] = ()):
        """The rig on the board's image, OpenOCD having found `core`: (rig, elf)."""
        elf = FW_DIR / f"{name}.elf"
        require((OPENOCD,), (CLI, elf))
        rig = type("Rig", (), {})()
        rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-arch-"))
        start_rig(rig, elf, vprobe_options=vprobe_options)
        self.addCleanup(stop_rig, rig)
        rig.tcl.run("poll")
        log = (rig.work / "openocd.log").read_text()
        self.assertRegex(log, rf"{core} r\dp\d processor detected", log[-2000:])
        return rig, elf

    def record(self, rig, elf: Path, mode: str, rec: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(CLI), "record", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", mode,
                               "--samples", str(SAMPLES), "--elf", str(elf), "-o", str(rec), "--format", "json"],
                              capture_output=True, text=True, timeout=600)

    def check(self, name: str, core: str, security=None):
        rig, elf = self.start(name, core)
        functions = image_functions(elf)
        rig.tcl.run("halt")
        match = re.search(r":\s*(0x[0-9a-fA-F]+)", rig.tcl.run("reg pc"))
        self.assertIsNotNone(match)
        pc = int(match.group(1), 16)
        self.assertTrue(any(start <= pc < end for start, end in functions.values()), f"pc 0x{pc:08x}")
        rig.tcl.run("resume")
        if security is not None:
            security(rig, elf, functions)

        rec = rig.work / "rec.bin"
        r = self.record(rig, elf, "pcsr", rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertGreaterEqual(doc["samples"], SAMPLES)
        self.assertIn("pcsr", doc["sampler"], r.stderr)
        self.assertNotIn("halt_latency_us", doc["sampler"])   # no halts
        self.assertNotIn("DWT_PCSR reads 0", r.stderr)
        pcs = recorded_pcs(rec)
        self.assertGreaterEqual(len(pcs), SAMPLES)
        self.assertEqual(outside(pcs, functions), [])
        self.assertNotIn("fallback", [kind for kind, _ in recorded_events(rec)])

    def test_microbit_cortex_m0(self):
        self.check("arch_forever_microbit", "Cortex-M0")

    def test_microbit_without_the_dwt(self):
        """vprobe --no-dwt: --mode pcsr refused before the first sample, --mode pcsr,halt by halts."""
        rig, elf = self.start("arch_forever_microbit", "Cortex-M0", ("--no-dwt",))
        target = rig.tcl.run("target current").strip()
        cpuid = value(rig.tcl.run(f"mdw 0x{CPUID:x}"))
        self.assertEqual((cpuid >> 4) & 0xFFF, 0xC20)   # PARTNO: Cortex-M0 (DDI 0432C, CPUID)
        demcr = value(rig.tcl.run(f"mdw 0x{DEMCR:x}"))

        refused = rig.work / "refused.bin"
        r = self.record(rig, elf, "pcsr", refused)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, "")
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertEqual(lines[0], f"mcuprof record: openocd tcl 127.0.0.1:{rig.tcl_port}, --mode pcsr: DWT_PCSR "
                                   f"reads 0 on target {target} (Cortex-M0, CPUID 0x{cpuid:08x}; no PC sampling "
                                   f"register: a part built without the DWT): --mode halt samples it by halting, "
                                   f"--mode pcsr,halt falls back by itself")
        if refused.exists():   # the header, written before the link was asked, and the firmware check
            self.assertEqual(recorded_pcs(refused), [])
            self.assertEqual([kind for kind, _ in recorded_events(refused)], ["firmware-verified"])
        self.assertTrue(guest_runs(rig.qemu))
        self.assertEqual(rig.tcl.run("[target current] curstate").strip(), "running")
        self.assertIn("background polling: on", rig.tcl.run("poll"))
        self.assertEqual(value(rig.tcl.run(f"mdw 0x{DEMCR:x}")), demcr)   # TRCENA as found

        rec = rig.work / "fallback.bin"
        r = self.record(rig, elf, "pcsr,halt", rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        notice = (f"DWT_PCSR reads 0 on target {target} (Cortex-M0, CPUID 0x{cpuid:08x}; no PC sampling register: "
                  f"a part built without the DWT): sampling in halt mode instead (--mode pcsr,halt)")
        self.assertIn(f"mcuprof record: {notice}\n", r.stderr)
        doc = json.loads(r.stdout)
        self.assertGreaterEqual(doc["samples"], SAMPLES)
        self.assertIn("halt_latency_us", doc["sampler"])   # it halted
        self.assertNotIn("pcsr", doc["sampler"])
        pcs = recorded_pcs(rec)
        self.assertGreaterEqual(len(pcs), SAMPLES)
        self.assertEqual(outside(pcs, image_functions(elf)), [])
        self.assertIn(("fallback", notice), recorded_events(rec))
        self.assertTrue(guest_runs(rig.qemu))

        # top likewise: refused after its warnings (the vprobe's bias), or by halts with the notice.
        top = [str(CLI), "top", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--samples", str(SAMPLES), "--elf", str(elf)]
        r = subprocess.run([*top, "--mode", "pcsr"], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().splitlines()[-1], lines[0].replace("mcuprof record:", "mcuprof top:"))
        self.assertEqual(r.stdout, "")
        r = subprocess.run([*top, "--mode", "pcsr,halt"], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"mcuprof top: {notice}\n", r.stderr)
        self.assertRegex(r.stdout, rf"{SAMPLES} samples")
        self.assertTrue(guest_runs(rig.qemu))

    def test_an385_cortex_m3(self):
        self.check("arch_forever_an385", "Cortex-M3")

    def test_an500_cortex_m7(self):
        self.check("arch_forever_an500", "Cortex-M7")

    def halted_at(self, rig, address: int, hardware: bool):
        """Runs to a breakpoint at `address`; returns (pc, DSCSR, OpenOCD's MSP, MSP_NS, MSP_S)."""
        t = rig.tcl.run
        t("halt")
        t(f"bp 0x{address:x} 2" + (" hw" if hardware else ""))
        t("resume")
        t("wait_halt 60000")
        t(f"rbp 0x{address:x}")
        pc, dscsr, msp = value(t("reg pc")), value(t(f"mdw 0x{DSCSR:x}")), value(t("reg msp"))
        banked = []
        for regsel in (MSP_NS, MSP_S):
            t(f"mww 0x{DCRSR:x} 0x{regsel:x}")
            banked.append(value(t(f"mdw 0x{DCRDR:x}")))
        return pc, dscsr, msp, banked[0], banked[1]

    def test_an505_cortex_m33(self):
        def secure_only(rig, elf, functions):
            pc, dscsr, msp, _, msp_s = self.halted_at(rig, functions["run_round"][0], hardware=True)
            self.assertEqual(pc, functions["run_round"][0])
            self.assertTrue(pc & (1 << 28))
            self.assertEqual(dscsr & CDS, CDS)
            self.assertEqual(msp_s, msp)
            rig.tcl.run("resume")

        self.check("arch_forever_an505", "Cortex-M33", security=secure_only)

    def test_an505_cortex_m33_nonsecure_behind_the_secure_boot(self):
        def both_states(rig, elf, functions):
            secure_top = word_in_elf(elf, 0x10000000)             # the Secure vector table's initial MSP
            nonsecure_top = word_in_elf(elf, functions["ns_vector_table"][0])
            in_stack = lambda sp, top: top - STACK_BYTES <= sp <= top
            # In the Secure function the application calls: Secure; MSP_S is MSP; the Non-secure
            # MSP (MRS MSP_NS through the stub on QEMU 7.2, QEMU 10's secext) in its stack.
            entry = functions["secure_scramble"][0]
            pc, dscsr, msp, msp_ns, msp_s = self.halted_at(rig, entry, hardware=True)
            self.assertEqual((pc, dscsr & CDS), (entry, CDS))
            self.assertEqual(msp_s, msp)
            self.assertTrue(in_stack(msp, secure_top), hex(msp))
            self.assertTrue(in_stack(msp_ns, nonsecure_top), hex(msp_ns))
            # In the application: Non-secure; MSP_NS is MSP; the Secure MSP only where QEMU's
            # gdbstub describes it (secext, QEMU 8 on), else out of reach from this state (0).
            run_round = functions["run_round"][0]
            pc, dscsr, msp, msp_ns, msp_s = self.halted_at(rig, run_round, hardware=False)
            self.assertEqual((pc, dscsr & CDS), (run_round, 0))
            self.assertFalse(pc & (1 << 28))
            self.assertEqual(msp_ns, msp)
            self.assertTrue(in_stack(msp, nonsecure_top), hex(msp))
            if qemu_runner.qemu_version(qemu_runner.QEMU) >= (8, 0):
                self.assertTrue(in_stack(msp_s, secure_top), hex(msp_s))
            else:
                self.assertEqual(msp_s, 0)
            rig.tcl.run("resume")

        self.check("arch_ns_forever_an505", "Cortex-M33", security=both_states)

    def test_an547_cortex_m55(self):
        self.check("arch_forever_an547", "Cortex-M55")


if __name__ == "__main__":
    unittest.main()
