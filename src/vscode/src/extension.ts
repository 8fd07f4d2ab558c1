// The VS Code side: commands that run mcuprof, the heat on the editors' lines, the profile view.
import * as vscode from 'vscode';
import * as cp from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import {
  DiffReport, LaunchConfig, LineHeat, Report, diffHeat, hoverText, intensity, label, lineHeat,
  linesForFile, recordedElf, sourceArgs, stacksArgs, substitute,
} from './heat';
import { profileHtml } from './view';

interface Profile {
  title: string;
  recording: string;
  samples: number;
  heat: Map<string, LineHeat>;
  byFunction?: Report;
  html?: string;
}

let current: Profile | undefined;
let output: vscode.OutputChannel;
let status: vscode.StatusBarItem;
let panel: vscode.WebviewPanel | undefined;
let live: { process: cp.ChildProcess; timer: NodeJS.Timeout; file: string } | undefined;
const levels = 10;
let decorationTypes: vscode.TextEditorDecorationType[] = [];

function config() {
  return vscode.workspace.getConfiguration('mcuprof');
}

/** mcuprof.chip and mcuprof.probe: the chip and probe where the launch configuration has none. */
function chipSettings() {
  return { chip: config().get<string>('chip', '') || undefined, probe: config().get<string>('probe', '') || undefined };
}

function folder(): string {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
}

