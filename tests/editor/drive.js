// Drives the VS Code that code-server serves, in the Chromium test_editor.py started, through
// Playwright (over the DevTools port). Usage: node drive.js PLAN.json; prints what it saw, as
// JSON, on its last line of standard output. The plan: {cdp, url, file, lines, shots, function, recordings, board}.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require(path.join(process.env.EDITOR_TEST_MODULES, 'playwright-core'));

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const seen = { steps: [] };
const t0 = Date.now();
function recordings() {
  return fs.readdirSync(plan.recordings).filter(f => f.endsWith('.rec') && !f.startsWith('live-')).sort().map(f => path.join(plan.recordings, f));
}
function step(what) {
  seen.steps.push([what, Date.now() - t0]);
  process.stderr.write(`drive: ${what} at ${Date.now() - t0} ms\n`);
}

// The quick input's text box. Not '.quick-input-widget input': VS Code 1.89 (code-server 4.89, on
// Node 18) has an <input type=checkbox> in every row of the list too.
const INPUT = '.quick-input-widget .quick-input-box input';

async function palette(page, text) {
  await page.keyboard.press('F1');
  const input = page.locator(INPUT);
  await input.waitFor({ state: 'visible' });
  await input.fill(text);
  if (text.startsWith('>')) {
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: text.slice(1) }).first().waitFor({ timeout: 15000 });
  } else {
    await page.waitForTimeout(500);
  }
  await page.keyboard.press('Enter');
}

// The gutter label of line N of the active editor: the ::before content of a decoration on the
// view line whose top is the line number's top.
async function lineLabel(page, n) {
  await palette(page, `:${n}`);
  await page.waitForTimeout(400);
  return page.evaluate((n) => {
    const editor = document.querySelector('.editor-group-container.active .monaco-editor') || document.querySelector('.monaco-editor');
    const number = [...editor.querySelectorAll('.margin-view-overlays .line-numbers')].find(e => e.textContent.trim() === String(n));
    if (!number) return { error: `line ${n} is not shown` };
    const top = number.parentElement.style.top;
    const line = [...editor.querySelectorAll('.view-lines .view-line')].find(e => e.style.top === top);
    if (!line) return { error: `no view line at ${top}` };
    const labels = [];
    for (const span of line.querySelectorAll('span')) {
      const c = getComputedStyle(span, '::before').content;
      if (c && c !== 'none' && c !== 'normal') labels.push(c.replace(/^"|"$/g, ''));
    }
    const overlays = [...editor.querySelectorAll('.view-overlays > div')].find(e => e.style.top === top);
    const background = overlays ? [...overlays.children].map(c => getComputedStyle(c).backgroundColor).filter(b => b !== 'rgba(0, 0, 0, 0)') : [];
    return { labels, text: line.textContent, background };
  }, n);
}

async function hover(page, n) {
  await palette(page, `:${n}`);
  await page.waitForTimeout(300);
  await page.keyboard.press('End');
  // editor.action.showHover: the hover of the cursor's position
  await palette(page, '>Show or Focus Hover');
  const box = page.locator('.monaco-hover:not(.hidden)').first();
  await box.waitFor({ state: 'visible', timeout: 15000 });
  await page.waitForTimeout(300);
  return box.innerText();
}

