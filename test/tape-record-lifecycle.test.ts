/**
 * `switchboard tape record` writes a complete tape however the session ends: the client closes
 * stdin, or the server exits by itself (the gateway then exits with the server's status). SIGTERM
 * is covered in `tape-record-export.test.ts`. Killed with SIGKILL, it leaves `FILE.partial`, whose
 * complete lines replay with `--allow-truncated`. Driven with raw JSON lines, as any client would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { readTape, readTapeFile } from '../src/tape/tape-reader.js';
import { CLI, ECHO_SERVER, jsonLines, runCli, tempDir } from './support/cli.js';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id: number, message: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { message } },
});

/** Starts `tape record` and returns a way to send lines and to wait for the response with `id`. */
function record(output: string, server: readonly string[]) {
  const child: ChildProcess = spawn(
    process.execPath,
    [CLI, 'tape', 'record', '-o', output, '--', ...server],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    send: (message: unknown) => child.stdin?.write(`${JSON.stringify(message)}\n`),
    end: () => child.stdin?.end(),
    answered: async (id: number): Promise<void> => {
      const until = Date.now() + 15_000;
      while (!out.split('\n').some((l) => l.includes(`"id":${id},`) || l.includes(`"id":${id}}`))) {
        if (Date.now() > until) throw new Error(`no answer to ${id}: ${out} ${err}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    exited,
    stderr: () => err,
    kill: () => child.kill('SIGKILL'),
  };
}

describe('tape record ends with a complete tape', () => {
  it('when the client closes stdin', async () => {
    const file = join(tempDir('switchboard-tape-eof-'), 'eof.tape.jsonl');
    const r = record(file, [process.execPath, ECHO_SERVER]);
    r.send(INIT);
    await r.answered(1);
    r.send(INITIALIZED);
    r.send(call(2, 'last words'));
    await r.answered(2);
    r.end();
    expect(await r.exited).toBe(0);
    const tape = readTapeFile(file);
    expect(
      tape.messages.map((m) => ('method' in m.message ? m.message.method : `answer to ${m.re}`)),
    ).toEqual(['initialize', 'answer to 1', 'notifications/initialized', 'tools/call', 'answer to 4']);
    expect(tape.header.server.initialize).toMatchObject({ serverInfo: { name: 'switchboard-echo-fixture' } });
    expect(JSON.stringify(tape.messages[4]?.message)).toContain('last words');
  });

  it('when the server exits by itself, with its status', async () => {
    const dir = tempDir('switchboard-tape-exit-');
    const server = join(dir, 'one-call-server.mjs');
    // Answers initialize and one tools/call, then exits with status 3.
    writeFileSync(
      server,
      `import { createInterface } from 'node:readline';
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'one-call', version: '1' } } }) + '\\n');
  if (m.method === 'tools/call') process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'bye' }] } }) + '\\n', () => process.exit(3));
});
`,
    );
    const file = join(dir, 'exit.tape.jsonl');
    const r = record(file, [process.execPath, server]);
    r.send(INIT);
    await r.answered(1);
    r.send(INITIALIZED);
    r.send(call(2, 'x'));
    await r.answered(2);
    expect(await r.exited).toBe(3);
    const tape = readTapeFile(file);
    expect(tape.messages).toHaveLength(5);
    expect(JSON.stringify(tape.messages[4]?.message)).toContain('bye');
    expect(r.stderr()).toContain('wrote 5 messages');
  });
});

describe('tape record killed with SIGKILL', () => {
  it('leaves FILE.partial: refused naming its last line, replayed up to it with --allow-truncated', async () => {
    const dir = tempDir('switchboard-tape-kill-');
    const file = join(dir, 'killed.tape.jsonl');
    const r = record(file, [process.execPath, ECHO_SERVER]);
    r.send(INIT);
    await r.answered(1);
    r.send(INITIALIZED);
    for (const id of [2, 3, 4]) {
      r.send(call(id, `call ${id}`));
      await r.answered(id);
    }
    // One more in flight: it may or may not be on the tape, but nothing before it may be lost.
    r.send(call(5, 'in flight'));
    r.kill();
    await r.exited;
    expect(existsSync(file)).toBe(false);
    const partial = `${file}.partial`;
    const bytes = readFileSync(partial);

    let refusal: unknown;
    try {
      readTape(bytes, 'killed.tape.jsonl.partial');
    } catch (err) {
      refusal = err;
    }
    const lines = bytes.toString().split('\n').length - 1;
    expect(refusal).toMatchObject({
      code: 'SB_TAPE_INVALID',
      details: { line: lines },
      message: expect.stringContaining('--allow-truncated'),
    });
    const tape = readTape(bytes, 'killed', { allowTruncated: true });
    expect(tape.truncated).toBe(true);
    const answered = tape.messages.filter((m) => m.dir === 's2c' && 'result' in m.message);
    // The initialize answer and the three calls' answers, each with what the server said.
    expect(answered.length).toBeGreaterThanOrEqual(4);
    for (const id of [2, 3, 4]) expect(JSON.stringify(tape.messages)).toContain(`call ${id}`);

    const refused = await runCli(['tape', 'replay', partial, '--speed', '0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`killed.tape.jsonl.partial:${lines}: truncated`);
    expect(refused.stderr).toContain('--allow-truncated');

    // A client that keeps its stdin open until answered, as a real one does.
    const replay = spawn(
      process.execPath,
      [CLI, 'tape', 'replay', partial, '--allow-truncated', '--speed', '0'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    replay.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    replay.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    for (const m of [INIT, INITIALIZED, call(12, 'call 3')]) replay.stdin.write(`${JSON.stringify(m)}\n`);
    await vi.waitFor(() => expect(out).toContain('"id":12'), { timeout: 20_000, interval: 50 });
    replay.stdin.end();
    await new Promise((resolve) => replay.once('close', resolve));
    expect(err).toContain('has no end line (cut short)');
    expect(jsonLines(out).find((a) => a.id === 12)).toMatchObject({
      result: { content: [{ text: expect.stringContaining('call 3') }] },
    });
  });

  it('refuses to record over the partial file a killed recording left', async () => {
    const dir = tempDir('switchboard-tape-kill-');
    const file = join(dir, 'again.tape.jsonl');
    writeFileSync(`${file}.partial`, '{"tape":2');
    const r = await runCli(['tape', 'record', '-o', file, '--', process.execPath, ECHO_SERVER]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('again.tape.jsonl.partial exists');
    expect(readFileSync(`${file}.partial`, 'utf8')).toBe('{"tape":2');
  });
});
