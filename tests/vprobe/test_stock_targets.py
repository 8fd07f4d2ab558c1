"""OpenOCD's stock target scripts against the vprobe (issue 53): for each QEMU machine that models
a chip OpenOCD has a target/NAME.cfg for, QEMU runs an image, `mcuprof vprobe --chip NAME` shows
that chip on its debug port, and the real OpenOCD runs the stock script unchanged behind a stock
interface: `-f interface/stlink.cfg -c "hla_stlink_backend tcp PORT"` (an ST-Link's high-level
commands) and `-f interface/stlink-dap.cfg -c "st-link backend tcp PORT"` (dapdirect_swd, which
OpenOCD selects by itself: its own ADIv5 code), or OpenOCD's remote_bitbang driver on JTAG where the script cannot work
through an ST-Link's high-level commands (stellaris, below). Each run checks: init examined the
target (no UNEXPECTED idcode, no failed examination; the DPIDR or TAP IDCODE OpenOCD logs is the
chip's), `halt` halts it, the PC OpenOCD reads equals the PC QEMU itself reports at that halt (its
monitor's `info registers`, over QMP: the gdbstub is the vprobe's) and lies in a function of the
image, the ID registers read through OpenOCD are the chip's, the stock flash driver's `flash probe 0`
finds the part's flash size, and `resume` lets the guest run again.

Images: the reference images that never end where there is one for the machine (mixed_forever_m4 on
netduinoplus2, arch_forever_microbit on microbit). netduino2's (cost_m3, rtos_m3, loops_jit_m3) end
within a second, and stm32vldiscovery, lm3s6965evb and b-l475e-iot01a have none, so for those the
test assembles a loop of four instructions behind a two-word vector table at the machine's flash.
b-l475e-iot01a exists from QEMU 9 on: on an older QEMU (Debian 12's 7.2) that case is skipped,
saying so. Ports are chosen at run time; every process started is stopped on every path.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace

import qemu_runner
from openocd_rig import (CLI, FW_DIR, LOOP_START, OPENOCD, TclRpc, assemble_image, elf_functions, guest_running,
                         qemu_machines, require, stop_rig, wait_first_poll, wait_port)
from spawn import spawn

# chip (target/NAME.cfg): QEMU machine, the probes to try ("hla": interface/stlink.cfg, an ST-Link's
# high-level commands; "dap": interface/stlink-dap.cfg, OpenOCD's own ADIv5 code over the ST-Link's
# DAP commands; "jtag": remote_bitbang), the reference image (None: the assembled loop), the flash
# base, the DP's IDs (the SW-DP's DPIDR, and the JTAG TAP's IDCODE where JTAG is tried), the ID registers the stock flash
# driver reads with the chip's values (src/vprobe/chip.cc cites each), and the flash size
# `flash probe` must then find.
CASES = {
    "stm32f2x": ("netduino2", ("hla", "dap"), None, 0x08000000, 0x2BA01477, {0xE0042000: 0x10000411}, 0x100000),
    "stm32f4x": ("netduinoplus2", ("hla", "dap"), "mixed_forever_m4.elf", 0x08000000, 0x2BA01477,
                 {0xE0042000: 0x10000413}, 0x100000),
    "stm32f1x": ("stm32vldiscovery", ("hla", "dap"), None, 0x08000000, 0x1BA01477, {0xE0042000: 0x10000420},
                 0x20000),
    "stm32l4x": ("b-l475e-iot01a", ("hla", "dap"), None, 0x08000000, 0x2BA01477, {0xE0042000: 0x10000415},
                 0x100000),
    "nrf51": ("microbit", ("hla", "dap"), "arch_forever_microbit.elf", 0x00000000, 0x0BB11477,
              {0x1000005C: 0xFFFF0072, 0x10000034: 2}, 0x40000),
    # Over an ST-Link's high-level commands OpenOCD compares the SW-DP's DPIDR (0x1BA01477 on this
    # Cortex-M3 r1) with the script's -expected-id 0x0ba00477 exactly (hla_interface.c), so the
    # script cannot pass there on the real part either ("UNEXPECTED idcode: 0x1ba01477"); over
    # JTAG its -ignore-version matches the TAP's 0x3BA00477, as on an evaluation board's own
    # JTAG probe, and OpenOCD's ADIv5 SWD code does not compare the DPIDR. DID0 and the flash
    # size are QEMU's own model.
    "stellaris": ("lm3s6965evb", ("jtag", "dap"), None, 0x00000000, (0x1BA01477, 0x3BA00477), {}, 0x40000),
}

# The loop for machines without a reference image that runs long enough: SP, the reset vector,
# then four instructions that keep changing the PC.
LOOP_SOURCE = LOOP_START + """
    adds r0, #1
    subs r1, #1
    eors r2, r0
    b loop
    .size loop, . - loop
