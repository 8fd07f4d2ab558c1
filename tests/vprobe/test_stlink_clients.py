"""Several clients on one virtual ST-Link at once, as ST's stlink-server lets a debugger's GDB
server, OpenOCD and CubeProgrammer share one probe: QEMU runs the reference firmware behind
`mcuprof vprobe --stlink-port --latency 1ms`, two real OpenOCD 0.12 processes (`st-link
backend tcp`, dapdirect_swd) and a raw stlink-server client written here from the protocol's
byte layout (docs/vprobe.md) are connected at the same time.

Both OpenOCDs read the flash against the ELF image; while one has halted the core, the other
and the raw client read the same registers (the raw client with READALLREGS, one USB command);
one OpenOCD leaving leaves the other and the raw client working. Then the raw client samples
alone as a halting sampler would (halt, READALLREGS, the stack in one block read, resume: four
USB commands), and the vprobe's count of its commands, printed per connection at exit, must be
exactly what it sent.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import re
import socket
import struct
import subprocess
import sys
import time
import unittest

import qemu_runner
from openocd_rig import (CLI, ELF, OPENOCD, STLINK_CONFIG, RigClass, TclRpc, elf_flash_image, elf_symbol,
                         guest_running, require, start_rig, stop_process, wait_first_poll, wait_port)
from spawn import spawn

DHCSR = 0xE000EDF0
DBGKEY = 0xA05F0000
C_DEBUGEN, C_HALT = 1 << 0, 1 << 1
STATUS_OK = 0x80
LATENCY_S = 0.001


class RawStlinkClient:
    """The stlink-server protocol by hand: OPEN_DEV, USB commands (a 32-byte request: [4] the
    connection id, [8..23] the command, [24] the direction, [28] the length), CLOSE_DEV. Counts
    the USB commands it sends."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.usb_commands = 0
        status, self.connection = struct.unpack("<II", self.exchange(struct.pack("<B3xI", 0x03, 1), 8))
        assert status == 1, f"OPEN_DEV answered {status:#x}"

    def exchange(self, request: bytes, length: int) -> bytes:
        self.sock.sendall(request)
        reply = b""
        while len(reply) < length:
            chunk = self.sock.recv(length - len(reply))
            if not chunk:
                raise ConnectionError("the stlink-server closed the connection")
            reply += chunk
        return reply

    def usb(self, command: bytes, length: int) -> bytes:
        request = struct.pack("<B3xI16sB3xI", 0x05, self.connection, command, 1, length)
        reply = self.exchange(request, 4 + length)
        self.usb_commands += 1
        assert struct.unpack_from("<I", reply)[0] == 1, "the server refused the USB command"
        return reply[4:]

    def write_debug_register(self, address: int, value: int) -> None:
        reply = self.usb(struct.pack("<BBII", 0xF2, 0x35, address, value), 2)
        assert reply[0] == STATUS_OK, f"WRITEDEBUGREG status {reply[0]:#x}"

    def read_all_registers(self) -> list[int]:
        """READALLREGS (0xF2 0x3A): the status word, then r0-r15, xPSR, MSP, PSP, REGSEL 19, REGSEL 20."""
        reply = self.usb(bytes([0xF2, 0x3A]), 88)
        assert reply[0] == STATUS_OK, f"READALLREGS status {reply[0]:#x}"
        return list(struct.unpack_from("<21I", reply, 4))

    def read_memory(self, address: int, length: int) -> bytes:
        return self.usb(struct.pack("<BBIH", 0xF2, 0x07, address, length), length)

    def close(self) -> None:
        status = struct.unpack("<I", self.exchange(struct.pack("<B3xI", 0x04, self.connection), 4))[0]
        assert status == 1
        self.sock.close()


