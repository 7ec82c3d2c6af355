/**
 * The ledger knows it cannot write before a write fails (issue 18, item 7): below
 * `minFreeBytes` of free space it is unhealthy, and says why, from the moment it opens; it asks
 * the file system on a timer, after a failed write, and as soon as what it wrote could have used
 * up the margin; it recovers when there is room again. The free space is injected (a `statfs`
 * that answers what the test says), and once read from the real file system.
 */
import { statfsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { nodeFreeSpace } from './free-space-watch.js';
import { failingWritesIo, openLedger, sampleEvent, tempDir } from './test-support/ledger-fixture.js';

const MiB = 1024 * 1024;

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

function dir(): string {
  const made = tempDir();
  cleanups.push(made.cleanup);
  return made.dir;
}

/** A `statfs` that answers `disk.free` (or throws `disk.error`), counting the questions. */
function fakeDisk(free: number) {
  const disk = { free, error: undefined as Error | undefined, asked: 0 };
  const freeSpace = async (_path: string): Promise<number> => {
    disk.asked++;
    if (disk.error) throw disk.error;
    return disk.free;
  };
  return { disk, freeSpace };
}

describe('AuditLedger: free space', () => {
  it('is unhealthy from the moment it opens on a file system below minFreeBytes, and healthy once there is room', async () => {
    const { disk, freeSpace } = fakeDisk(10 * MiB);
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const ledger = await openLedger(dir(), {
      freeSpace,
      minFreeBytes: 64 * MiB,
      spaceCheckIntervalMs: 5,
      logger,
      metrics,
    });
    expect(ledger.healthy).toBe(false);
    expect(ledger.unavailable).toEqual({
      reason: 'low-space',
      detail: `${10 * MiB} bytes free on its file system, below audit.minFreeBytes (${64 * MiB})`,
    });
    // It still writes what it is given: the margin is for the records of calls already admitted.
    expect(await ledger.append(sampleEvent(1), { durable: true })).toMatchObject({ seq: 1 });
    // Found low once, however many times it is asked.
    const asked = disk.asked;
    await vi.waitFor(() => expect(disk.asked).toBeGreaterThan(asked + 2));
    expect(ledger.healthy).toBe(false);
    expect(metrics.get('audit_low_space_total')).toBe(1);
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.fields)).toEqual([
      expect.objectContaining({ free: 10 * MiB, minFreeBytes: 64 * MiB }),
    ]);
    disk.free = 65 * MiB;
    await vi.waitFor(() => expect(ledger.healthy).toBe(true));
    expect(ledger.unavailable).toBeUndefined();
    expect(logger.entries.some((e) => /above audit.minFreeBytes again/.test(e.message))).toBe(true);
    // And below again: counted again.
    disk.free = MiB;
    await vi.waitFor(() => expect(ledger.healthy).toBe(false));
    expect(metrics.get('audit_low_space_total')).toBe(2);
    await ledger.close();
    // Closed: no more questions.
    const final = disk.asked;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(disk.asked).toBe(final);
  });

  it('asks at once when what it wrote could have used up the margin, not on every write', async () => {
    // One question at open, then none from the timer (an hour): only writes can make it ask.
    const { disk, freeSpace } = fakeDisk(MiB + 10_000);
    const ledger = await openLedger(dir(), { freeSpace, minFreeBytes: MiB, spaceCheckIntervalMs: 3_600_000 });
    expect(disk.asked).toBe(1);
    expect(ledger.healthy).toBe(true);
    // A small record leaves the estimate above the threshold: no question.
    await ledger.append(sampleEvent(1));
    expect(disk.asked).toBe(1);
    // Another process fills the disk meanwhile; the next records take the estimate past the margin.
    disk.free = MiB - 1;
    // (A record keeps its arguments, and only the hash of its output.)
    for (let i = 2; i <= 12; i++) await ledger.append(sampleEvent(i, { args: { text: 'x'.repeat(1000) } }));
    await vi.waitFor(() => expect(ledger.unavailable?.reason).toBe('low-space'));
    expect(disk.asked).toBe(2);
    await ledger.close();
  });

  it('asks after a failed write, so a full disk keeps it unhealthy until there is room', async () => {
    const { disk, freeSpace } = fakeDisk(100 * MiB);
    const { io, state } = failingWritesIo();
    const ledger = await openLedger(dir(), {
      io,
      freeSpace,
      minFreeBytes: MiB,
      spaceCheckIntervalMs: 3_600_000,
      probeIntervalMs: 5,
    });
    await ledger.append(sampleEvent(1));
    // The disk fills: the write fails first, and the answer to the question it prompts says why.
    state.failing = true;
    disk.free = 0;
    await expect(ledger.append(sampleEvent(2), { durable: true })).rejects.toMatchObject({
      message: expect.stringContaining('ENOSPC'),
    });
    expect(ledger.unavailable).toMatchObject({
      reason: 'write-failed',
      detail: expect.stringContaining('ENOSPC'),
    });
    await vi.waitFor(() => expect(disk.asked).toBe(2));
    // Writes work again (a probe notices) but the space is not back: still unhealthy, for that.
    state.failing = false;
    await vi.waitFor(() => expect(ledger.unavailable?.reason).toBe('low-space'));
    await ledger.close();
  });

  it('keeps what it knew when statfs itself fails, and logs that once', async () => {
    const { disk, freeSpace } = fakeDisk(100 * MiB);
    const logger = new MemoryLogger();
    const ledger = await openLedger(dir(), { freeSpace, minFreeBytes: MiB, spaceCheckIntervalMs: 5, logger });
    disk.error = new Error('EIO: i/o error, statfs');
    const asked = disk.asked;
    await vi.waitFor(() => expect(disk.asked).toBeGreaterThan(asked + 3));
    expect(ledger.healthy).toBe(true);
    const warnings = logger.entries.filter((e) => /cannot read the free space/.test(e.message));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ err: 'EIO: i/o error, statfs' });
    await ledger.close();
  });

  it('does not watch with minFreeBytes 0', async () => {
    const { disk, freeSpace } = fakeDisk(0);
    const ledger = await openLedger(dir(), { freeSpace, minFreeBytes: 0, spaceCheckIntervalMs: 5 });
    await ledger.append(sampleEvent(1));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(disk.asked).toBe(0);
    expect(ledger.healthy).toBe(true);
    await ledger.close();
  });

  it('reads the free space of the real file system by default (statfs: the blocks available)', async () => {
    const d = dir();
    const stats = statfsSync(d);
    const free = await nodeFreeSpace(d);
    expect(free).toBeGreaterThan(0);
    expect(free).toBeLessThanOrEqual(stats.blocks * stats.bsize);
    // The default threshold is above what a fresh temp directory's disk is unlikely to have; a
    // threshold above the real free space makes a real ledger unhealthy.
    const ledger = await openLedger(d, { minFreeBytes: free * 2 + MiB });
    expect(ledger.unavailable?.reason).toBe('low-space');
    await ledger.close();
  });
});
