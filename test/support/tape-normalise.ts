/**
 * What may differ between two tapes of the same conversation (`tape record` through `stdio`, and
 * `tape export` of a `serve` trace), and is therefore normalised before they are compared:
 *
 * - timing (`t`, `recordedAt`): two runs never take the same time;
 * - JSON-RPC ids and progress tokens: each gateway numbers its upstream requests its own way (the
 *   stdio gateway and serve's correlation table both renumber), so ids are replaced by the order
 *   in which each side first used them, and tokens likewise;
 * - envelope ids and contexts: minted per run;
 * - the header's `source` (record vs export) and `client` (on serve the gateway initializes the
 *   upstream itself, so the client's handshake is the gateway's) and the first message's params
 *   (that same `initialize`), and the `notifications/initialized` that follows it;
 * - gateway `_meta` members a transport adds (`io.modelcontextprotocol/*`, `switchboard.dev/*`);
 * - where the server's unprompted notifications (`notifications/tools/list_changed` after the
 *   handshake, tied to no call) fall among the client's messages: that is timing too. They are
 *   compared as a list of their own, in their order, and left out of the numbered conversation.
 *
 * Everything else must be equal: the order, the directions, `re`, every method, every result,
 * the progress, the sampling request and its answer, the server's `initialize` result, the redactions.
 */
import type { Tape } from '../../src/tape/tape-format.js';

export function normaliseTape(tape: Tape): unknown {
  const ids = new Map<string, number>();
  const idOf = (dir: string, id: unknown): string => {
    const key = `${dir}:${JSON.stringify(id)}`;
    if (!ids.has(key)) ids.set(key, ids.size + 1);
    return `#${ids.get(key)}`;
  };
  const tokens = new Map<string, number>();
  const tokenOf = (token: unknown): string => {
    const key = JSON.stringify(token);
    if (!tokens.has(key)) tokens.set(key, tokens.size + 1);
    return `token${tokens.get(key)}`;
  };
  const unprompted = (line: Tape['messages'][number]) =>
    line.dir === 's2c' && line.re === undefined && 'method' in line.message && !('id' in line.message);
  const kept = tape.messages.filter((line) => !unprompted(line));
  const position = new Map(kept.map((line, i) => [line.seq, i + 1]));
  const messages = kept.map((line) => {
    const m = JSON.parse(JSON.stringify(line.message)) as Record<string, unknown>;
    const requestDir = 'method' in m ? line.dir : line.dir === 'c2s' ? 's2c' : 'c2s';
    if ('id' in m) m.id = idOf(requestDir, m.id);
    const params = m.params as Record<string, unknown> | undefined;
    if (params !== undefined) {
      if (m.method === 'initialize') delete m.params;
      if (params.progressToken !== undefined) params.progressToken = tokenOf(params.progressToken);
      if (m.method === 'notifications/cancelled' && params.requestId !== undefined)
        params.requestId = idOf(line.dir, params.requestId);
      const meta = params._meta as Record<string, unknown> | undefined;
      if (meta !== undefined) {
        if (meta.progressToken !== undefined) meta.progressToken = tokenOf(meta.progressToken);
        for (const key of Object.keys(meta))
          if (key.startsWith('io.modelcontextprotocol/') || key.startsWith('switchboard.dev/'))
            delete meta[key];
        if (Object.keys(meta).length === 0) delete params._meta;
      }
    }
    return { seq: position.get(line.seq), dir: line.dir, re: line.re && position.get(line.re), message: m };
  });
  const others = tape.messages.filter(unprompted).map((line) => line.message);
  const { source: _source, recordedAt: _at, client: _client, ...header } = tape.header;
  return { header, messages, unprompted: others };
}
