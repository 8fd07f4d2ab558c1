#!/usr/bin/env python3
"""Makes docs/images/*.png, the pictures of docs/guide.md, from real reports of the reference
firmware: runs the images in QEMU (the on-chip dump and the truth plugin's counts; a live
recording with call stacks over QEMU's gdbstub), writes the reports with mcuprof and takes
screenshots of them in headless Chromium. What a person would click (zoom, search, merge) is
done by a script added to a copy of the page, as the tests do (tests/pylib/chromium_page.py,
flame_graph_actions).

    export PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
    python3 scripts/guide_images.py [BUILD_DIR]      # after make build; BUILD_DIR: build

Needs chromium and go (go tool pprof draws its graph with graphviz's dot)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import qemu_runner

IMAGES = ROOT / "docs" / "images"

# Shows only the parts of the page named by CSS selectors (and the heading before each), so
# that a screenshot is the part the guide talks about.
KEEP_ONLY = """
(function () {
  const keep = new Set();
  for (const selector of KEEP) {
    let element = document.querySelector(selector);
    while (element && element.parentElement !== document.body) element = element.parentElement;
    if (!element) continue;
    keep.add(element);
    for (let before = element.previousElementSibling; before; before = before.previousElementSibling) {
      keep.add(before);
      if (before.tagName === 'H2') break;
    }
  }
  for (const child of document.body.children)
    if (child.tagName !== 'SCRIPT' && !keep.has(child)) child.style.display = 'none';
})();
"""
ANIMATION_FRAMES_BY_TIMER = ("window.requestAnimationFrame = "
                             "callback => setTimeout(() => callback(performance.now()), 16);")


def mcuprof(cli: Path, *args: str) -> str:
    return subprocess.run([str(cli), *args], check=True, capture_output=True, text=True, timeout=600).stdout


def screenshot(page: Path, out: Path, height: int, keep: list[str], actions: str = "", width: int = 1100) -> None:
    """A screenshot of `page` showing only `keep`, after `actions` (JavaScript)."""
    script = KEEP_ONLY.replace("KEEP", json.dumps(keep))
    shown = page.with_name(page.stem + "-shown.html")
    shown.write_text(page.read_text()
                     .replace("<head>", f"<head>\n<script>{ANIMATION_FRAMES_BY_TIMER}</script>", 1)
                     .replace("</body>", f"<script>{script}\n{actions}</script>\n</body>", 1))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", f"--user-data-dir={profile}", f"--window-size={width},{height}",
                        "--virtual-time-budget=20000", f"--screenshot={out}", shown.as_uri()],
                       check=True, capture_output=True, timeout=300)
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KiB")


def act(steps: str) -> str:
    """JavaScript that waits for the chart, then runs `steps` (they may await pause(ms))."""
    return ("(async function () { const pause = ms => new Promise(r => setTimeout(r, ms));"
            " await pause(1500); " + steps + " })();")


def main() -> int:
    build = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
    cli, firmware, plugin = build / "mcuprof", build / "firmware-ref", build / "firmware-ref" / "libtruth.so"
    IMAGES.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mcuprof-guide-"))
    try:
        # Scenario 1's on-chip dump: a flat profile, its icicle and the table.
        loops = firmware / "loops_jit_m4.elf"
        qemu_runner.run_to_exit(loops, uart_path=work / "dump.txt", truth_path=work / "counts.txt",
                                plugin=plugin, timeout=300)
        mcuprof(cli, "report", str(work / "dump.txt"), "--elf", str(loops), "--format", "html",
                "-o", str(work / "report.html"))
        screenshot(work / "report.html", IMAGES / "report.png", 660, ["#metadata", "#icicle", "#profile"])

        # The call-tree scenario, recorded live with stacks: flame graph, zoom, search, merge,
        # the timeline; pprof's own graph of the same recording.
        calltree = firmware / "calltree_forever_m4.elf"
        rec = work / "calltree.bin"
        with qemu_runner.QemuRun(calltree, gdb=True, halted=True, uart=None, timeout=600) as q:
            mcuprof(cli, "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--stacks", "--samples", "4000",
                    "--interval", "500us", "--elf", str(calltree), "-o", str(rec))
        page = work / "flamegraph.html"
        mcuprof(cli, "report", str(rec), "--elf", str(calltree), "--format", "html", "-o", str(page))
        screenshot(page, IMAGES / "flamegraph.png", 1000, ["#metadata", "#flamegraph"])
        click = ("const box = [...document.querySelectorAll('div.flame g.frame')]"
                 ".filter(g => g.getAttribute('name') === 'deep1')"
                 ".sort((a, b) => d3.select(b).datum().value - d3.select(a).datum().value)[0];"
                 "box.dispatchEvent(new MouseEvent('click', {bubbles: true})); await pause(1500);")
        screenshot(page, IMAGES / "flamegraph-zoom.png", 560, ["#flamegraph"], act(click))
        search = ("const s = document.getElementById('flame-search'); s.value = 'shared';"
                  "s.dispatchEvent(new Event('input')); await pause(1500);")
        screenshot(page, IMAGES / "flamegraph-search.png", 560, ["#flamegraph"], act(search))
        merge = ("const m = document.getElementById('flame-merge'); m.value = 'shared';"
                 "m.dispatchEvent(new Event('change')); await pause(1500);")
        screenshot(page, IMAGES / "flamegraph-merge.png", 330, ["#flamegraph"], act(merge))
        screenshot(page, IMAGES / "timeline.png", 420, ["#timeline"], width=1320)
        mcuprof(cli, "report", str(rec), "--elf", str(calltree), "--format", "pprof", "-o", str(work / "fw.pb.gz"))
        env = dict(os.environ, HOME=str(work), PPROF_TMPDIR=str(work))
        subprocess.run(["go", "tool", "pprof", "-png", "-nodecount=12", "-output", str(IMAGES / "pprof.png"),
                        str(work / "fw.pb.gz")], check=True, capture_output=True, env=env, timeout=300)
        print(f"docs/images/pprof.png: {(IMAGES / 'pprof.png').stat().st_size // 1024} KiB")

        # Scenario 3: the truth against the on-chip dump, with the interrupt-shadow hint.
        irqoff = firmware / "irqoff_m4.elf"
        qemu_runner.run_to_exit(irqoff, uart_path=work / "irq-dump.txt", truth_path=work / "irq-counts.txt",
                                plugin=plugin, timeout=300)
        mcuprof(cli, "diff", str(work / "irq-counts.txt"), str(work / "irq-dump.txt"), "--elf", str(irqoff),
                "--format", "html", "-o", str(work / "diff.html"))
        screenshot(work / "diff.html", IMAGES / "diff.png", 700, ["p.hint", "#diff"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