(async () => {
  const browser = await chromium.connectOverCDP(`http://127.0.0.1:${plan.cdp}`);
  const context = browser.contexts()[0] || await browser.newContext();
  const page = await context.newPage();
  await page.setViewportSize({ width: 1400, height: 860 });
  try {
    await page.goto(plan.url);
    await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
    step('workbench');
    await page.locator('.statusbar-item', { hasText: 'mcuprof' }).first().waitFor({ timeout: 120000 });
    step('extension active');
    await page.waitForTimeout(1000);
    await palette(page, '>mcuprof: Record Now');
    step('record started');
    await page.locator('.statusbar-item', { hasText: /mcuprof: .* samples/ }).first().waitFor({ timeout: 90000 });
    seen.status = await page.locator('.statusbar-item', { hasText: /mcuprof: .* samples/ }).first().innerText();
    step('recorded');
    // from the explorer (Quick Open's file search needs ripgrep, which install.sh leaves out)
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: new RegExp(`^${plan.file}$`) }).first().click();
    await page.locator('.tab.active', { hasText: plan.file }).waitFor({ timeout: 30000 });
    step('file open');
    seen.lines = {};
    for (const n of plan.lines) seen.lines[n] = await lineLabel(page, n);
    step('labels read');
    seen.hover = await hover(page, plan.lines[0]);
    await page.screenshot({ path: path.join(plan.shots, 'ide-heat.png') });
    await page.keyboard.press('Escape');
    step('hover read');
    await palette(page, '>mcuprof: Show Profile View');
    let frame;
    for (let i = 0; i < 300 && !frame; i++) {
      for (const f of page.frames()) {
        if (await f.locator('#mcuprof-functions').count().catch(() => 0)) frame = f;
      }
      if (!frame) await page.waitForTimeout(100);
    }
    if (!frame) throw new Error('the profile view did not show its table');
    step('view shown');
    const rows = () => frame.locator('#mcuprof-functions tbody tr').evaluateAll(trs => trs.map(tr => [...tr.cells].map(c => c.textContent)));
    seen.table = await rows();
    await frame.locator('#mcuprof-functions th', { hasText: 'inclusive' }).click();
    seen.tableByInclusive = await rows();
    seen.flame = await frame.frameLocator('#mcuprof-report').locator('svg').count().catch(e => String(e));
    await page.waitForTimeout(1500);
    await page.screenshot({ path: path.join(plan.shots, 'ide-view.png') });
    await frame.locator('#mcuprof-functions tbody tr', { has: frame.locator('td.name', { hasText: new RegExp(`^${plan.function}$`) }) }).click();
    await page.waitForTimeout(1500);
    seen.afterClick = {
      tab: await page.locator('.editor-group-container .tab.active').first().innerText().catch(() => ''),
      cursor: await page.locator('.statusbar-item', { hasText: /Ln \d+, Col \d+/ }).first().innerText().catch(() => ''),
    };
    step('clicked to source');

    // diff: a second recording, then the two in the dialogs, oldest first
    // the second recording done: the status names its file (the status already named the first
    // one, and the file exists from the recording's start, so neither alone says it has ended; a
    // diff run before its end is overwritten by its heat when it ends)
    // The second one with the launch configuration plan.board names, chosen in the quick pick.
    if (plan.board) {
      await palette(page, '>mcuprof: Record With Launch Configuration');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: plan.board }).first().waitFor({ timeout: 15000 });
      const input = page.locator(INPUT);
      await input.fill(plan.board);
      await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: plan.board }).first().waitFor({ timeout: 15000 });
      await page.keyboard.press('Enter');
    } else {
      await palette(page, '>mcuprof: Record Now');
    }
    for (let i = 0; i < 900 && recordings().length < 2; i++) await page.waitForTimeout(100);
    const [a, b] = recordings();
    await page.locator('.statusbar-item', { hasText: `mcuprof: ${path.basename(b)}, ` }).first().waitFor({ timeout: 90000 });
    step('second recording');
    seen.diffed = [a, b];
    await palette(page, '>mcuprof: Diff Two Recordings');
    for (const [file, title] of [[a, 'recording A'], [b, 'recording B']]) {
      // each dialog (showOpenDialog: VS Code's own file dialog in a quick input) by its title;
      // it puts the default folder in its box once it has read it, over whatever was typed
      // before, so the path is typed after that
      const widget = page.locator('.quick-input-widget');
      await widget.locator('.quick-input-title', { hasText: title }).waitFor({ timeout: 30000 });
      await page.waitForFunction(([sel, dir]) => (document.querySelector(sel) || {}).value?.startsWith(dir),
        [INPUT, plan.recordings], { timeout: 30000 });
      await page.locator(INPUT).fill(file);
      await page.waitForTimeout(500);
      await page.keyboard.press('Enter');
    }
    await page.locator('.statusbar-item', { hasText: /mcuprof: diff/ }).first().waitFor({ timeout: 60000 });
    seen.diffStatus = await page.locator('.statusbar-item', { hasText: /mcuprof: diff/ }).first().innerText();
    await page.locator('.tab', { hasText: plan.file }).first().click();
    // the editor's labels may be drawn after the status bar's text: up to 15 s for a z-score
    // label in the active editor (what each line shows is read and checked below either way)
    await page.waitForFunction(() => [...document.querySelectorAll('.editor-group-container.active .view-lines span')]
      .some(s => /^"z /.test(getComputedStyle(s, '::before').content)), null, { timeout: 15000 }).catch(() => {});
    step('diff labels shown');
    await page.screenshot({ path: path.join(plan.shots, 'ide-diff.png') });
    seen.diffLines = {};
    for (const n of plan.lines) seen.diffLines[n] = await lineLabel(page, n);
    step('diff read');

    // live: top, the heat redrawn while it runs, then stopped
    await palette(page, '>mcuprof: Start Live (top)');
    const counts = [];
    const liveStatus = page.locator('.statusbar-item', { hasText: /mcuprof: live .* samples/ }).first();
    await liveStatus.waitFor({ timeout: 60000 });
    for (let i = 0; i < 100 && new Set(counts).size < 3; i++) {
      const m = /(\d+) samples/.exec(await liveStatus.innerText().catch(() => ''));
      if (m && !counts.includes(Number(m[1]))) counts.push(Number(m[1]));
      await page.waitForTimeout(200);
    }
    seen.liveCounts = counts;
    seen.liveLabel = await lineLabel(page, plan.lines[0]);
    await palette(page, '>mcuprof: Stop Live (top)');
    // stopped, the whole file's report: the status names the file without "live " in front
    // (top ends its file, then four reports of it are read: seconds on a loaded machine), then
    // the editor's labels, which follow the status bar's by a moment
    const stopped = page.locator('.statusbar-item', { hasText: /mcuprof: live-.*samples/ }).first();
    await stopped.waitFor({ timeout: 60000 }).catch(() => {});
    await page.waitForTimeout(2000);
    seen.liveStatus = await page.locator('.statusbar-item', { hasText: /mcuprof: / }).first().innerText();
    seen.liveFinal = await lineLabel(page, plan.lines[0]);
    step('live read');
  } catch (e) {
    seen.error = String(e && e.stack || e);
    await page.screenshot({ path: path.join(plan.shots, 'ide-error.png') }).catch(() => {});
  }
  await browser.close().catch(() => {});
  process.stdout.write(JSON.stringify(seen) + '\n');
})();
