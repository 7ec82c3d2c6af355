import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import {
  ANCHOR_ERRORS_METRIC,
  ANCHOR_PUSHES_METRIC,
  ANCHOR_SKIPPED_METRIC,
  createAnchorSink,
} from './anchor-sink.js';
import { tempDir } from './test-support/ledger-fixture.js';

/** An HTTP anchor whose answers wait until `release` (each request's body is kept, in order). */
class HeldAnchor {
  readonly received: string[] = [];
  readonly #server: Server;
  #held: (() => void)[] = [];
  #hold = true;
  status = 200;

  constructor() {
    this.#server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      req.on('end', () => {
        this.received.push(body.trimEnd());
        // The status when the request arrived, whenever it is answered.
        const status = this.status;
        const answer = () => res.writeHead(status).end();
        if (this.#hold) this.#held.push(answer);
        else answer();
      });
    });
  }

  async url(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/anchor`;
  }

  /** Answers every held request, and the ones to come at once. */
  release(): void {
    this.#hold = false;
    for (const answer of this.#held.splice(0)) answer();
  }

  /** Resolves once `count` requests have arrived. */
  waitFor(count: number): Promise<void> {
    return vi.waitFor(() => expect(this.received.length).toBeGreaterThanOrEqual(count));
  }

  close(): Promise<void> {
    this.release();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups) await cleanup();
  cleanups = [];
});

/** A sink pushing to a {@link HeldAnchor}, with its logger and metrics. */
async function heldSink() {
  const anchor = new HeldAnchor();
  cleanups.push(() => anchor.close());
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const sink = createAnchorSink({ url: await anchor.url() }, logger, metrics);
  if (!sink) throw new Error('no sink');
  return { anchor, logger, metrics, sink };
}

describe('createAnchorSink', () => {
  it('is undefined without a path or a URL', () => {
    expect(createAnchorSink(undefined, new MemoryLogger(), new Metrics())).toBeUndefined();
    expect(createAnchorSink({}, new MemoryLogger(), new Metrics())).toBeUndefined();
  });

  it('appends every line to a file anchor that keeps up, in order', async () => {
    const { dir, cleanup } = tempDir('sb-anchor-');
    cleanups.push(cleanup);
    const path = join(dir, 'anchor.jsonl');
    const metrics = new Metrics();
    const sink = createAnchorSink({ path }, new MemoryLogger(), metrics);
    for (const line of ['{"n":1}', '{"n":2}', '{"n":3}']) {
      sink?.push(line);
      await sink?.flush();
    }
    expect(readFileSync(path, 'utf8')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n');
    expect(metrics.get(ANCHOR_PUSHES_METRIC)).toBe(3);
  });

  it('keeps only the newest line waiting behind a slow anchor, and says so once', async () => {
    const { anchor, logger, metrics, sink } = await heldSink();
    sink.push('{"n":1}');
    await anchor.waitFor(1);
    // The first push is in flight and held: these three wait, each replacing the one before.
    sink.push('{"n":2}');
    sink.push('{"n":3}');
    sink.push('{"n":4}');
    expect(metrics.get(ANCHOR_SKIPPED_METRIC)).toBe(2);
    const warnings = logger.entries.filter((e) => e.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toMatch(/only the newest waiting checkpoint will be copied/);
    anchor.release();
    await sink.flush();
    expect(anchor.received).toEqual(['{"n":1}', '{"n":4}']);
    expect(metrics.get(ANCHOR_PUSHES_METRIC)).toBe(2);
    // Idle again: the next line goes at once, and a new backlog warns again.
    sink.push('{"n":5}');
    await sink.flush();
    expect(anchor.received).toEqual(['{"n":1}', '{"n":4}', '{"n":5}']);
    expect(metrics.get(ANCHOR_SKIPPED_METRIC)).toBe(2);
  });

  it('sends the waiting line after a push that failed', async () => {
    const { anchor, logger, metrics, sink } = await heldSink();
    anchor.status = 500;
    sink.push('{"n":1}');
    await anchor.waitFor(1);
    sink.push('{"n":2}');
    anchor.status = 200;
    anchor.release();
    await sink.flush();
    expect(anchor.received).toEqual(['{"n":1}', '{"n":2}']);
    expect(metrics.get(ANCHOR_ERRORS_METRIC)).toBe(1);
    expect(metrics.get(ANCHOR_PUSHES_METRIC)).toBe(1);
    expect(
      logger.entries.some((e) => e.level === 'error' && /cannot copy a checkpoint/.test(e.message)),
    ).toBe(true);
  });

  it('flush resolves at once when nothing is queued', async () => {
    const { dir, cleanup } = tempDir('sb-anchor-');
    cleanups.push(cleanup);
    const sink = createAnchorSink({ path: join(dir, 'a.jsonl') }, new MemoryLogger(), new Metrics());
    await expect(sink?.flush()).resolves.toBeUndefined();
  });
});
