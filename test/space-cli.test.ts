/**
 * `switchboard space tail` and `switchboard space send` against a real `switchboard serve` (no
 * authentication: local participants pick their id; a space token is refused when unknown).
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ECHO_SERVER, jsonLines, runCli } from './support/cli.js';
import { startProcess } from './support/peers.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf, type Wire } from './support/space.js';
import { waitUntil } from './support/sse-client.js';

const SPACE = `space:
  participants:
    alice:
      capabilities: [{ kind: "mcp/*" }, { kind: chat }, { kind: space/history }]
`;

let serve: RunningServe;
let url: string;

beforeAll(async () => {
  serve = await startServe({ configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, SPACE) });
  url = spaceUrlOf(serve.base);
}, 60_000);

afterAll(async () => {
  await serve?.stop();
});

const send = (args: string[], input?: string) =>
  runCli(['space', 'send', '--url', url, ...args], input === undefined ? {} : { input });

/** `space tail` running in the background; its stdout collected from the welcome on. */
async function tail(args: string[]) {
  const started = await startProcess(process.execPath, [CLI, 'space', 'tail', '--url', url, ...args], {
    readyPattern: /system\/welcome/,
    timeoutMs: 20_000,
  });
  // From the welcome's line on, including whatever came in the same chunk (the history may have).
  const { input, index } = started.ready;
  let out = input.slice(input.lastIndexOf('\n', index) + 1);
  (started.child as ChildProcess).stdout!.on('data', (chunk: Buffer | string) => {
    out += chunk.toString();
  });
  // Waits for a pattern in the output, failing with what came (not giving up quietly, for a
  // later assertion to fail without saying why); the time is a safety net, not a measure.
  const waitFor = async (pattern: RegExp) => {
    await waitUntil(() => pattern.test(out), 20_000, `${pattern} in the output of space tail`, 25).catch(
      (error: Error) => {
        throw new Error(`${error.message}; it printed:\n${out}`);
      },
    );
    return out;
  };
  return { started, output: () => out, waitFor };
}

describe('switchboard space send', () => {
  it('sends one envelope and exits 0 once the gateway accepted it', async () => {
    const watcher = await Participant.connect(url, {
      join: { type: 'join', participantId: 'watcher', protocol: 'meup/v0.2' },
    });
    const result = await send([
      '--participant',
      'bob',
      '--kind',
      'chat',
      '--payload',
      '{"text":"hello from the CLI"}',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const chat = await watcher.next((e) => e.kind === 'chat');
    expect(chat).toMatchObject({
      from: 'bob',
      protocol: 'meup/v0.2',
      payload: { text: 'hello from the CLI' },
    });
    await watcher.close();
  });

  it('prints the refusal and exits 1', async () => {
    const result = await send(['--participant', 'bob', '--kind', 'system/welcome']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/system\/error {2}gateway → bob .* reserved_kind: system\/welcome/);
    const spoofed = await send([
      '--participant',
      'bob',
      '--json',
      '{"kind":"chat","from":"alice","payload":{}}',
    ]);
    expect(spoofed.code).toBe(1);
    expect(jsonLines(spoofed.stdout)[0]).toMatchObject({
      kind: 'system/error',
      payload: { error: 'from_mismatch' },
    });
  });

  it('waits for the mcp/response of a request to a server and prints it', async () => {
    const result = await send([
      '--participant',
      'alice',
      '--json',
      '--kind',
      'mcp/request',
      '--to',
      'server-echo',
      '--payload',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"via the CLI"}}}',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const [response] = jsonLines(result.stdout);
    expect(response).toMatchObject({
      kind: 'mcp/response',
      from: 'server-echo',
      payload: { id: 1, result: { content: [{ type: 'text', text: 'via the CLI' }] } },
    });
  });

  it('reads the envelope from stdin', async () => {
    const envelope = { kind: 'mcp/request', to: ['server-echo'], payload: { method: 'tools/list' } };
    const result = await send(['--participant', 'alice', '--json', '-'], JSON.stringify(envelope));
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout)[0]).toMatchObject({
      kind: 'mcp/response',
      payload: { result: { tools: [{ name: 'echo' }] } },
    });
  });

  it('exits 2 on bad usage or no gateway, 1 when the space refuses to let it in', async () => {
    expect((await send(['--kind', 'chat', '--payload', '[1]'])).code).toBe(2);
    expect((await send(['not json'])).code).toBe(2);
    const nobody = await runCli(['space', 'send', '--url', 'ws://127.0.0.1:9/meup', '--kind', 'chat']);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toMatch(/cannot connect/);
    const refused = await send(['--token', 'sbt_unknown', '--kind', 'chat']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refused.*401/);
  });

  it('documents itself with examples', async () => {
    const help = await runCli(['space', 'send', '--help']);
    expect(help.stdout).toMatch(/Examples:/);
    expect(help.stdout).toMatch(/--correlation <ids>/);
  });
});

describe('switchboard space tail', () => {
  it('prints the live space as JSON Lines until interrupted (exit 0)', async () => {
    const t = await tail(['--participant', 'tailer', '--json']);
    expect(
      (await send(['--participant', 'bob', '--kind', 'chat', '--payload', '{"text":"seen by tail"}'])).code,
    ).toBe(0);
    await t.waitFor(/seen by tail/);
    await t.started.stop();
    const lines = jsonLines<Wire>(t.output());
    expect(lines.some((e) => e.kind === 'chat' && (e.payload as Wire).text === 'seen by tail')).toBe(true);
    expect(t.started.child.exitCode).toBe(0);
  });

  it('with --context prints only that subtree, after its recent history', async () => {
    const agent = await Participant.connect(url, {
      join: { type: 'join', participantId: 'agent', protocol: 'meup/v0.2' },
    });
    const start = agent.send({ kind: 'reasoning/start', payload: { message: 'plan' } });
    agent.send({ kind: 'reasoning/thought', context: start.id, payload: { message: 'before tail' } });
    await agent.barrier();
    const t = await tail(['--participant', 'alice', '--context', String(start.id), '--history', '10']);
    await t.waitFor(/before tail/);
    agent.send({ kind: 'chat', payload: { text: 'outside the subtree' } });
    agent.send({
      kind: 'reasoning/thought',
      context: `${String(start.id)}/deeper`,
      payload: { message: 'live thought' },
    });
    await t.waitFor(/live thought/);
    await t.started.stop();
    const text = t.output();
    expect(text).toMatch(/reasoning\/thought {2}agent → \* {2}ctx .* before tail/);
    expect(text).not.toMatch(/outside the subtree/);
    expect(text.indexOf('before tail')).toBeLessThan(text.indexOf('live thought'));
    await agent.close();
  });

  it('refuses a context that is not a path', async () => {
    const result = await runCli(['space', 'tail', '--url', url, '--context', '/bad/']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/not a context path/);
  });
});
