/** A process's memory as the kernel reports it (`/proc/<pid>/status`, Linux). */
import { readFileSync } from 'node:fs';

/** The resident set size of `pid` in bytes (`VmRSS`). */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}
