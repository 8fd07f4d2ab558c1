"""`mcuprof record --openocd` end to end: QEMU (the truth plugin at uniform cost) runs the reference
firmware mixed_forever_m4, `mcuprof vprobe` serves remote_bitbang in front of its gdbstub, the
real OpenOCD (0.12) debugs it, and mcuprof samples it through OpenOCD's Tcl RPC port in both
modes (docs/live.md, "Over OpenOCD's Tcl port"):

  halt  200 samples, one halt-get_reg-resume round trip each;
  pcsr 1000 samples, DWT_PCSR read in batches by a loop inside OpenOCD's Tcl.

A second rig models a part built without the DWT (vprobe --no-dwt): pcsr mode is refused before
the first sample (exit 2, one line), pcsr,halt falls back to halting with a notice and gets the
halt-mode bounds; then OpenOCD is killed (SIGKILL) in the
middle of a recording, which must end with one line, exit code 3, a samples file holding
every sample mcuprof said it wrote, and the guest still running.

Checked: exit 0, the sample count, every PC inside a function of the ELF, the profile's hot
functions against the truth plugin's instruction census of the same window, and that the guest
still runs afterwards, also after a SIGINT in the middle of a recording (its file holding every
sample it announced; OpenOCD still sees it
running; QEMU reports it running to a new client
once OpenOCD and the vprobe are gone).

About the bounds. The truth is a census of instructions; wall-clock stops on QEMU land where
QEMU's host time goes, which is biased by emulation cost (docs/live.md). So QEMU runs the truth
plugin's uniform-cost mode (every instruction the same host time; docs/firmware-ref.md), and
each recording is held against the exact count of its own window (the plugin's snapshots just
before and after it): halt mode gets a 4-standard-error bound on the shares of the functions
that hold at least 5 % of its window. PCSR reads through the vprobe are not independent
(back-to-back reads within a batch often see the same PC: the core barely moves between them),
so the report's own errors come from the spread between batches (docs/live.md, "Error bars of
correlated reads"), and pcsr mode holds every function of at least 1 % of its window within 4
of them.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import unittest

from openocd_record_suite import RecordThroughOpenOCD, WithoutPcsrThenOpenOCDKilled  # noqa: F401  (run here, JTAG)


if __name__ == "__main__":
    unittest.main()