"""






def qemu_pc(qemu: qemu_runner.QemuRun) -> int:
    """R15 as QEMU's monitor shows it (info registers)."""
    text = qemu.qmp("human-monitor-command", **{"command-line": "info registers"})
    return int(re.search(r"R15=([0-9a-fA-F]{8})", str(text)).group(1), 16)


def openocd_pc(tcl: TclRpc) -> int:
    return int(re.search(r"0x([0-9a-fA-F]+)", tcl.run("reg pc")).group(1), 16)


class StockTargets(unittest.TestCase):
    def setUp(self):
        require(["arm-none-eabi-as", "arm-none-eabi-ld", "arm-none-eabi-nm", OPENOCD, qemu_runner.QEMU],
                [CLI, FW_DIR / "mixed_forever_m4.elf", FW_DIR / "arch_forever_microbit.elf"])
        self.machines = qemu_machines(qemu_runner.QEMU)

    def run_chip(self, chip: str):
        machine, probes, image, flash, dp_id, id_registers, flash_size = CASES[chip]
        if machine not in self.machines:
            self.skipTest(f"{qemu_runner.QEMU} ({'.'.join(map(str, qemu_runner.qemu_version()))}) has no "
                          f"machine {machine}: target/{chip}.cfg cannot be tried here")
        for probe in probes:
            with self.subTest(probe=probe):
                rig = SimpleNamespace(tcl=None, openocd=None, vprobe=None, vprobe_reader=None, qemu=None,
                                      openocd_log=None, cpus_before=None, rig_stopped=False, vprobe_log=[],
                                      work=Path(tempfile.mkdtemp(prefix=f"mcuprof-stock-{chip}-")))
                try:
                    elf = FW_DIR / image if image else assemble_image(rig.work, LOOP_SOURCE, flash, "cortex-m0")
                    self.start(rig, chip, machine, probe, elf)
                    self.check(rig, chip, probe, elf, dp_id, id_registers, flash_size)
                finally:
                    stop_rig(rig)

    def start(self, rig, chip: str, machine: str, probe: str, elf: Path) -> None:
        rig.qemu = qemu_runner.QemuRun(elf, machine, gdb=True, halted=True, qmp=True, uart=None,
                                       timeout=600).start()
        rig.vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{rig.qemu.gdb_port}",
                            "--stlink-port" if probe != "jtag" else "--port", "0", "--chip", chip],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        first = rig.vprobe.stderr.readline()
        rig.vprobe_log.append(first)
        match = re.search(r"(?:remote_bitbang|st-link) on 127\.0\.0\.1:(\d+)", first)
        self.assertTrue(match, f"vprobe did not start: {first!r}")
        self.assertIn(f"; chip {chip} (", first)
        rig.vprobe_reader = threading.Thread(target=lambda: rig.vprobe_log.extend(rig.vprobe.stderr), daemon=True)
        rig.vprobe_reader.start()
        port = match.group(1)
        if probe == "hla":
            interface = ["-f", "interface/stlink.cfg", "-c", f"hla_stlink_backend tcp {port}"]
        elif probe == "dap":   # OpenOCD picks dapdirect_swd by itself
            interface = ["-f", "interface/stlink-dap.cfg", "-c", f"st-link backend tcp {port}"]
        else:   # OpenOCD has no interface script for remote_bitbang: its driver's own commands (the
            # stock script's swj-dp.tcl picks JTAG, the first transport the driver offers)
            interface = ["-c", "adapter driver remote_bitbang", "-c", f"remote_bitbang port {port}"]
        rig.tcl_port = qemu_runner.free_port()
        rig.openocd_log = open(rig.work / "openocd.log", "w")
        rig.openocd = spawn([OPENOCD, *interface, "-f", f"target/{chip}.cfg", "-c", "gdb_port disabled",
                             "-c", "telnet_port disabled", "-c", f"tcl_port {rig.tcl_port}", "-c", "init"],
                            stdin=subprocess.DEVNULL, stdout=rig.openocd_log, stderr=subprocess.STDOUT, cwd=rig.work)
        # OpenOCD's init here takes well under a second; 60 s is for a loaded machine.
        wait_port(rig.tcl_port, rig.openocd, f"openocd with target/{chip}.cfg", timeout=60)
        rig.tcl = TclRpc(rig.tcl_port)
        wait_first_poll(rig.tcl)

    def check(self, rig, chip: str, probe: str, elf: Path, dp_id: int | tuple[int, int], id_registers: dict[int, int],
              flash_size: int) -> None:
        tcl = rig.tcl
        log = lambda: (rig.work / "openocd.log").read_text()
        self.assertNotIn("UNEXPECTED", log())
        self.assertNotRegex(log(), r"[Ee]xamination failed")
        dpidr, tap_idcode = dp_id if isinstance(dp_id, tuple) else (dp_id, None)
        if probe == "dap":
            self.assertIn(f"SWD DPIDR {dpidr:#010x}", log())
        elif probe == "jtag":
            self.assertIn(f"tap/device found: {tap_idcode:#010x}", log())
        self.assertEqual(tcl.run("[target current] curstate").strip(), "running", log())
        tcl.run("halt")
        self.assertEqual(tcl.run("[target current] curstate").strip(), "halted", log())
        pc, truth = openocd_pc(tcl), qemu_pc(rig.qemu)
        self.assertEqual(pc, truth, f"OpenOCD's PC {pc:#x}, QEMU's {truth:#x}")
        code = elf_functions(elf)
        self.assertTrue(any(start <= pc < end for start, end in code.values()),
                        f"PC {pc:#x} outside every function of {elf.name}")
        for address, value in id_registers.items():
            word = int(tcl.run(f"mdw {address:#x}").split(":")[1].split()[0], 16)
            self.assertEqual(word, value, f"{address:#010x} read {word:#x} through OpenOCD")
        # The stock flash driver identifies the part from those registers (its flash size too).
        probed = tcl.run("flash probe 0")
        banks = tcl.run("flash banks")
        self.assertIn(f"size {flash_size:#010x}", banks, f"{probed} / {banks}")
        tcl.run("resume")
        self.assertEqual(tcl.run("[target current] curstate").strip(), "running")
        deadline = time.monotonic() + 10
        while not guest_running(rig.qemu) and time.monotonic() < deadline:
            time.sleep(0.05)   # a core held for the last access runs again after 1 ms idle
        self.assertTrue(guest_running(rig.qemu), "QEMU's guest does not run after resume")
        print(f"\n{chip} over {probe}: examined, halted at {pc:#x} (QEMU {truth:#x}), {probed.strip()}, "
              f"resumed", flush=True)

    def test_stm32f2x_netduino2(self):
        self.run_chip("stm32f2x")

    def test_stm32f4x_netduinoplus2(self):
        self.run_chip("stm32f4x")

    def test_stm32f1x_stm32vldiscovery(self):
        self.run_chip("stm32f1x")

    def test_stm32l4x_b_l475e_iot01a(self):
        self.run_chip("stm32l4x")

    def test_nrf51_microbit(self):
        self.run_chip("nrf51")

    def test_stellaris_lm3s6965evb(self):
        self.run_chip("stellaris")


if __name__ == "__main__":
    unittest.main()
