// What the results were measured on: CPU, cores, Node, load, the commit.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { ROOT } from './paths.mjs';

function cpuModel() {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const match = /^model name\s*:\s*(.+)$/m.exec(info);
    if (match) return match[1].trim();
  } catch {}
  return cpus()[0]?.model ?? 'unknown';
}

function git(args) {
  try {
    return execFileSync('git', args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** The 1/5/15-minute load averages, formatted "1.23 / 2.34 / 3.45". */
export function loadString() {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
}

export function machineInfo() {
  const status = git(['status', '--porcelain', '--', 'src']);
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB (${(freemem() / 2 ** 30).toFixed(1)} GiB free at start)`,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    commit: git(['rev-parse', '--short', 'HEAD']) ?? 'unknown',
    srcDirty: status === undefined ? undefined : status.length > 0,
  };
}
