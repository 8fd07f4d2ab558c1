// The extension's own logic, free of the VS Code API: mcuprof's JSON reports (docs/formats.md)
// turned into heat per source line, labels and hover text. Unit-tested in test/heat.test.ts.

// A recording's header, typed from docs/schema/run-header.schema.json (build.sh generates it).
import type { RunHeader } from './run_header';

export interface Row {
  name: string;
  samples: number;
  percent: number;
  stderr: number;
  ci95?: [number, number];
  inclusive_percent?: number;
  inclusive_samples?: number;
  function?: string;
  location?: string;
  inlined_into?: string[];
  address?: number;
}

export interface Report {
  format?: string;
  by?: string;
  samples: number;
  exact?: boolean;
  functions: Row[];
  stacks?: unknown[];
}

export interface DiffRow {
  name: string;
  a_samples: number;
  b_samples: number;
  a_percent: number;
  b_percent: number;
  delta_pp: number;
  z: number | null;
  flagged: boolean;
}

export interface DiffReport {
  format: string;
  a: { origin: string; samples: number };
  b: { origin: string; samples: number };
  threshold: number;
  rows: DiffRow[];
}

/** One source line's heat: the `--by line` row, and the inline chains seen at its addresses. */
export interface LineHeat {
  file: string;
  line: number;
  samples: number;
  percent: number;
  stderr: number;
  ci95?: [number, number];
  inclusivePercent?: number;
  functionName: string;
  /** Innermost first: the function the line is in, then those it is inlined into. */
  chains: string[][];
  diff?: DiffRow;
}

/** "FILE:LINE" -> [FILE, LINE]; null for rows such as "smash (no line information)". */
export function splitLocation(name: string): [string, number] | null {
  const m = /^(.*):(\d+)$/.exec(name);
  if (!m || m[1] === '') return null;
  return [m[1], Number(m[2])];
}

function key(file: string, line: number): string {
  return `${file}:${line}`;
}

/** Strips an address row's "+0xOFFSET" from its symbol's name. */
function functionOf(name: string): string {
  return name.replace(/\+0x[0-9a-fA-F]+$/, '');
}

/**
 * The heat of every line a `--by line` report names, with the inline chains of the
 * `--by address` report of the same recording (optional) attached to each line.
 */
export function lineHeat(byLine: Report, byAddress?: Report): Map<string, LineHeat> {
  const lines = new Map<string, LineHeat>();
  for (const row of byLine.functions) {
    const loc = splitLocation(row.name);
    if (!loc) continue;
    lines.set(key(loc[0], loc[1]), {
      file: loc[0], line: loc[1], samples: row.samples, percent: row.percent, stderr: row.stderr,
      ci95: row.ci95, inclusivePercent: row.inclusive_percent, functionName: row.function ?? '',
      chains: [],
    });
  }
  for (const row of byAddress?.functions ?? []) {
    if (!row.location || !row.inlined_into || row.inlined_into.length === 0) continue;
    const loc = splitLocation(row.location);
    if (!loc) continue;
    const heat = lines.get(key(loc[0], loc[1]));
    if (!heat) continue;
    // an address row's `function` is the symbol it lies in (the outermost); the line row's is
    // the innermost inlined function, where the chain starts
    const chain = [heat.functionName || functionOf(row.function ?? '?'), ...row.inlined_into];
    if (!heat.chains.some(c => c.join('\u0000') === chain.join('\u0000'))) heat.chains.push(chain);
  }
  return lines;
}

/** The z-scores of `diff --by line --format json`, one per line it names. */
export function diffHeat(diff: DiffReport): Map<string, LineHeat> {
  const lines = new Map<string, LineHeat>();
  for (const row of diff.rows) {
    const loc = splitLocation(row.name);
    if (!loc) continue;
    lines.set(key(loc[0], loc[1]), {
      file: loc[0], line: loc[1], samples: row.b_samples, percent: row.b_percent, stderr: 0,
      functionName: '', chains: [], diff: row,
    });
  }
  return lines;
}

/** The lines of one file, matched by path: the same path, else the longest common tail of
 *  path components (the ELF may have been built in another checkout). */
export function linesForFile(heat: Map<string, LineHeat>, path: string): LineHeat[] {
  const parts = (p: string) => p.split(/[\\/]+/).filter(s => s !== '');
  const want = parts(path);
  let best = 0;
  const byFile = new Map<string, LineHeat[]>();
  for (const h of heat.values()) {
    const list = byFile.get(h.file) ?? [];
    list.push(h);
    byFile.set(h.file, list);
  }
  let chosen: LineHeat[] = [];
  for (const [file, list] of byFile) {
    const have = parts(file);
    let n = 0;
    while (n < have.length && n < want.length && have[have.length - 1 - n] === want[want.length - 1 - n]) n++;
    if (n > best) { best = n; chosen = list; }
  }
  return chosen;
}

export function fmt(x: number, digits = 2): string {
  return x.toFixed(digits);
}

