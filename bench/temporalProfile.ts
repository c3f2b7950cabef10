import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Where the Temporal dev server spends its CPU, for `npm run bench -- --profile`: `perf record`
 * samples its call stacks while the bench runs (Go keeps frame pointers), and the samples are named
 * from the binary's own function table (.gopclntab), which a release build keeps when it strips its
 * ELF symbols. Without `perf` (Debian's linux-perf) there is no such profile, and the bench says so.
 */
export interface GoProfile {
  /** Stops sampling and writes `temporal.txt` beside the samples (the functions by share of samples, inclusive and self); returns its path, or why there is none. */
  stop(): Promise<string>;
}

export function profileGoProcess(pid: number, binary: string, dir: string): GoProfile | string {
  if (spawnSync('perf', ['--version']).status !== 0) return 'perf is not installed: no profile of the Temporal server';
  mkdirSync(dir, { recursive: true });
  const data = path.join(dir, 'perf.data');
  const perf: ChildProcess = spawn('perf', ['record', '-F', '199', '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
  return {
    async stop() {
      if (perf.exitCode === null) {
        const exited = new Promise((resolve) => perf.once('exit', resolve));
        perf.kill('SIGINT');
        await exited;
      }
      const samples = stacks(data);
      if (!samples.length) return `perf recorded no samples of the Temporal server (exit ${perf.exitCode}; kernel.perf_event_paranoid may forbid it)`;
      const out = path.join(dir, 'temporal.txt');
      writeFileSync(out, report(samples, functionTable(binary)));
      return out;
    },
  };
}

/** Each sample's call stack, innermost first, as file offsets in the binary (how `perf script` prints a static executable's addresses). */
function stacks(data: string): number[][] {
  const { stdout } = spawnSync('perf', ['script', '-i', data, '-F', 'ip'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  return stdout
    .split('\n\n')
    .map((sample) => sample.split('\n').map((line) => parseInt(line.trim().split(' ')[0], 16)).filter((ip) => !Number.isNaN(ip)))
    .filter((ips) => ips.length > 0);
}

interface FunctionTable {
  starts: number[];
  names: string[];
}

/** The functions of a Go (1.20 or later) ELF binary, by the file offset where each begins. */
function functionTable(binary: string): FunctionTable {
  const elf = readFileSync(binary);
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const [shentsize, shnum, shstrndx] = [elf.readUInt16LE(0x3a), elf.readUInt16LE(0x3c), elf.readUInt16LE(0x3e)];
  const section = (i: number) => ({ name: elf.readUInt32LE(shoff + i * shentsize), offset: Number(elf.readBigUInt64LE(shoff + i * shentsize + 24)), size: Number(elf.readBigUInt64LE(shoff + i * shentsize + 32)) });
  const strtab = section(shstrndx).offset;
  const byName = new Map(Array.from({ length: shnum }, (_, i) => section(i)).map((s) => [elf.toString('latin1', strtab + s.name, elf.indexOf(0, strtab + s.name)), s]));
  const text = byName.get('.text');
  const pcln = byName.get('.gopclntab');
  if (!text || !pcln) throw new Error(`${binary} has no .text or .gopclntab section`);
  const tab = elf.subarray(pcln.offset, pcln.offset + pcln.size);
  if (tab.readUInt32LE(0) !== 0xfffffff1) throw new Error(`${binary}: not a Go 1.20+ function table`);
  // The header: magic, 4 bytes, then nfunc, nfiles, textStart, and the offsets of the name, cu, file, pc and function tables.
  const field = (i: number) => Number(tab.readBigUInt64LE(8 + i * 8));
  const [nfunc, funcnames, functab] = [field(0), field(3), field(7)];
  const starts: number[] = [];
  const names: string[] = [];
  for (let i = 0; i < nfunc; i++) {
    const entry = tab.readUInt32LE(functab + i * 8);
    const nameAt = funcnames + tab.readInt32LE(functab + tab.readUInt32LE(functab + i * 8 + 4) + 4);
    starts.push(text.offset + entry);
    names.push(tab.toString('utf8', nameAt, tab.indexOf(0, nameAt)));
  }
  return { starts, names };
}

function nameOf(t: FunctionTable, ip: number): string {
  if (ip > t.starts[t.starts.length - 1] + (1 << 20)) return '[kernel]';
  let [lo, hi] = [0, t.starts.length - 1];
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (t.starts[mid] <= ip) lo = mid;
    else hi = mid - 1;
  }
  return t.starts[lo] <= ip ? t.names[lo] : '[unknown]';
}

function report(samples: number[][], t: FunctionTable): string {
  const inclusive = new Map<string, number>();
  const self = new Map<string, number>();
  for (const ips of samples) {
    const names = ips.map((ip) => nameOf(t, ip));
    self.set(names[0], (self.get(names[0]) ?? 0) + 1);
    for (const name of new Set(names)) inclusive.set(name, (inclusive.get(name) ?? 0) + 1);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, count]) => `${((100 * count) / samples.length).toFixed(1).padStart(5)} %  ${name}`)
      .join('\n');
  return `Temporal dev server: ${samples.length} samples (perf record -F 199 -g), share of samples\n\ninclusive (the function or anything it called)\n${top(inclusive, 250)}\n\nself\n${top(self, 60)}\n`;
}
