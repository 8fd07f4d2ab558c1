"""Both cores of a two-core chip through OpenOCD's GDB port (issue 29): the rig of
test_vprobe_cores (mps2-an521's two Cortex-M33 running dual_forever_an521 at a uniform cost per
instruction without -icount, the vprobe with core 1 on AP1, the real OpenOCD with two cortex_m
targets), sampled by `record --gdb` on OpenOCD's GDB port instead of its Tcl port.

OpenOCD 0.12's GDB port halts its own target only: its cortex_m has no SMP halt, and the
hwthread port of a `target smp` group shows each core as a thread but answers a running core's
'g' with the port target's registers. So mcuprof halts the other examined cortex_m targets
itself, by one monitor script right after OpenOCD's halt (docs/live.md, "Several cores").

- Each target with its GDB port (the port of core 0 sampled), as configs/openocd/stm32h745-stlink.cfg
  has it: each core's shares within 4 standard errors of its own window's census, N that core's
  samples; both cores named, none reported as not sampled.
- The same as a `target smp` group with `-rtos hwthread` (one port for the group), with fewer halts:
  the bound holds at any N.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import unittest

from test_vprobe_cores import RecordBothCoresThroughOpenOCD


class RecordBothCoresThroughGdbPort(RecordBothCoresThroughOpenOCD):
    """Core 1's target with a GDB port of its own (OpenOCD's next, unused here)."""
    openocd_commands = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1", "targets qemu.cpu")
    openocd_gdb = True

    @classmethod
    def link(cls) -> list[str]:
        return ["--gdb", f"127.0.0.1:{cls.gdb_port}"]


class RecordBothCoresThroughSmpGdbPort(RecordBothCoresThroughGdbPort):
    """A `target smp` group with hwthread: one GDB port, each core a thread of it."""
    openocd_commands = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1 -coreid 1",
                        "target smp qemu.cpu qemu.cpu1",
                        "qemu.cpu configure -rtos hwthread", "qemu.cpu1 configure -rtos hwthread",
                        "targets qemu.cpu")
    recorded_halts = 400


del RecordBothCoresThroughOpenOCD   # run by test_vprobe_cores


if __name__ == "__main__":
    unittest.main()
