#!/usr/bin/env python3
"""Every command checks all it is given before it reads an input or touches a link: a
mistake is one line on standard error, the documented exit code (1 usage, 2 bad input), in
well under a second, and a server named on the command line is never contacted (a socket
listens here and must have no connection queued afterwards). Also: the help of every
command fits 80 columns and lists only what the command takes, a mistyped command or option
gets the nearest known one, and JSON numbers are rounded (counts are integers)."""
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import unittest

import cli_args
from spawn import spawn

ARGS = None
COMMANDS = ["record", "top", "report", "truth", "diff", "swo", "vprobe"]


def run(*args, stdin=None):
    return subprocess.run([ARGS.mcuprof, *args], capture_output=True, text=True, timeout=60, stdin=stdin)


class Listener:
    """A TCP port that listens but never accepts: a connection attempt would stay queued."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"

    def contacted(self) -> bool:
        self.sock.setblocking(False)
        try:
            connection, _ = self.sock.accept()
        except BlockingIOError:
            return False
        finally:
            self.sock.setblocking(True)
        connection.close()
        return True

    def close(self):
        self.sock.close()


class Checks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.elf = os.path.join(ARGS.fixtures, "symbols_fixture.elf")
        self.inline_elf = os.path.join(ARGS.fixtures, "inline_fixture.elf")
        self.server = Listener()
        self.addCleanup(self.server.close)
        self.addCleanup(self.dir.cleanup)
        # A raw image, as objcopy -O binary writes it: the vector table's first words.
        self.raw_image = os.path.join(self.dir.name, "fw.bin")
        with open(self.raw_image, "wb") as f:
            f.write(bytes.fromhex("00000220 91010008 00000000"))
        self.dump = os.path.join(self.dir.name, "uart.txt")
        with open(self.dump, "w") as f:
            f.write("prof raw n=3\np 08000000 08000002 08000010\nend\n")

    def assert_mistake(self, args, code, *fragments):
        r = run(*args)
        self.assertEqual(r.returncode, code, f"{args}: {r.stderr}")
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{args}: {r.stderr}")
        for fragment in fragments:
            self.assertIn(fragment, lines[0], args)
        self.assertEqual(r.stdout, "", args)
        # Before the link: the listener was never contacted (no timing: a loaded machine is slow).
        self.assertFalse(self.server.contacted(), f"{args}: the server was contacted")

    def test_record_checks_everything_before_the_link(self):
        out = os.path.join(self.dir.name, "r.bin")
        gdb = ["record", "--gdb", self.server.address]
        ok = [*gdb, "--elf", self.elf, "-o", out]
        mistakes = [
            ([*gdb, "--elf", "/etc/passwd", "-o", out], 2, "/etc/passwd"),
            ([*gdb, "--elf", "/bin/sh", "-o", out], 2, "/bin/sh", "not a 32-bit"),
            ([*gdb, "--elf", os.path.join(self.dir.name, "none.elf"), "-o", out], 2, "none.elf"),
            ([*gdb, "--elf", self.raw_image, "-o", out], 2, "fw.bin", "not an ELF file", "raw .bin"),
            ([*ok, "--samples", "18446744073709551616"], 1, "--samples takes a whole number up to "
                                                            "18446744073709551615"),
            (["record", "--openocd", "127.0.0.1:notaport", "--elf", self.elf, "-o", out], 1,
             "--openocd takes HOST[:PORT]", "6666"),
            (["swo", "--openocd", "127.0.0.1:70000", "--elf", self.elf, "--cpu-hz", "72M"], 1,
             "--openocd takes HOST[:PORT]"),
            ([*ok, "--format", "pdf"], 1, "--format", "pdf"),
            ([*ok, "--format", "pprof"], 1, "not 'pprof'"),
            ([*ok, "--format", "gmon"], 1, "--format takes text, json", "not 'gmon'", "mcuprof report"),
            ([*ok, "--by", "colour"], 1, "--by", "colour"),
            ([*ok, "--top", "-3"], 1, "--top", "-3"),
            ([*ok, "--samples", "-5"], 1, "--samples"),
            ([*ok, "--format", "json", "--top", "3"], 1, "--top goes with --format text"),
            ([*ok, "--jitter", "0.2"], 1, "--jitter goes with --shape uniform"),
            ([*ok, "--qmp", "127.0.0.1:1"], 1, "--qmp goes with --pace icount"),
            ([*ok, "--interval", "1"], 1, "--interval takes a time with wall pacing", "--pace icount"),
            ([*ok, "--stack-bytes", "256"], 1, "--stack-bytes goes with --stacks"),
            ([*ok, "--at", "func_a"], 1, "--at goes with --read-onchip"),
            ([*ok, "--openocd", self.server.address], 1, "--gdb", "--openocd"),
            ([*ok, "--read-onchip", "--samples", "10"], 1, "--samples does not go with --read-onchip"),
            ([*gdb, "--elf", self.elf], 1, "-o FILE"),
            ([*gdb, "-o", out], 1, "--elf"),
            ([*gdb, "--elf", self.elf, "-o", os.path.join(self.dir.name, "no", "such", "dir.bin")], 2,
             "dir.bin", "cannot write"),
            ([*ok, "stray"], 1, "no positional argument", "stray"),
        ]
        for args, code, *fragments in mistakes:
            with self.subTest(args=" ".join(args[3:])):
                self.assert_mistake(args, code, *fragments)
        self.assertFalse(os.path.exists(out))   # the check of -o leaves nothing behind

    def test_top_swo_and_vprobe_check_before_the_link(self):
        top = ["top", "--gdb", self.server.address, "--elf", self.elf]
        swo = ["swo", "--openocd", self.server.address, "--elf", self.elf, "--cpu-hz", "72M"]
        mistakes = [
            ([*top, "--by", "line"], 1, "--by takes function, task or var:NAME"),
            ([*top, "--rows", "-1"], 1, "--rows"),
            ([*top, "--decay", "-5"], 1, "--decay"),
            ([*top, "-o", os.path.join(self.dir.name, "no", "dir.bin")], 2, "cannot write"),
            (["top", "--gdb", self.server.address, "--elf", "/etc/passwd"], 2, "/etc/passwd"),
            ([*swo, "--by", "task"], 1, "--by takes function, line, address or stack"),
            ([*swo, "--trace-output", "external", "--format", "json"], 1, "--format does not go with"),
            ([*swo, "--samples", "-1"], 1, "--samples"),
            (["swo", "--openocd", self.server.address, "--elf", "/etc/passwd", "--cpu-hz", "72M"], 2,
             "/etc/passwd"),
            # A second image is checked against the first before the link: both fixtures load
            # their code at 0x08000000.
            ([*top, "--elf", self.inline_elf], 2, self.inline_elf, "two images of one target cannot share flash"),
            ([*swo, "--elf", self.inline_elf], 2, self.inline_elf, "two images of one target cannot share flash"),
            (["vprobe", "--gdb", self.server.address, "--port", "1", "--stlink-port", "2"], 1,
             "--port and --stlink-port do not go together"),
            (["vprobe", "--gdb", self.server.address], 1, "one of --port N (remote_bitbang) or --stlink-port N"),
        ]
        for args, code, *fragments in mistakes:
            with self.subTest(args=" ".join(args)):
                self.assert_mistake(args, code, *fragments)

    def test_report_diff_and_truth_options(self):
        report = ["report", self.dump, "--elf", self.elf]
        mistakes = [
            ([*report, "--format", "json", "--top", "2"], 1, "--top goes with --format text"),
            ([*report, "--top", "-1"], 1, "--top"),
            ([*report, "--channel", "2"], 1, "--channel goes with --calls"),
            ([*report, "--packets"], 1, "--elf does not go with --packets"),
            ([*report, "--calls", "--packets"], 1, "--calls and --packets do not go together"),
            ([*report, "--calls", "--by", "line"], 1, "--by does not go with --calls"),
            ([*report, "--first", "-2"], 1, "--first"),
            ([*report, self.dump], 1, "one INPUT"),
            (["truth", self.dump, "--elf", self.elf, "--by", "task"], 1, "--by takes function, line, address, "
                                                                           "stack or core"),
            (["diff", self.dump, self.dump, "--elf", self.elf, "--format", "collapsed"], 1, "collapsed"),
            (["diff", self.dump, self.dump, "--elf", self.elf, "--format", "json", "--top", "1"], 1,
             "--top goes with --format text or markdown"),
            (["diff", self.dump, "--elf", self.elf], 1, "two inputs"),
        ]
        for args, code, *fragments in mistakes:
            with self.subTest(args=" ".join(args)):
                self.assert_mistake(args, code, *fragments)
        # What the checks let through still works: --top with text, markdown for diff.
        self.assertEqual(run(*report, "--top", "1").returncode, 0)
        self.assertEqual(run("diff", self.dump, self.dump, "--elf", self.elf, "--format", "markdown", "--top",
                             "1").returncode, 0)

    def test_the_largest_sample_count_is_taken_and_openocd_defaults_to_port_6666(self):
        # --openocd HOST is HOST:6666, OpenOCD's Tcl port: a listener there (on a loopback
        # address of its own, so no other OpenOCD is in the way) is contacted. --samples
        # 2^64 - 1 passes the checks, so the link is reached.
        listener = socket.socket()
        try:
            listener.bind(("127.77.0.1", 6666))
        except OSError as e:
            self.skipTest(f"127.77.0.1:6666 is taken: {e}")
        listener.listen(1)
        self.addCleanup(listener.close)
        proc = spawn([ARGS.mcuprof, "record", "--openocd", "127.77.0.1", "--elf", self.elf, "-o",
                      os.path.join(self.dir.name, "r.bin"), "--samples", "18446744073709551615"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            listener.settimeout(60)   # a bound for a loaded machine; the connection comes at once
            connection, _ = listener.accept()
            connection.close()
        finally:
            proc.kill()
            proc.wait(timeout=60)

    def test_did_you_mean(self):
        r = run("recrod")
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown command 'recrod'; did you mean record?", r.stderr.splitlines()[0])
        self.assert_mistake(["record", "--gbd", self.server.address, "--elf", self.elf, "-o", "x.bin"], 1,
                            "'--gbd'", "did you mean --gdb?")
        self.assert_mistake(["report", self.dump, "--elf", self.elf, "--formta", "json"], 1, "did you mean --format?")
        self.assert_mistake(["report", self.dump, "--elf", self.elf, "--zzzzzz"], 1, "--zzzzzz")
        self.assertNotIn("did you mean", run("report", self.dump, "--zzzzzz").stderr)

    def test_help_fits_80_columns_and_lists_what_the_command_takes(self):
        helps = {"": run("--help").stdout}
        for command in COMMANDS:
            r = run(command, "--help")
            self.assertEqual(r.returncode, 0, command)
            helps[command] = r.stdout
        for command, text in helps.items():
            for line in text.splitlines():
                with self.subTest(command=command, line=line):
                    self.assertLessEqual(len(line), 80)
                    self.assertEqual(line, line.rstrip())
            self.assertNotRegex(text, r"(?i)\b(seed|issue)\s+\d")
        # Each command lists only its formats and groupings.
        self.assertNotIn("gmon", section(helps["record"], "--format"))   # its report goes to standard output
        self.assertIn("gmon", section(helps["report"], "--format"))
        self.assertNotIn("collapsed", helps["diff"])
        self.assertIn("markdown", helps["diff"])
        self.assertNotIn("task", section(helps["truth"], "--by"))
        self.assertNotIn("task", section(helps["swo"], "--by"))
        self.assertIn("task", section(helps["report"], "--by"))
        # -o: the samples file in record and top, the report in report and diff.
        for command in ("record", "top"):
            self.assertIn("samples", section(helps[command], "-o [ --output ]"))
        for command in ("report", "diff", "truth"):
            self.assertIn("report", section(helps[command], "-o [ --output ]"))
        self.assertNotIn("--record", helps["record"])

    def test_another_programs_text_stays_on_one_line(self):
        # A stand-in for OpenOCD's Tcl port whose every answer is an error of two lines, as
        # OpenOCD's own messages can be: mcuprof's error stays one line and carries both.
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        self.addCleanup(server.close)

        def answer():
            connection, _ = server.accept()
            with connection:
                while connection.recv(4096):
                    connection.sendall(b"1 first line of the message\nsecond line\x1a")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        out = os.path.join(self.dir.name, "r.bin")
        r = run("record", "--openocd", f"127.0.0.1:{server.getsockname()[1]}", "--mode", "halt", "--elf", self.elf,
                "-o", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("first line of the message / second line", lines[0])

    def test_json_numbers_are_rounded_and_counts_integers(self):
        # 2 of 3 samples in func_a, 1 in local_b: 66.66666667 % and 33.33333333 %, se 27.21655269.
        r = run("report", self.dump, "--elf", self.elf, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        for number in re.findall(r"-?\d+\.\d+(?:[eE][-+]?\d+)?", r.stdout):
            self.assertLessEqual(len(number.split(".")[1]), 8, number)
        doc = json.loads(r.stdout)
        self.assertIs(type(doc["samples"]), int)
        rows = {row["name"]: row for row in doc["functions"]}
        self.assertIs(type(rows["func_a"]["samples"]), int)
        self.assertEqual(rows["func_a"]["percent"], round(200 / 3, 8))
        self.assertEqual(rows["local_b"]["percent"], round(100 / 3, 8))
        self.assertEqual(rows["func_a"]["stderr"], round(100 * (2 / 9 / 3) ** 0.5, 8))


def section(help_text: str, option: str) -> str:
    """The help lines of one option: its line and the indented lines that continue it."""
    lines = help_text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(option):
            text = [line]
            for more in lines[i + 1:]:
                if more.strip().startswith("-") or not more.startswith(" " * 10):
                    break
                text.append(more)
            return "\n".join(text)
    raise AssertionError(f"{option} not in the help")


if __name__ == "__main__":
    cli_args.main(globals())
