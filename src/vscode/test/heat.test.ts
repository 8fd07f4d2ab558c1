// Unit tests of the extension's own logic (src/heat.ts, src/view.ts): no VS Code here.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { chipAndProbe, recordedElf, diffHeat, hoverText, label, lineHeat, linesForFile, runHeader, sourceArgs, splitLocation,
         stacksArgs } from '../src/heat';
import type { RunHeader } from '../src/run_header';
import { functionRows } from '../src/view';

const byLine = {
  samples: 1000,
  functions: [
    { name: '/build/a/firmware-ref/src/scen.c:37', function: 'work', samples: 447, percent: 44.7, stderr: 1.57, ci95: [41.6, 47.8] as [number, number], inclusive_percent: 44.7 },
    { name: '/build/a/firmware-ref/src/other.c:5', function: 'main', samples: 10, percent: 1, stderr: 0.31 },
    { name: 'smash (no line information)', function: 'smash', samples: 80, percent: 8, stderr: 0.86 },
  ],
};
const byAddress = {
  samples: 1000,
  functions: [
    { name: '0x0800039a', function: 'shared+0x6', inlined_into: ['shared'], location: '/build/a/firmware-ref/src/scen.c:37', samples: 100, percent: 10, stderr: 1 },
    { name: '0x0800039c', function: 'shared+0x8', inlined_into: ['shared'], location: '/build/a/firmware-ref/src/scen.c:37', samples: 100, percent: 10, stderr: 1 },
    { name: '0x080003b0', function: 'recurse+0x4', inlined_into: ['recurse'], location: '/build/a/firmware-ref/src/scen.c:37', samples: 10, percent: 1, stderr: 0.3 },
  ],
};

test('locations', () => {
  assert.deepEqual(splitLocation('/x/y.c:12'), ['/x/y.c', 12]);
  assert.equal(splitLocation('smash (no line information)'), null);
});

test('line heat with inline chains, each once', () => {
  const heat = lineHeat(byLine, byAddress);
  assert.equal(heat.size, 2);
  const h = heat.get('/build/a/firmware-ref/src/scen.c:37')!;
  assert.deepEqual(h.chains, [['work', 'shared'], ['work', 'recurse']]);
  assert.equal(label(h), '44.70 ±1.57 %');
  const hover = hoverText(h, 1000);
  assert.match(hover, /44\.70 % ± 1\.57/);
  assert.match(hover, /inclusive \(from the stacks\) 44\.70 %/);
  assert.match(hover, /inlined: `work` → `shared`/);
});

test('a census has no error to show', () => {
  const h = lineHeat({ samples: 5, functions: [{ name: 'a.c:1', samples: 5, percent: 100, stderr: 0 }] }).get('a.c:1')!;
  assert.equal(label(h), '100.00 %');
});

test('files matched by the longest common tail of their paths', () => {
  const heat = lineHeat(byLine, byAddress);
  assert.equal(linesForFile(heat, '/home/me/checkout/firmware-ref/src/scen.c')[0].line, 37);
  assert.equal(linesForFile(heat, '/home/me/other.c')[0].line, 5);
  assert.deepEqual(linesForFile(heat, '/home/me/none.h'), []);
});

test('diff z-scores', () => {
  const d = diffHeat({
    format: 'mcuprof-diff', a: { origin: 'a', samples: 100 }, b: { origin: 'b', samples: 100 }, threshold: 3,
    rows: [
      { name: 'x.c:3', a_samples: 10, b_samples: 40, a_percent: 10, b_percent: 40, delta_pp: 30, z: 4.9, flagged: true },
      { name: 'x.c:4', a_samples: 0, b_samples: 5, a_percent: 0, b_percent: 5, delta_pp: 5, z: null, flagged: true },
      { name: 'x.c:5', a_samples: 9, b_samples: 8, a_percent: 9, b_percent: 8, delta_pp: -1, z: -0.25, flagged: false },
    ],
  });
  assert.equal(label(d.get('x.c:3')!), 'z +4.90 !');
  assert.equal(label(d.get('x.c:4')!), 'z +inf !');
  assert.equal(label(d.get('x.c:5')!), 'z -0.25');
  assert.match(hoverText(d.get('x.c:3')!, 100), /\+30\.00 pp/);
});

