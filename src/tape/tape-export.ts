/**
 * A tape from a trace: the hops between the gateway and one upstream of one session (or of one
 * context), as `tape record` would have written them.
 *
 * Contract: `exportTape` reads the store and nothing else, and either returns a tape or throws a
 * `SwitchboardError` saying why not: the session or context is not in the trace (`notFound`), it
 * spans several upstreams and none was named (the error lists them), or the trace kept some
 * payloads only as their size and digest (`trace.payloads: redacted`, the default, keeps tool,
 * resource and prompt outputs that way; a payload over the size limit too) — `SB_TAPE_INCOMPLETE`
 * listing every such call, unless `allowIncomplete`, when the tape says the same in its header.
 *
 * The server's `initialize` answer: on `switchboard stdio` the client's handshake passes through,
 * so the session holds it. On `serve` the gateway initializes each upstream link itself, in its
 * own session (`gateway`): the export takes that link's last handshake before the session began,
 * and the notifications the server sent on its own after it, and puts them first (timed at the
 * session's start), so the tape replays as the server was when the session talked to it. Secret-shaped values are cut as `tape record` cuts
 * them (`redactor`); a trace kept `redacted` already went through the same rules, and the
 * `[REDACTED]` values it left are listed in the header as `trace-redacted`.
 */
import { REDACTED } from '../audit/redaction.js';
import { GATEWAY_TRACE_SESSION } from '../core/trace-mapping.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import { parseMessage } from '../protocol/jsonrpc/parse.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { TraceRecord, TraceStore } from '../trace/types.js';
import type { Tape, TapeIncomplete, TapeRedaction, TapeSource } from './tape-format.js';
import { buildTape, ContextCalls, upstreamSide } from './tape-recorder.js';
import type { MessageRedactor } from './tape-redaction.js';
import type { TapeEntry } from './tape-writer.js';

/** The revision of the stateless era, whose sessions have no `initialize`. */
const STATELESS_REVISION = '2026-07-28';

/** What `exportTape` exports, and how. */
export interface ExportOptions {
  /** A session key, an `Mcp-Session-Id`, or a context (`<session>/<request-envelope-id>`). */
  readonly target: string;
  /** The upstream whose side is exported; required when the session talked to several. */
  readonly upstream?: string;
  /** Write the tape even when the trace cannot give some messages whole, listing them in its header. */
  readonly allowIncomplete?: boolean;
  /**
   * Cuts secret-shaped values as `tape record` does (undefined: kept). A trace kept `full` holds
   * them as they passed, and a tape is a file people commit, so the command cuts them by default.
   */
  readonly redactor?: MessageRedactor;
  /** Where the header says the tape came from (the trace's path, the gateway's version). */
  readonly source: Omit<TapeSource, 'via' | 'session' | 'context' | 'upstream'>;
}

/** The upstreams a session's records talk to, in the order they first appear. */
export function upstreamsOf(records: readonly TraceRecord[]): string[] {
  const names: string[] = [];
  for (const record of records) {
    for (const participant of [record.envelope.from, ...(record.envelope.to ?? [])]) {
      if (!participant.startsWith('server-')) continue;
      const name = participant.slice('server-'.length);
      if (!names.includes(name)) names.push(name);
    }
  }
  return names;
}

function hopOf(record: TraceRecord): { from: string; to: string } {
  return { from: record.envelope.from, to: record.envelope.to?.[0] ?? '' };
}

/** What is missing from a stored payload, if anything. */
function omission(payload: unknown): string | undefined {
  if (!isObject(payload)) return 'the payload is not a JSON object';
  if (payload._truncated === true)
    return `the message (${String(payload.bytes)} bytes) was kept only as its size and SHA-256 (over the trace's payload size limit)`;
  if (payload._unserializable === true) return 'the message could not be serialised when it was recorded';
  if (isObject(payload.result) && payload.result._omitted === 'output')
    return "the output was kept only as its size and SHA-256 (trace.payloads: redacted; record with 'full', or use tape record)";
  return undefined;
}

