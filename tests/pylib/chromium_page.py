"""HTML reports in headless Chromium, as the report and export tests use them: the DOM after
the page's scripts ran, the flame graph used as a person would (by a script added to a copy of
the page), and what Chromium's log says of the console and of blocked requests."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from fwtest import _missing


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    _missing("chromium is not installed (Debian package chromium)")


def load_in_chromium(page: Path, screenshot: Path | None = None) -> tuple[str, str]:
    """The DOM after scripts ran, and Chromium's log (console messages included)."""
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--enable-logging=stderr", "--v=0"]
    with tempfile.TemporaryDirectory() as profile:
        user = [f"--user-data-dir={profile}"]
        dom = subprocess.run(base + user + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                             timeout=120)
        assert dom.returncode == 0, dom.stderr[-2000:]
        if screenshot is not None:
            shot = subprocess.run(base + user + ["--window-size=1280,1500", f"--screenshot={screenshot}",
                                                 page.as_uri()], capture_output=True, text=True, timeout=120)
            assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
    return dom.stdout, dom.stderr


# What a person does with the flame graph, done by a script added to a copy of the page: it
# waits for the chart, clicks the box named ZOOM (the widest), types SEARCH in the search box,
# picks MERGE in the merge list, and writes what the DOM then shows into <pre id="test-results">
# as JSON. Each box is read from the DOM: its name, the value d3 bound to it, its rectangle's
# width and fill. Chromium runs the page with virtual time, so the transitions finish however
# slow the machine is; headless Chromium draws no frames, so animation frames (what d3's
# transitions wait for) are given by timers, which virtual time runs.
ANIMATION_FRAMES_BY_TIMER = """
window.requestAnimationFrame = callback => setTimeout(() => callback(performance.now()), 16);
"""
FLAME_ACTIONS = """
(async function () {
  const pause = ms => new Promise(resolve => setTimeout(resolve, ms));
  const boxes = () => [...document.querySelectorAll('div.flame g.frame')].map(g => {
    const d = d3.select(g).datum();
    const rect = g.querySelector('rect');
    return {id: d.id, name: d.data.name, value: d.value, depth: d.depth,
            width: Number(rect.getAttribute('width')), fill: rect.getAttribute('fill')};
  });
  const results = {};
  try {
    await pause(2000);
    results.chart_width = Number(document.querySelector('div.flame svg').getAttribute('width'));
    results.initial = boxes();
    results.merge_options = [...document.querySelectorAll('#flame-merge option')].map(o => [o.value, o.textContent]);
    const widest = results.initial.filter(b => b.name === ZOOM).sort((a, b) => b.value - a.value)[0];
    results.clicked = widest.id;
    [...document.querySelectorAll('div.flame g.frame')].find(g => d3.select(g).datum().id === widest.id)
      .dispatchEvent(new MouseEvent('click', {bubbles: true}));
    await pause(2000);
    results.zoomed = boxes();
    document.getElementById('flame-reset').click();
    await pause(2000);
    const search = document.getElementById('flame-search');
    search.value = SEARCH;
    search.dispatchEvent(new Event('input', {bubbles: true}));
    await pause(2000);
    results.searched = boxes();
    results.search_details = document.getElementById('flame-details').textContent;
    search.value = '';
    search.dispatchEvent(new Event('input', {bubbles: true}));
    const merge = document.getElementById('flame-merge');
    merge.value = MERGE;
    merge.dispatchEvent(new Event('change', {bubbles: true}));
    await pause(2000);
    results.merged = boxes();
  } catch (e) {
    results.error = String(e.stack || e);
  }
  const out = document.createElement('pre');
  out.id = 'test-results';
  out.textContent = JSON.stringify(results);
  document.body.appendChild(out);
})();
"""


def run_added_script(page: Path, copy_suffix: str, head: str, body: str, window: str,
                     virtual_ms: int) -> tuple[dict, str]:
    """A copy of `page` with `head` and `body` scripts added, in headless Chromium with virtual
    time: the JSON the scripts wrote into <pre id="test-results">, and Chromium's log."""
    copy = page.with_name(page.stem + copy_suffix + ".html")
    text = page.read_text()
    if head:
        text = text.replace("<head>", f"<head>\n<script>{head}</script>", 1)
    copy.write_text(text.replace("</body>", f"<script>{body}</script>\n</body>", 1))
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--enable-logging=stderr", "--v=0", f"--window-size={window}", f"--virtual-time-budget={virtual_ms}"]
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(base + [f"--user-data-dir={profile}", "--dump-dom", copy.as_uri()],
                             capture_output=True, text=True, timeout=300)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="test-results">(.*?)</pre>', dom.stdout, re.S)
    assert found, "the added script wrote no results: " + dom.stderr[-2000:]
    return json.loads(html.unescape(found.group(1))), dom.stderr


def flame_graph_actions(page: Path, zoom: str, search: str, merge: str) -> tuple[dict, str]:
    """FLAME_ACTIONS run on a copy of `page` in headless Chromium: the results, and Chromium's log."""
    script = (FLAME_ACTIONS.replace("ZOOM", json.dumps(zoom)).replace("SEARCH", json.dumps(search))
              .replace("MERGE", json.dumps(merge)))
    return run_added_script(page, "-acted", ANIMATION_FRAMES_BY_TIMER, script, "1280,1500", 60000)


# The right edges of every table's cells, in CSS pixels, and the window's width, written into
# <pre id="test-results"> as JSON once the page has been laid out.
TABLE_EXTENTS = """
window.addEventListener('load', () => {
  const tables = [...document.querySelectorAll('table')].map(t => ({
    id: t.id, right: Math.max(0, ...[...t.querySelectorAll('td, th')].map(c => c.getBoundingClientRect().right))}));
  const out = document.createElement('pre');
  out.id = 'test-results';
  out.textContent = JSON.stringify({window: window.innerWidth, tables});
  document.body.appendChild(out);
});
"""


def table_extents(page: Path, width: int) -> dict:
    """TABLE_EXTENTS of a copy of `page` in a headless Chromium window `width` pixels wide."""
    return run_added_script(page, "-measured", "", TABLE_EXTENTS, f"{width},1000", 10000)[0]


def console_messages(log: str) -> list[str]:
    """What the page's scripts wrote to the console or threw: Chromium logs each as CONSOLE."""
    return [line for line in log.splitlines() if ":CONSOLE(" in line or "Uncaught" in line]


def blocked_requests(log: str) -> list[str]:
    return [line for line in log.splitlines() if "violates the following Content Security Policy" in line]