test('record arguments from a launch configuration', () => {
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'qemu', machine: 'netduinoplus2' }),
    ['--qemu', 'netduinoplus2', '--elf', 'fw.elf']);
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'openocd', mcuprof: { openocd: 'localhost:50002' } }),
    ['--openocd', 'localhost:50002', '--mode', 'halt', '--elf', 'fw.elf']);
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', mcuprof: { gdb: 'localhost:3333', args: ['--interval', '2ms'] } }),
    ['--gdb', 'localhost:3333', '--elf', 'fw.elf', '--interval', '2ms']);
  // The ST-Link's own commands: mcuprof.stlink, or Cortex-Debug's ST-LINK GDB server (ST's
  // stlink-server on this machine).
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', mcuprof: { stlink: 'usb:066DFF', mode: 'pcsr' } }),
    ['--stlink', 'usb:066DFF', '--mode', 'pcsr', '--elf', 'fw.elf']);
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'stlink' }),
    ['--stlink', 'localhost', '--mode', 'halt', '--elf', 'fw.elf']);
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'stlink', mcuprof: { stlink: 'lab-pc:7190' } }),
    ['--stlink', 'lab-pc:7190', '--mode', 'halt', '--elf', 'fw.elf']);
  // --stacks only where the recording halts.
  assert.deepEqual(stacksArgs({ servertype: 'stlink' }, true), ['--stacks']);
  assert.deepEqual(stacksArgs({ mcuprof: { stlink: 'localhost', mode: 'pcsr' } }, true), []);
  assert.deepEqual(stacksArgs({ mcuprof: { openocd: 'localhost', mode: 'pcsr,halt' } }, true), []);
  assert.deepEqual(stacksArgs({ servertype: 'qemu' }, false), []);
  assert.throws(() => sourceArgs({ servertype: 'qemu' }), /no executable/);
  assert.throws(() => sourceArgs({ executable: 'fw.elf', servertype: 'jlink' }), /neither/);
});

test('an OpenOCD configuration of Cortex-Debug: mcuprof starts OpenOCD with its chip and probe', () => {
  const elf = ['--elf', 'fw.elf'];
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'openocd',
                                configFiles: ['interface/stlink.cfg', 'target/stm32f4x.cfg'] }),
    ['--chip', 'stm32f4x', '--probe', 'stlink', '--mode', 'halt', ...elf]);
  // A path to OpenOCD's scripts folder, a probe's TCP backend, a mode of our own.
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'openocd', mcuprof: { mode: 'pcsr' },
                                configFiles: ['/usr/share/openocd/scripts/interface/stlink-v2-1.cfg', 'target/nrf52.cfg'],
                                openOCDLaunchCommands: ['hla_stlink_backend tcp 7190'] }),
    ['--chip', 'nrf52', '--probe', 'stlink-server:7190', '--mode', 'pcsr', ...elf]);
  // A board file names no target script: the device's family, the settings' probe.
  assert.deepEqual(sourceArgs({ executable: 'fw.elf', servertype: 'openocd', device: 'STM32L476RG',
                                configFiles: ['board/st_nucleo_l4.cfg'] }, { probe: 'jlink' }),
    ['--chip', 'stm32l4x', '--probe', 'jlink', '--mode', 'halt', ...elf]);
  assert.deepEqual(chipAndProbe({ device: 'ATSAMD21G18A', configFiles: ['interface/cmsis-dap.cfg'] }),
    { chip: 'at91samdXX', probe: 'cmsis-dap' });
  // The configuration's own chip beats the settings'.
  assert.deepEqual(chipAndProbe({ configFiles: ['target/rp2040.cfg'] }, { chip: 'stm32f4x', probe: 'cmsis-dap' }),
    { chip: 'rp2040', probe: 'cmsis-dap' });
  assert.throws(() => sourceArgs({ executable: 'fw.elf', servertype: 'openocd', configFiles: ['target/stm32f4x.cfg'] }),
    /names no probe/);
  assert.throws(() => sourceArgs({ executable: 'fw.elf', servertype: 'openocd', configFiles: ['board/x.cfg'] }),
    /names no chip/);
});

test('the function table escapes names and keeps locations for click-to-source', () => {
  const html = functionRows({ samples: 1, functions: [{ name: 'f<int>', samples: 1, percent: 100, stderr: 0, location: '/s/a.cc:3' }] });
  assert.match(html, /f&lt;int&gt;/);
  assert.match(html, /data-location="\/s\/a\.cc:3"/);
});

/** A recording's first bytes with `header` (docs/formats.md, "Recording"). */
function recordingHead(header: object): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(16 + json.length);
  head.write('mcuprof\x1a', 0, 'latin1');
  head.writeUInt32LE(1, 8);
  head.writeUInt32LE(json.length, 12);
  json.copy(head, 16);
  return head;
}

test('the ELF a recording names', () => {
  // Typed by the schema: a key it does not have, or a value it does not allow, fails the build.
  const header: RunHeader = {
    source: 'qemu', method: 'halt', elf: 'fw.elf', elf_path: '/b/fw.elf',
    elf_identity: { kind: 'sha256', value: 'ab' },
    more_elves: [{ elf: 'app.elf', elf_path: '/b/app.elf', elf_identity: { kind: 'build-id', value: '00' } }],
  };
  const head = recordingHead(header);
  assert.equal(recordedElf(head), '/b/fw.elf');
  assert.equal(runHeader(head)?.more_elves?.[0].elf_path, '/b/app.elf');
  assert.equal(recordedElf(recordingHead({ source: 'gdb', elf: 'fw.elf' })), 'fw.elf');   // before elf_path
  assert.equal(recordedElf(recordingHead({ source: 'gdb' })), null);
  assert.equal(runHeader(recordingHead([1, 2])), null);
  assert.equal(recordedElf(head.subarray(0, 20)), null);
  assert.equal(recordedElf(Buffer.from('prof raw n=3\n')), null);
});
