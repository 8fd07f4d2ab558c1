"""The VS Code extension (src/vscode) in a real VS Code: code-server from the npm registry, in
Debian's Chromium, driven by Playwright (drive.js). The editor opens firmware-ref's source, the
extension's Record command records calltree_forever_m4 under `mcuprof record --qemu`, then
through a Cortex-Debug OpenOCD configuration (configFiles interface/stlink.cfg and
target/stm32f4x.cfg, the ST-Link's TCP backend in openOCDLaunchCommands) with which mcuprof
starts OpenOCD itself (`record --chip stm32f4x --probe stlink-server:PORT`) in front of
`mcuprof vprobe --chip stm32f4x` and a QEMU running the same image (the two recordings are then
diffed), runs `top` live, and what the
editor shows is checked against mcuprof's own JSON of that recording: each hot line's label in
the gutter (share and standard error), its hover (the inline chain, the inclusive share), the
profile view's function table (its rows, its sorting), the flame graph in it, and a click on a
row opening the function's source line.

Every process started here (code-server and what it runs, Chromium, the driver) is started by
spawn() (it dies with this test, even SIGKILLed) on ports chosen now, and stopped at the end.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import qemu_runner
import run_header
from qemu_runner import free_port
from spawn import spawn

HERE = os.path.dirname(os.path.abspath(__file__))

# What the editor runs in depends on the Node (install.sh picks the lock file): on Node 20 or
# later (NodeSource's, Debian 13's nodejs) code-server 4.100.3 (VS Code 1.100.3) and
# playwright-core 1.65.2 (tests/editor/package-lock.json); on Node 18 (Debian 12's nodejs)
# code-server 4.89.1 (VS Code 1.89.1) and playwright-core 1.61.1 (tests/editor/node18), the last
# releases of each for Node 18. Below 18 there is no pinned set: the test says so and ends with
# ctest's skip code (SKIP_RETURN_CODE 77), before anything is installed or started.
NODE_REQUIRED = 18


def node_major() -> int:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return int(out.lstrip("v").split(".")[0])


if node_major() < NODE_REQUIRED:
    print(f"skipped: the editor test's code-server needs Node {NODE_REQUIRED} or later, and this machine's node is "
          f"{subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()} (docs/ide.md)",
          flush=True)
    sys.exit(77)
REPO = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(REPO, "firmware-ref", "src")
IMAGE = "calltree_forever_m4"   # endless: record ends by --samples, top runs until stopped
FILE = "scen_calltree.c"

# A process whose group is the code-server's: SIGTERM (or its parent's death, PR_SET_PDEATHSIG)
# kills the whole group, code-server's children included (the extension host and the mcuprof it
# runs), which a death signal to code-server alone would leave behind.
GUARD = r"""
import ctypes, os, signal, subprocess, sys
ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)
def stop(*_):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, stop)
if os.getppid() != int(sys.argv[1]):
    stop()