/** Runs mcuprof to its end; its standard output, or an error with its standard error. */
function run(args: string[]): Promise<string> {
  const exe = config().get<string>('path', 'mcuprof');
  output.appendLine(`$ ${exe} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    cp.execFile(exe, args, { maxBuffer: 256 << 20, cwd: folder() }, (err, stdout, stderr) => {
      if (stderr) output.append(stderr);
      if (err && !(typeof err.code === 'number' && err.code === 4)) reject(new Error(stderr.trim().split('\n').pop() || err.message));
      else resolve(stdout);
    });
  });
}

async function loadRecording(file: string): Promise<Profile> {
  const [line, address, fn, html] = await Promise.all([
    run(['report', file, '--by', 'line', '--format', 'json']),
    run(['report', file, '--by', 'address', '--format', 'json']),
    run(['report', file, '--format', 'json']),
    run(['report', file, '--format', 'html']),
  ]);
  const byLine = JSON.parse(line) as Report;
  return {
    title: path.basename(file), recording: file, samples: byLine.samples,
    heat: lineHeat(byLine, JSON.parse(address) as Report), byFunction: JSON.parse(fn) as Report, html,
  };
}

function makeDecorationTypes() {
  for (const t of decorationTypes) t.dispose();
  decorationTypes = [];
  for (let i = 0; i < levels; i++) {
    const a = ((i + 1) / levels) * 0.45;
    decorationTypes.push(vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: `rgba(255, 80, 0, ${a.toFixed(3)})`,
      overviewRulerColor: `rgba(255, 80, 0, ${(0.3 + a).toFixed(3)})`,
      overviewRulerLane: vscode.OverviewRulerLane.Right,
      before: { width: '13ch', color: new vscode.ThemeColor('editorLineNumber.foreground'), margin: '0 1ch 0 0' },
    }));
  }
}

function decorate(editor: vscode.TextEditor) {
  const buckets: vscode.DecorationOptions[][] = decorationTypes.map(() => []);
  if (current) {
    const lines = linesForFile(current.heat, editor.document.uri.fsPath);
    const hottest = Math.max(0, ...lines.map(h => h.percent));
    for (const h of lines) {
      if (h.line < 1 || h.line > editor.document.lineCount) continue;
      const level = Math.min(levels - 1, Math.floor(intensity(h, hottest) * (levels - 1)));
      const md = new vscode.MarkdownString(hoverText(h, current.samples));
      buckets[level].push({
        range: new vscode.Range(h.line - 1, 0, h.line - 1, 0),
        hoverMessage: md,
        renderOptions: { before: { contentText: label(h) } },
      });
    }
  }
  decorationTypes.forEach((t, i) => editor.setDecorations(t, buckets[i]));
}

function redraw() {
  for (const e of vscode.window.visibleTextEditors) decorate(e);
  status.text = current ? `$(flame) mcuprof: ${current.title}, ${current.samples} samples` : '$(flame) mcuprof';
  status.show();
  if (panel && current) panel.webview.html = profileHtml(current.title, current.byFunction, current.html);
}

function show(p: Profile) {
  current = p;
  redraw();
}

function recordingsDir(): string {
  const dir = config().get<string>('recordingsDir', '') || path.join(folder(), '.mcuprof');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function launchConfigs(): LaunchConfig[] {
  return vscode.workspace.getConfiguration('launch').get<LaunchConfig[]>('configurations', []);
}

/** The launch.json configuration to record with: `name`, else mcuprof.launchConfiguration, else
 *  the first that names an executable. */
function launchConfig(name?: string): LaunchConfig {
  const want = name ?? config().get<string>('launchConfiguration', '');
  const c = launchConfigs().find(x => (want ? x.name === want : !!x.executable));
  if (!c) throw new Error(want ? `no launch configuration named ${want}` : 'no launch configuration names an executable (the ELF)');
  const f = folder();
  const copy: LaunchConfig = JSON.parse(JSON.stringify(c));
  if (copy.executable) copy.executable = path.resolve(f, substitute(copy.executable, f));
  return copy;
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}

async function record(name?: string) {
  const c = launchConfig(typeof name === 'string' ? name : undefined);
  const file = path.join(recordingsDir(), `${path.basename(c.executable!, '.elf')}-${stamp()}.rec`);
  const args = ['record', ...sourceArgs(c, chipSettings()), '--samples', String(config().get<number>('samples', 5000)), '-o', file];
  args.push(...stacksArgs(c, config().get<boolean>('stacks', true)));
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'mcuprof: recording' }, async () => {
    await run(args);
    show(await loadRecording(file));
  });
  output.appendLine(`recorded ${file}`);
}

/** Record with a launch configuration chosen from those that name an executable. */
async function recordWith() {
  const names = launchConfigs().filter(c => !!c.executable && !!c.name).map(c => c.name!);
  if (names.length === 0) throw new Error('no launch configuration names an executable (the ELF)');
  const name = await vscode.window.showQuickPick(names, { title: 'mcuprof: record with the launch configuration' });
  if (name) await record(name);
}

async function pick(title: string): Promise<string | undefined> {
  const uris = await vscode.window.showOpenDialog({
    title, canSelectMany: false, defaultUri: vscode.Uri.file(recordingsDir()), filters: { 'mcuprof recordings': ['rec'] },
  });
  return uris?.[0]?.fsPath;
}

async function open(file?: string) {
  file = file ?? await pick('Open an mcuprof recording');
  if (file) show(await loadRecording(file));
}

async function diff(a?: string, b?: string) {
  a = a ?? await pick('Diff: recording A (before)');
  if (!a) return;
  b = b ?? await pick('Diff: recording B (after)');
  if (!b) return;
  // Each recording names its images (all of them: a bootloader and its application too), and
  // diff reopens them when given no --elf.
  for (const f of [a, b]) {
    const fd = fs.openSync(f, 'r');
    const head = Buffer.alloc(1 << 16);
    const n = fs.readSync(fd, head, 0, head.length, 0);
    fs.closeSync(fd);
    if (!recordedElf(head.subarray(0, n))) throw new Error(`${f} names no ELF: diff needs one`);
  }
  const text = await run(['diff', a, b, '--by', 'line', '--format', 'json']);
  const d = JSON.parse(text) as DiffReport;
  show({ title: `diff ${path.basename(a)} → ${path.basename(b)}`, recording: b, samples: d.b.samples, heat: diffHeat(d) });
}

async function topStart() {
  if (live) return;
  const c = launchConfig();
  const file = path.join(recordingsDir(), `live-${stamp()}.rec`);
  const args = ['top', ...sourceArgs(c, chipSettings()), '-o', file];
  args.push(...stacksArgs(c, config().get<boolean>('stacks', true)));
  const exe = config().get<string>('path', 'mcuprof');
  output.appendLine(`$ ${exe} ${args.join(' ')}`);
  const proc = cp.spawn(exe, args, { cwd: folder(), stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr?.on('data', d => output.append(String(d)));
  let busy = false;
  const timer = setInterval(async () => {
    if (busy || !fs.existsSync(file) || fs.statSync(file).size === 0) return;
    busy = true;
    try {
      const p = await loadRecording(file);
      p.title = `live ${path.basename(file)}`;
      show(p);
    } catch (e) {
      output.appendLine(String(e));
    } finally {
      busy = false;
    }
  }, 1000 * config().get<number>('refreshSeconds', 1));
  live = { process: proc, timer, file };
  proc.on('exit', () => { if (live?.process === proc) topStop(); });
}

async function topStop() {
  if (!live) return;
  const l = live;
  live = undefined;
  clearInterval(l.timer);
  if (l.process.exitCode === null) {
    l.process.kill('SIGINT');   // top leaves the target running and ends its file
    await new Promise(r => l.process.once('exit', r));
  }
  if (fs.existsSync(l.file)) show(await loadRecording(l.file));
}

function showProfile() {
  if (!panel) {
    panel = vscode.window.createWebviewPanel('mcuprof.profile', 'mcuprof profile', vscode.ViewColumn.Beside, { enableScripts: true });
    panel.onDidDispose(() => { panel = undefined; });
    panel.webview.onDidReceiveMessage(async (m: { open?: string }) => {
      if (!m.open) return;
      const at = /^(.*):(\d+)$/.exec(m.open);
      if (!at) return;
      const doc = await vscode.workspace.openTextDocument(at[1]);
      const line = Number(at[2]) - 1;
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(line, 0, line, 0) });
    });
  }
  panel.webview.html = profileHtml(current?.title ?? 'no profile', current?.byFunction, current?.html);
  panel.reveal();
}

function guarded(f: (...a: any[]) => Promise<void> | void) {
  return async (...a: any[]) => {
    try {
      await f(...a);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      output.appendLine(`error: ${msg}`);
      vscode.window.showErrorMessage(`mcuprof: ${msg}`);
    }
  };
}

export function activate(context: vscode.ExtensionContext) {
  output = vscode.window.createOutputChannel('mcuprof');
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left);
  status.command = 'mcuprof.showProfile';
  makeDecorationTypes();
  const cmd = (name: string, f: (...a: any[]) => Promise<void> | void) =>
    context.subscriptions.push(vscode.commands.registerCommand(name, guarded(f)));
  cmd('mcuprof.record', () => record());
  cmd('mcuprof.recordWith', recordWith);
  cmd('mcuprof.open', open);
  cmd('mcuprof.diff', diff);
  cmd('mcuprof.topStart', topStart);
  cmd('mcuprof.topStop', topStop);
  cmd('mcuprof.showProfile', showProfile);
  cmd('mcuprof.clear', () => { current = undefined; redraw(); });
  context.subscriptions.push(vscode.window.onDidChangeVisibleTextEditors(() => redraw()), output, status);
  redraw();
}

export function deactivate() {
  if (live) { clearInterval(live.timer); live.process.kill('SIGINT'); }
}
