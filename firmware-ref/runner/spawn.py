"""Start a long-lived child process (QEMU, `mcuprof vprobe`, OpenOCD, a recording, socat) that
dies with the process that started it, even when that one is SIGKILLed (a ctest timeout, a
killed test run), so that no QEMU or OpenOCD is left behind holding a port and a core.

    from spawn import spawn
    process = spawn([openocd, "-f", config], stdout=log, stderr=subprocess.STDOUT)

How (Linux, prctl(2)): the child, between fork and exec, asks for SIGKILL when its parent goes
(PR_SET_PDEATHSIG; kept across execve for a binary that is not set-user-ID), and then checks
that the parent has not gone already (it may die between fork and prctl, and then no signal
ever comes). It also gets a session and process group of its own (setsid), as every such
process here had before: a terminal's Ctrl-C reaches the test alone, which stops its children
in order, and the test can signal the whole group.

What it does not cover: the death signal reaches the direct child only, not that child's own
children (a shell script's commands); mcuprof sees to its own QEMU (src/sampler/
qemu_session.cc sets PR_SET_PDEATHSIG too).

The signal is sent when the *thread* that forked the child ends, not the process: a child
started from a worker thread would be killed when that thread returns. So spawn() refuses to run
outside the main thread, where the tests start their processes; the main thread ends only with
the process.

This module lives beside qemu_runner (firmware-ref/runner), which uses it and must stay
runnable as a script on its own; tests/pylib's modules import it from there (PYTHONPATH,
tests/pylib/pythonpath).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading

PR_SET_PDEATHSIG = 1   # <linux/prctl.h>

_libc = ctypes.CDLL(None, use_errno=True)
# Looked up here, in the parent: the child between fork and exec does as little as it can.
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int


def spawn(args, **popen_options) -> subprocess.Popen:
    """subprocess.Popen(args, **popen_options) in a session of its own, the child SIGKILLed
    when this process dies. From the main thread only (see the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("spawn() runs in the main thread only: the child's death signal "
                           "(PR_SET_PDEATHSIG) fires when the thread that started it ends")
    parent = os.getpid()

    def die_with_parent() -> None:
        if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != parent:   # the parent died before prctl: no signal will come
            os.kill(os.getpid(), signal.SIGKILL)

    return subprocess.Popen(args, preexec_fn=die_with_parent, start_new_session=True, **popen_options)