/** JSON Pointers of the `[REDACTED]` values a redacted trace left in `value`. */
function redactedPaths(value: unknown, path: string, out: string[]): void {
  if (typeof value === 'string') {
    if (value.includes(REDACTED)) out.push(path);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value))
    redactedPaths(child, `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, out);
}

/**
 * The upstream `name`'s last handshake in the gateway's own session before `before` (epoch ms),
 * followed by the notifications the server sent on its own after it (`list_changed` and the
 * like) until `before`: what the server had said on the link when the session began.
 */
function linkHandshake(store: Pick<TraceStore, 'session'>, name: string, before: number): TraceRecord[] {
  const own = store.session(GATEWAY_TRACE_SESSION).filter((r) => upstreamSide(hopOf(r), name) !== undefined);
  let start = -1;
  for (let i = 0; i < own.length; i += 1) {
    const r = own[i] as TraceRecord;
    if (r.receivedAt > before) break;
    if (upstreamSide(hopOf(r), name) === 'c2s' && r.envelope.payload.method === 'initialize') start = i;
  }
  if (start < 0) return [];
  const request = own[start] as TraceRecord;
  const id = request.envelope.payload.id;
  const out = [request];
  for (const r of own.slice(start + 1)) {
    if (r.receivedAt > before) break;
    const p = r.envelope.payload;
    const side = upstreamSide(hopOf(r), name);
    const answer = side === 's2c' && !('method' in p) && p.id === id;
    const initialized = side === 'c2s' && p.method === 'notifications/initialized';
    const unprompted = side === 's2c' && typeof p.method === 'string' && !('id' in p);
    if (answer || initialized || unprompted) out.push(r);
  }
  return out;
}

/**
 * Exports a tape (see the module's contract). `store` needs `session` and `subtree`; `sessionInfo`
 * when it has it (to resolve an `Mcp-Session-Id`).
 */
export function exportTape(
  store: Pick<TraceStore, 'session' | 'subtree'> & {
    sessionInfo?(key: string): { readonly key: string; readonly protocolVersion?: string } | undefined;
  },
  options: ExportOptions,
): Tape {
  const target = options.target;
  const session = target.includes('/') ? undefined : (store.sessionInfo?.(target)?.key ?? target);
  const records = session !== undefined ? store.session(session) : store.subtree(target);
  if (records.length === 0) {
    throw new SwitchboardError(
      SbErrorCode.UsageError,
      `no session or context ${JSON.stringify(target)} in the trace`,
      {
        details: { notFound: true },
      },
    );
  }
  const upstreams = upstreamsOf(records);
  if (upstreams.length === 0)
    throw new SwitchboardError(
      SbErrorCode.UsageError,
      `${JSON.stringify(target)} holds no message to or from an upstream`,
    );
  let name = options.upstream;
  if (name === undefined) {
    if (upstreams.length > 1)
      throw new SwitchboardError(
        SbErrorCode.UsageError,
        `${JSON.stringify(target)} talked to ${upstreams.length} upstreams (${upstreams.join(', ')}); name one with --upstream`,
        { details: { upstreams } },
      );
    name = upstreams[0] as string;
  } else if (!upstreams.includes(name)) {
    throw new SwitchboardError(
      SbErrorCode.UsageError,
      `${JSON.stringify(target)} did not talk to upstream ${JSON.stringify(name)} (it talked to ${upstreams.join(', ')})`,
      { details: { upstreams } },
    );
  }
  const upstream = name;
  const sideRecords = records.filter((r) => upstreamSide(hopOf(r), upstream) !== undefined);
  const first = sideRecords[0] as TraceRecord;
  const hasHandshake = sideRecords.some((r) => r.envelope.payload.method === 'initialize');
  const handshake = hasHandshake ? [] : linkHandshake(store, upstream, first.receivedAt);

  const entries: TapeEntry[] = [];
  const incomplete: TapeIncomplete[] = [];
  const redactions: TapeRedaction[] = [];
  const contexts = new ContextCalls();
  const methods = new Map<string, string>();
  for (const record of [...handshake, ...sideRecords]) {
    const dir = upstreamSide(hopOf(record), upstream) as 'c2s' | 's2c';
    const seq = entries.length + 1;
    const payload = record.envelope.payload;
    const missing = omission(payload);
    const parsed = missing === undefined || isObject(payload.result) ? parseMessage(payload) : undefined;
    const requestKey = (id: unknown) => `${dir === 'c2s' ? 's2c' : 'c2s'}:${JSON.stringify(id)}`;
    if (parsed === undefined || !parsed.ok) {
      // Nothing of the message is left to write: say where it was.
      incomplete.push({
        seq: Math.max(1, seq - 1),
        reason: `a message after this line is missing: ${missing ?? 'not a JSON-RPC message'}`,
      });
      continue;
    }
    const message: JsonRpcMessage = parsed.message;
    if ('method' in message && 'id' in message)
      methods.set(`${dir}:${JSON.stringify(message.id)}`, message.method);
    if (missing !== undefined) {
      const method = 'id' in message ? methods.get(requestKey(message.id)) : undefined;
      incomplete.push({ seq, ...(method === undefined ? {} : { method }), reason: missing });
    }
    const paths: string[] = [];
    redactedPaths(message, '/message', paths);
    for (const path of paths) redactions.push({ seq, path, rule: 'trace-redacted' });
    const re = contexts.callOf(dir, message, record.envelope.context);
    contexts.note(dir, message, record.envelope.context, seq);
    const at = handshake.includes(record)
      ? first.receivedAt
      : dir === 'c2s'
        ? (record.sentAt ?? record.receivedAt)
        : record.receivedAt;
    entries.push({
      dir,
      message,
      at,
      ...(re === undefined ? {} : { re }),
      envelope: record.envelope.id,
      ...(record.envelope.context === undefined ? {} : { context: record.envelope.context }),
    });
  }
  // A stateless-era (2026-07-28) session has no handshake; any other needs the server's answer.
  const revision = store.sessionInfo?.(first.session)?.protocolVersion;
  const handshaken = hasHandshake || handshake.some((r) => 'result' in r.envelope.payload);
  if (!handshaken && revision !== STATELESS_REVISION)
    incomplete.unshift({
      seq: 1,
      method: 'initialize',
      reason: `the server's initialize answer is not in the trace (pruned, or the link was initialized before the trace began): the header cannot hold it`,
    });
  if (incomplete.length > 0 && options.allowIncomplete !== true) {
    const list = incomplete.map((i) => `  message ${i.seq}${i.method ? ` (${i.method})` : ''}: ${i.reason}`);
    throw new SwitchboardError(
      SbErrorCode.TapeIncomplete,
      `the trace cannot answer for ${incomplete.length} message${incomplete.length === 1 ? '' : 's'} of ${JSON.stringify(target)}:\n${list.join('\n')}\n` +
        'a replay could not give those answers; --allow-incomplete writes the tape anyway, listing them in its header',
      { details: { incomplete } },
    );
  }
  const source: TapeSource = {
    ...options.source,
    via: 'export',
    ...(session !== undefined ? { session } : { session: target.split('/')[0] as string, context: target }),
    upstream,
  };
  return buildTape(
    entries,
    { source, incomplete, redactions, ...(revision === undefined ? {} : { protocolVersion: revision }) },
    options.redactor,
  );
}