/** The gutter's label: "44.13 ±1.10 %" (a census has no error: "44.13 %"). */
export function label(h: LineHeat): string {
  if (h.diff) return zLabel(h.diff);
  return h.stderr > 0 ? `${fmt(h.percent)} ±${fmt(h.stderr)} %` : `${fmt(h.percent)} %`;
}

export function zLabel(d: DiffRow): string {
  const z = d.z === null ? (d.delta_pp > 0 ? '+inf' : d.delta_pp < 0 ? '-inf' : '0') : (d.z >= 0 ? '+' : '') + d.z.toFixed(2);
  return `z ${z}${d.flagged ? ' !' : ''}`;
}

/** Hover text (Markdown). */
export function hoverText(h: LineHeat, samples: number): string {
  if (h.diff) {
    const d = h.diff;
    return [`**mcuprof diff** ${h.file.split('/').pop()}:${h.line}`, '',
      `A ${fmt(d.a_percent)} % (${d.a_samples} samples), B ${fmt(d.b_percent)} % (${d.b_samples} samples)`, '',
      `${d.delta_pp >= 0 ? '+' : ''}${fmt(d.delta_pp)} pp, ${zLabel(d)}${d.flagged ? ' (beyond the threshold)' : ''}`].join('\n');
  }
  const out = [`**mcuprof** ${fmt(h.percent)} % ± ${fmt(h.stderr)} (standard error) of ${samples} samples: ${h.samples} here`];
  if (h.ci95) out.push('', `95 % interval ${fmt(h.ci95[0])} to ${fmt(h.ci95[1])} %`);
  if (h.inclusivePercent !== undefined) out.push('', `inclusive (from the stacks) ${fmt(h.inclusivePercent)} %`);
  if (h.functionName) out.push('', `in \`${h.functionName}\``);
  for (const c of h.chains) out.push('', `inlined: ${c.map(f => '`' + f + '`').join(' → ')}`);
  return out.join('\n');
}

/** 0..1, the line's heat relative to the hottest line shown. */
export function intensity(h: LineHeat, hottest: number): number {
  if (h.diff) return Math.min(1, Math.abs(h.diff.z ?? 10) / 10);
  return hottest > 0 ? Math.min(1, h.percent / hottest) : 0;
}

/** The arguments of `mcuprof record`/`top` from a launch.json configuration (Cortex-Debug's
 *  fields: executable, servertype, machine, device, configFiles, openOCDLaunchCommands; and an
 *  `mcuprof` object of our own), with the chip and probe of the settings where the
 *  configuration names neither. */
export interface LaunchConfig {
  name?: string;
  type?: string;
  executable?: string;
  servertype?: string;
  machine?: string;
  device?: string;
  configFiles?: string[];
  openOCDLaunchCommands?: string[];
  openOCDPreConfigLaunchCommands?: string[];
  mcuprof?: { qemu?: string; openocd?: string; gdb?: string; stlink?: string; chip?: string; probe?: string; mode?: string;
             args?: string[] };
}

/** The settings mcuprof.chip and mcuprof.probe: used where the configuration names none. */
export interface ChipSettings {
  chip?: string;
  probe?: string;
}

// OpenOCD's interface scripts by the --probe that gives them (docs/boards.md).
const interfaceProbes: [RegExp, string][] = [
  [/^interface\/stlink(-v2|-v2-1|-dap)?\.cfg$/, 'stlink'],
  [/^interface\/cmsis-dap\.cfg$/, 'cmsis-dap'],
  [/^interface\/jlink\.cfg$/, 'jlink'],
];

// Cortex-Debug's `device` (the part number) to OpenOCD's target script, by family prefix.
const deviceChips: [RegExp, string][] = [
  [/^stm32f0/, 'stm32f0x'], [/^stm32f1/, 'stm32f1x'], [/^stm32f2/, 'stm32f2x'], [/^stm32f3/, 'stm32f3x'],
  [/^stm32f4/, 'stm32f4x'], [/^stm32f7/, 'stm32f7x'], [/^stm32g0/, 'stm32g0x'], [/^stm32g4/, 'stm32g4x'],
  [/^stm32h7/, 'stm32h7x'], [/^stm32l0/, 'stm32l0'], [/^stm32l1/, 'stm32l1'], [/^stm32l4/, 'stm32l4x'],
  [/^stm32l5/, 'stm32l5x'], [/^stm32u5/, 'stm32u5x'], [/^stm32wb/, 'stm32wbx'], [/^stm32wl/, 'stm32wlx'],
  [/^nrf51/, 'nrf51'], [/^nrf52/, 'nrf52'], [/^rp2040/, 'rp2040'], [/^(at)?samd2/, 'at91samdXX'],
  [/^(at)?sam(d5|e5)/, 'atsame5x'], [/^(lm3s|lm4f|tm4c)/, 'stellaris'],
];

/** The chip and probe OpenOCD would be started with for a Cortex-Debug OpenOCD configuration:
 *  target/NAME.cfg and interface/NAME.cfg of configFiles (else the device's family), an st-link
 *  TCP backend in its OpenOCD commands as stlink-server:PORT. */