child = subprocess.Popen(sys.argv[2:])
sys.exit(child.wait())
"""


def need(variable: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise unittest.SkipTest(f"{variable} is not set (ctest sets it)")
    return value


def wait_for(what: str, check, timeout: float):
    end = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class EditorTest(unittest.TestCase):
    def setUp(self):
        self.cli = need("MCUPROF_CLI")
        self.elf = os.path.join(need("MCUPROF_FW_DIR"), IMAGE + ".elf")
        self.vsix = need("MCUPROF_VSIX")
        self.modules_dir = need("MCUPROF_EDITOR_DIR")
        for f in (self.cli, self.elf, self.vsix):
            self.assertTrue(os.path.exists(f), f"{f} is missing: make build makes it")
        self.tmp = tempfile.mkdtemp(prefix="mcuprof-editor-")
        self.processes: list[subprocess.Popen] = []
        self.qemu = None
        self.logs: list[str] = []
        os.makedirs(os.path.join(self.tmp, "shots"))

    def tearDown(self):
        if self.qemu is not None:
            self.qemu.close()
        for p in reversed(self.processes):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        if self._outcome_failed():
            for log in self.logs:
                if os.path.exists(log):
                    with open(log, errors="replace") as f:
                        sys.stderr.write(f"--- {log}\n{f.read()[-6000:]}\n")
        out = os.environ.get("MCUPROF_EDITOR_SHOTS")   # the screenshots, for docs/ide.md
        shots = os.path.join(self.tmp, "shots")
        if out and os.path.isdir(shots):
            for png in os.listdir(shots):
                shutil.copy(os.path.join(shots, png), out)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _outcome_failed(self) -> bool:
        result = getattr(self._outcome, "result", None)
        return bool(result and (result.failures or result.errors))

    def start_board(self) -> int:
        """QEMU running the image on netduinoplus2 (an STM32F405) behind `mcuprof vprobe --chip
        stm32f4x --stlink-port`: the board the OpenOCD configuration reaches. Its st-link port."""
        self.qemu = qemu_runner.QemuRun(self.elf, "netduinoplus2", gdb=True, uart=None, timeout=900).start()
        self.qemu.wait_listening(self.qemu.gdb_port)
        self.start([self.cli, "vprobe", "--gdb", f"127.0.0.1:{self.qemu.gdb_port}", "--stlink-port", "0",
                    "--chip", "stm32f4x"], "vprobe.log")
        def port():
            with open(os.path.join(self.tmp, "vprobe.log")) as f:
                found = re.search(r"st-link on 127\.0\.0\.1:(\d+)", f.read())
            return int(found.group(1)) if found else None
        return wait_for("the vprobe's st-link port", port, 60)

    def start(self, args, log_name, env=None):
        log = os.path.join(self.tmp, log_name)
        self.logs.append(log)
        with open(log, "wb") as out:
            p = spawn(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.processes.append(p)
        return p

    def test_record_heat_and_view(self):
        t0 = time.monotonic()
        timings = {}
        # what the editor runs in: code-server and playwright-core (npm ci of tests/editor's lock)
        subprocess.run(["sh", os.path.join(HERE, "install.sh"), self.modules_dir], check=True)
        timings["install"] = time.monotonic() - t0
        modules = os.path.join(self.modules_dir, "node_modules")
        entry = os.path.join(modules, "code-server", "out", "node", "entry.js")
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                   XDG_DATA_HOME=os.path.join(self.tmp, "data"), EDITOR_TEST_MODULES=modules)
        user_data = os.path.join(self.tmp, "user-data")
        extensions = os.path.join(self.tmp, "extensions")
        recordings = os.path.join(self.tmp, "recordings")
        subprocess.run(["node", entry, "--user-data-dir", user_data, "--extensions-dir", extensions,
                        "--install-extension", self.vsix], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        # the user's settings: where mcuprof is, and a launch configuration as Cortex-Debug's
        # with the QEMU machine (launch.json's own place is the workspace; the user's settings
        # keep firmware-ref's source untouched)
        # and a second, Cortex-Debug's for a board on an ST-Link (here the vprobe's stlink-server)
        stlink_port = self.start_board()
        os.makedirs(os.path.join(user_data, "User"), exist_ok=True)
        settings = {
            "mcuprof.path": self.cli, "mcuprof.recordingsDir": recordings,
            "mcuprof.samples": 3000, "mcuprof.stacks": True,
            "workbench.startupEditor": "none", "security.workspace.trust.enabled": False,
            "telemetry.telemetryLevel": "off", "workbench.tips.enabled": False,
            "git.openRepositoryInParentFolders": "never",
            "launch": {"version": "0.2.0", "configurations": [{
                "name": "calltree in QEMU", "type": "cortex-debug", "request": "launch",
                "servertype": "qemu", "machine": "netduinoplus2", "executable": self.elf}, {
                "name": "calltree on the board", "type": "cortex-debug", "request": "launch",
                "servertype": "openocd", "executable": self.elf,
                "configFiles": ["interface/stlink.cfg", "target/stm32f4x.cfg"],
                "openOCDLaunchCommands": [f"hla_stlink_backend tcp {stlink_port}"]}]},
        }
        with open(os.path.join(user_data, "User", "settings.json"), "w") as f:
            json.dump(settings, f)
        port, cdp = free_port(), free_port()
        self.start([sys.executable, "-c", GUARD, str(os.getpid()), "node", entry, "--auth", "none",
                    "--bind-addr", f"127.0.0.1:{port}", "--user-data-dir", user_data,
                    "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check",
                    "--disable-workspace-trust", "--disable-getting-started-override", SOURCE],
                   "code-server.log", env)
        self.start(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={os.path.join(self.tmp, 'chromium')}",
                    f"--remote-debugging-port={cdp}", "about:blank"], "chromium.log")
        wait_for("code-server's page", lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), 60)
        wait_for("Chromium's DevTools port", lambda: http_ok(f"http://127.0.0.1:{cdp}/json/version"), 60)
        timings["started"] = time.monotonic() - t0

        shots = os.path.join(self.tmp, "shots")
        plan = {"cdp": cdp, "url": f"http://127.0.0.1:{port}/?folder={SOURCE}", "file": FILE,
                "lines": [], "shots": shots, "function": "", "recordings": recordings,
                "board": "calltree on the board"}
        # the lines to check: the hottest of FILE in a short recording made here (the image
        # spends its time in the same few lines every run), and line 1, which has no samples
        expected_lines = self.hot_lines_guess()
        plan["lines"] = expected_lines
        plan["function"] = "shared"   # work is inlined into shared: it has no row of its own
        plan_file = os.path.join(self.tmp, "plan.json")
        with open(plan_file, "w") as f:
            json.dump(plan, f)
        driver = self.start(["node", os.path.join(HERE, "drive.js"), plan_file], "drive.log", env)
        driver.wait(timeout=600)
        with open(os.path.join(self.tmp, "drive.log")) as f:
            log = f.read()
        timings["driven"] = time.monotonic() - t0
        seen = json.loads([l for l in log.splitlines() if l.startswith("{")][-1])
        self.assertNotIn("error", seen, seen.get("error"))

        # the recording the editor made, and mcuprof's JSON of it
        recs = sorted(os.path.join(recordings, r) for r in os.listdir(recordings)
                      if r.endswith(".rec") and not r.startswith("live-"))
        self.assertEqual(len(recs), 2, recs)   # Record Now, twice: the second for the diff
        # the second through the board configuration: mcuprof started OpenOCD with its scripts
        board = run_header.read_header(recs[1])
        self.assertEqual(board.get("openocd_run", {}).get("chip"), "stm32f4x", board)
        self.assertEqual(board["openocd_run"]["probe"], f"stlink-server:127.0.0.1:{stlink_port}")
        self.assertIn("-f interface/stlink.cfg", board["openocd_run"]["command"])
        self.assertNotIn("openocd_run", run_header.read_header(recs[0]))
        by_line = json.loads(subprocess.check_output([self.cli, "report", recs[0], "--by", "line", "--format", "json"]))
        by_function = json.loads(subprocess.check_output([self.cli, "report", recs[0], "--format", "json"]))
        self.assertIn(f"{by_line['samples']} samples", seen["status"])

        rows = {r["name"]: r for r in by_line["functions"]}
        checked = 0
        for n, got in seen["lines"].items():
            name = next((k for k in rows if k.endswith(f"/{FILE}:{n}")), None)
            if name is None:
                self.assertEqual(got.get("labels"), [], f"line {n} has no samples but shows {got}")
                continue
            r = rows[name]
            self.assertEqual(got.get("labels"), [f"{r['percent']:.2f} ±{r['stderr']:.2f} %"], f"line {n}: {got}")
            self.assertTrue(got.get("background"), f"line {n} has no heat colour: {got}")
            checked += 1
        self.assertGreaterEqual(checked, 2, seen["lines"])
        first = rows[next(k for k in rows if k.endswith(f"/{FILE}:{expected_lines[0]}"))]
        hover = seen["hover"]
        self.assertIn(f"{first['percent']:.2f} % ± {first['stderr']:.2f}", hover)
        self.assertIn(f"inclusive (from the stacks) {first['inclusive_percent']:.2f} %", hover)
        # every inline chain the address rows of that line show (work is inlined into its callers)
        by_address = json.loads(subprocess.check_output([self.cli, "report", recs[0], "--by", "address", "--format", "json"]))
        chains = {" → ".join([first["function"], *r["inlined_into"]]) for r in by_address["functions"]
                  if r.get("inlined_into") and r.get("location", "").endswith(f"/{FILE}:{expected_lines[0]}")}
        self.assertIn("work → shared", chains)
        for chain in chains:
            self.assertIn(f"inlined: {chain}", hover)

        table = seen["table"]
        self.assertEqual([t[0] for t in table], [r["name"] for r in by_function["functions"]])
        for t, r in zip(table, by_function["functions"]):
            self.assertEqual(t[1], f"{r['percent']:.2f}", t)
            self.assertEqual(t[2], f"{r['stderr']:.2f}", t)
            self.assertEqual(t[4], str(r["samples"]), t)
        inclusive = [float(t[3] or -1) for t in seen["tableByInclusive"]]
        self.assertEqual(inclusive, sorted(inclusive, reverse=True))
        self.assertGreater(seen["flame"], 0, "no svg (flame graph) in the profile view's report")
        shared = next(r for r in by_function["functions"] if r["name"] == "shared")
        line = int(shared["location"].rsplit(":", 1)[1])
        self.assertIn(FILE, seen["afterClick"]["tab"])
        self.assertIn(f"Ln {line},", seen["afterClick"]["cursor"])

        # the diff: each line's z-score as `mcuprof diff --by line --format json` gives it
        self.assertEqual(seen["diffed"], recs)
        diff = json.loads(subprocess.check_output([self.cli, "diff", recs[0], recs[1], "--elf", self.elf,
                                                   "--by", "line", "--format", "json"]))
        diff_rows = {r["name"]: r for r in diff["rows"]}
        checked = 0
        for n, got in seen["diffLines"].items():
            name = next((k for k in diff_rows if k.endswith(f"/{FILE}:{n}")), None)
            if name is None:
                self.assertEqual(got.get("labels"), [], f"line {n}: {got}")
                continue
            r = diff_rows[name]
            z = (("+inf" if r["delta_pp"] > 0 else "-inf" if r["delta_pp"] < 0 else "0") if r["z"] is None
                 else f"{r['z']:+.2f}")
            self.assertEqual(got.get("labels"), [f"z {z}{' !' if r['flagged'] else ''}"], f"line {n}: {got}")
            checked += 1
        self.assertGreaterEqual(checked, 2, seen["diffLines"])

        # live: the heat redrawn while top ran (the sample count grew), and after the stop the
        # label of the whole file's report
        counts = seen["liveCounts"]
        self.assertGreaterEqual(len(counts), 2, counts)
        self.assertEqual(counts, sorted(counts))
        lives = [os.path.join(recordings, r) for r in os.listdir(recordings) if r.startswith("live-")]
        self.assertEqual(len(lives), 1, lives)
        live = json.loads(subprocess.check_output([self.cli, "report", lives[0], "--by", "line", "--format", "json"]))
        self.assertIn(f"{live['samples']} samples", seen["liveStatus"])
        self.assertGreater(live["samples"], counts[0])
        r = next(r for r in live["functions"] if r["name"].endswith(f"/{FILE}:{expected_lines[0]}"))
        self.assertEqual(seen["liveFinal"].get("labels"), [f"{r['percent']:.2f} ±{r['stderr']:.2f} %"])

        timings["total"] = time.monotonic() - t0
        print("editor test:", ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()),
              "; driver steps:", seen["steps"], file=sys.stderr)

    def hot_lines_guess(self) -> list[int]:
        """The hottest lines of FILE: in every run of this image the same few (the image's
        loops), taken from a short recording made here."""
        rec = os.path.join(self.tmp, "guess.rec")
        subprocess.run([self.cli, "record", "--qemu", "netduinoplus2", "--elf", self.elf,
                        "--samples", "1000", "-o", rec], check=True, stdout=subprocess.DEVNULL)
        report = json.loads(subprocess.check_output([self.cli, "report", rec, "--by", "line", "--format", "json"]))
        os.remove(rec)
        lines = [int(r["name"].rsplit(":", 1)[1]) for r in report["functions"]
                 if re.search(rf"/{FILE}:\d+$", r["name"])]
        return lines[:3] + [1]


if __name__ == "__main__":
    unittest.main()