class TwoOpenOCDsAndARawClient(RigClass, unittest.TestCase):
    work_prefix = "mcuprof-stlink-clients-"
    stlink_transport = "dapdirect_swd"

    @classmethod
    def requirements(cls):
        require((OPENOCD, "arm-none-eabi-nm", "arm-none-eabi-objcopy"), (CLI, ELF))

    @classmethod
    def with_rig(cls):
        cls.second = cls.second_tcl = None
        start_rig(cls, ELF, vprobe_options=("--latency", "1ms"))
        cls.second_tcl_port = qemu_runner.free_port()
        cls.second_log = open(cls.work / "openocd-2.log", "w")
        cls.second = spawn(
            [OPENOCD, "-c", f"set STLINK_TRANSPORT {cls.stlink_transport}", "-f", str(STLINK_CONFIG),
             "-c", f"st-link backend tcp {cls.bitbang_port}", "-c", "gdb_port disabled",
             "-c", "telnet_port disabled", "-c", f"tcl_port {cls.second_tcl_port}", "-c", "init"],
            stdin=subprocess.DEVNULL, stdout=cls.second_log, stderr=subprocess.STDOUT, cwd=cls.work)
        try:
            wait_port(cls.second_tcl_port, cls.second, "the second openocd")
        except AssertionError as e:
            cls.second_log.flush()
            raise AssertionError(f"{e}: {(cls.work / 'openocd-2.log').read_text()}") from None
        cls.second_tcl = TclRpc(cls.second_tcl_port)
        wait_first_poll(cls.second_tcl)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "second_tcl", None) is not None:
            try:
                cls.second_tcl.raw("shutdown")
            except OSError:
                pass
            cls.second_tcl.close()
        stop_process(getattr(cls, "second", None))
        if getattr(cls, "second_log", None):
            cls.second_log.close()
        super().tearDownClass()

    # ---- helpers

    @staticmethod
    def reg(tcl: TclRpc, name: str) -> int:
        out = tcl.run(f"reg {name}")
        match = re.search(r":\s*(0x[0-9a-fA-F]+)", out)
        assert match, out
        return int(match.group(1), 16)

    @staticmethod
    def state(tcl: TclRpc) -> str:
        tcl.run("poll")
        match = re.search(r"(\S+\.cpu)\s+cortex_m\s+little\s+\1\s+(\w+)", tcl.run("targets"))
        assert match
        return match.group(2)

    def vectors_read(self, tcl: TclRpc) -> list[int]:
        return [int(w, 16) for w in tcl.run("mdw 0x08000000 8").split(":", 1)[1].split()]

    def compare_every_register(self, tcl: TclRpc, raw: RawStlinkClient) -> None:
        """READALLREGS against what one OpenOCD reads of the halted core, register by register."""
        tcl.run("halt")
        registers = raw.read_all_registers()
        for index, name in enumerate(("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11",
                                      "r12", "sp", "lr", "pc", "xPSR", "msp", "psp")):
            with self.subTest(register=name):
                self.assertEqual(registers[index], self.reg(tcl, f"{name} force"))
        self.assertEqual(registers[19], 0)   # REGSEL 19: reserved
        special = (self.reg(tcl, "control force") << 24 | self.reg(tcl, "faultmask force") << 16 |
                   self.reg(tcl, "basepri force") << 8 | self.reg(tcl, "primask force"))
        self.assertEqual(registers[20], special)
        tcl.run("resume")

    # ---- the test

    def test_clients_share_the_probe(self):
        image = elf_flash_image(ELF, self.work)
        vectors = list(struct.unpack_from("<8I", image))
        first, second = self.tcl, self.second_tcl
        raw = RawStlinkClient(self.bitbang_port)
        try:
            # Three clients at once, each reading the flash.
            self.assertEqual(self.state(first), "running")
            self.assertEqual(self.state(second), "running")
            for _ in range(3):
                self.assertEqual(self.vectors_read(first), vectors)
                self.assertEqual(self.vectors_read(second), vectors)
                self.assertEqual(raw.read_memory(0x08000000, 32), image[:32])

            # One halts; the other and the raw client see the same PC, SP and xPSR. Each OpenOCD
            # reads a register as three USB commands (DCRSR, DHCSR, DCRDR): two debuggers
            # reading at the same moment interleave them on the one core and read each other's
            # registers, as they would through ST's server (seen here: the caches both filled
            # at the halt held wrong values). So the caches are read again (`force`) once both
            # have seen the halt; the whole READALLREGS is compared below, with one debugger.
            first.run("halt")
            self.assertEqual(self.state(second), "halted")
            registers = raw.read_all_registers()
            for index, name in ((13, "sp"), (15, "pc"), (16, "xPSR")):
                with self.subTest(register=name):
                    self.assertEqual(registers[index], self.reg(first, f"{name} force"))
                    self.assertEqual(registers[index], self.reg(second, f"{name} force"))
            first.run("resume")
            self.assertEqual(self.state(second), "running")

            # The second OpenOCD leaves; the first and the raw client go on.
            second.raw("shutdown")
            second.close()
            type(self).second_tcl = None
            self.assertEqual(self.second.wait(timeout=10), 0)
            self.assertIsNone(self.vprobe.poll(), "the vprobe ended with a client still connected")
            self.assertEqual(self.vectors_read(first), vectors)
            self.assertEqual(raw.read_memory(0x08000000, 32), image[:32])
            self.compare_every_register(first, raw)
            first.raw("shutdown")
            first.close()
            type(self).tcl = None
            self.assertEqual(self.openocd.wait(timeout=10), 0)
            self.assertIsNone(self.vprobe.poll(), "the vprobe ended with a client still connected")

            # Alone now: a halting sampler's four USB commands a sample.
            text = (elf_symbol(ELF, "__text_start"), elf_symbol(ELF, "__text_end"))
            samples, sent_before = 200, raw.usb_commands
            started = time.monotonic()
            for _ in range(samples):
                raw.write_debug_register(DHCSR, DBGKEY | C_HALT | C_DEBUGEN)
                registers = raw.read_all_registers()
                stack = raw.read_memory(registers[13], 64)
                raw.write_debug_register(DHCSR, DBGKEY | C_DEBUGEN)
                self.assertTrue(text[0] <= registers[15] < text[1], f"pc {registers[15]:#010x} outside .text")
                self.assertEqual(len(stack), 64)
            seconds = time.monotonic() - started
            per_sample = (raw.usb_commands - sent_before) / samples
            self.assertEqual(per_sample, 4)
            rate = samples / seconds
            print(f"\nvprobe st-link at 1 ms a USB command: {rate:.0f} samples/s with the stack window, "
                  f"{per_sample:.0f} USB commands a sample", file=sys.stderr)
            # Four commands at 1 ms each: no sampler gets past 250 samples/s.
            self.assertLessEqual(rate, 1 / (4 * LATENCY_S) * 1.02)
        finally:
            raw.close()

        # The last client gone, the vprobe ends, leaves the guest running and reports each
        # connection's own count: the raw client's is exactly what it sent.
        self.assertEqual(self.vprobe.wait(timeout=10), 0)
        self.vprobe_reader.join(timeout=5)
        log = "".join(self.vprobe_log)
        self.assertIn("target detached, running", log)
        by_connection = re.search(r"USB commands by connection: (.*)", log)
        self.assertIsNotNone(by_connection, log)
        counts = {int(k): int(v) for k, v in re.findall(r"connection (\d+): (\d+)", by_connection.group(1))}
        self.assertEqual(len(counts), 3, by_connection.group(0))
        self.assertEqual(counts[raw.connection], raw.usb_commands)
        total = int(re.search(r"(\d+) USB commands, ", log.split("OpenOCD quit")[-1]).group(1))
        self.assertEqual(total, sum(counts.values()))
        self.assertTrue(guest_running(self.qemu), "the guest is not running after the last client left")


if __name__ == "__main__":
    unittest.main()