export function chipAndProbe(c: LaunchConfig, settings: ChipSettings = {}): { chip?: string; probe?: string } {
  const files = (c.configFiles ?? []).map(f => f.replace(/^.*?\b(interface|target)\//, '$1/'));
  let chip = c.mcuprof?.chip;
  let probe = c.mcuprof?.probe;
  for (const f of files) {
    const target = /^target\/([A-Za-z0-9_-]+)\.cfg$/.exec(f);
    if (target && !chip) chip = target[1];
    for (const [pattern, name] of interfaceProbes) if (pattern.test(f) && !probe) probe = name;
  }
  const commands = [...(c.openOCDPreConfigLaunchCommands ?? []), ...(c.openOCDLaunchCommands ?? [])];
  for (const command of commands) {
    const tcp = /^\s*(?:hla_stlink_backend|st-link backend)\s+tcp\s+(\d+)\s*$/.exec(command);
    if (tcp && (!probe || probe === 'stlink')) probe = `stlink-server:${tcp[1]}`;
  }
  if (!chip && c.device) {
    const device = c.device.toLowerCase();
    chip = deviceChips.find(([pattern]) => pattern.test(device))?.[1];
  }
  return { chip: chip ?? settings.chip, probe: probe ?? settings.probe };
}

export function sourceArgs(c: LaunchConfig, settings: ChipSettings = {}): string[] {
  const m = c.mcuprof ?? {};
  if (!c.executable) throw new Error(`the launch configuration ${c.name ?? ''} names no executable (the ELF)`);
  const mode = ['--mode', m.mode ?? 'halt'];
  let args: string[];
  if (m.openocd) args = ['--openocd', m.openocd, ...mode];
  else if (m.gdb) args = ['--gdb', m.gdb];
  // The ST-Link's own commands (record --stlink): mcuprof.stlink (an stlink-server HOST[:PORT], or
  // usb[:SERIAL]), or Cortex-Debug's ST-LINK GDB server, which shares the probe through ST's
  // stlink-server on this machine (port 7184): beside that debugger, halts pause, pcsr goes on.
  else if (m.stlink) args = ['--stlink', m.stlink, ...mode];
  else if (c.servertype === 'stlink') args = ['--stlink', 'localhost', ...mode];
  else if (m.qemu || c.servertype === 'qemu') args = ['--qemu', m.qemu ?? c.machine ?? 'netduinoplus2'];
  else if (c.servertype === 'openocd' || m.chip) {
    // mcuprof starts OpenOCD itself with the configuration's chip and probe (record --chip --probe).
    const { chip, probe } = chipAndProbe(c, settings);
    if (!chip || !probe)
      throw new Error(`the launch configuration ${c.name ?? ''} names no ${chip ? 'probe' : 'chip'}: give configFiles ` +
        `["interface/stlink.cfg", "target/stm32f4x.cfg"], or the settings mcuprof.chip and mcuprof.probe (docs/boards.md)`);
    args = ['--chip', chip, '--probe', probe, ...mode];
  } else throw new Error(`the launch configuration ${c.name ?? ''} says neither servertype qemu, openocd or stlink ` +
    `nor mcuprof.qemu, .openocd, .stlink, .chip or .gdb`);
  return [...args, '--elf', c.executable, ...(m.args ?? [])];
}

/** --stacks when the setting asks for it and the recording halts: a PCSR mode (`pcsr`, `pcsr,halt`)
 *  reads the PC without halting, and record refuses --stacks with it. */
export function stacksArgs(c: LaunchConfig, wanted: boolean): string[] {
  const mode = c.mcuprof?.mode ?? 'halt';
  return wanted && !mode.startsWith('pcsr') ? ['--stacks'] : [];
}

/** ${workspaceFolder} and friends in a launch.json value. */
export function substitute(value: string, folder: string): string {
  return value.replace(/\$\{workspaceFolder\}|\$\{workspaceRoot\}/g, folder);
}

/** A recording's run header (docs/formats.md, "Recording": 8 bytes of magic, u32 version,
 *  u32 length, the header's JSON); null for another file. */
export function runHeader(head: Uint8Array): RunHeader | null {
  const magic = 'mcuprof\x1a';
  if (head.length < 16 || String.fromCharCode(...head.subarray(0, 8)) !== magic) return null;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const length = view.getUint32(12, true);
  if (head.length < 16 + length) return null;
  try {
    const header: unknown = JSON.parse(new TextDecoder().decode(head.subarray(16, 16 + length)));
    return typeof header === 'object' && header !== null && !Array.isArray(header) ? header as RunHeader : null;
  } catch {
    return null;
  }
}

/** The ELF a recording names in its header: `elf_path`, else `elf`; null for another file. */
export function recordedElf(head: Uint8Array): string | null {
  const header = runHeader(head);
  return header?.elf_path ?? header?.elf ?? null;
}
