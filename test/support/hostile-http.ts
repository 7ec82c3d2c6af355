/**
 * What the hostile-input suites share (issue 18): the generated targets of an HTTP request (era,
 * session, Accept, Content-Type), the headers a 2026-07-28 body must carry, one POST, the check of
 * one answer against what its payload was owed, and a report of failures by kind. Used against
 * `switchboard serve` (`hostile-input.test.ts`) and `switchboard tape replay --http`
 * (`tape-replay-hostile.test.ts`); the payloads themselves are `hostile-messages.ts`'.
 */
import fc from 'fast-check';
import { request } from 'undici';
import { answeredIds, idKey, type RenderedPayload } from './hostile-messages.js';
import { ACCEPT_BOTH, messagesOf, type RawResponse } from './sse-client.js';

export const MODERN = '2026-07-28';

/** The statuses a refusal may have; 500 is deliberately absent. */
export const STATUSES = new Set([200, 202, 400, 401, 403, 404, 405, 406, 409, 413, 415, 429, 503]);

/** Hostile Host (or Origin) names: DNS-rebinding shapes and any domain not a loopback one. */
export const hostileHosts: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '127.0.0.1.rebind.evil.example',
    '127.0.0.1.nip.io',
    'localhost.evil.example',
    'evil.example',
    '[::1].evil.example',
    '127.0.0.1@evil.example',
    '0x7f.evil',
    '127.1.evil',
  ),
  fc.domain().filter((d) => !/^(localhost|127\.|\[?::1)/i.test(d)),
);

export type Era = '2025-03-26' | '2025-11-25' | typeof MODERN | 'no-session' | 'unknown-session';

export interface Target {
  readonly endpoint: string;
  readonly era: Era;
  readonly accept: string | undefined;
  readonly contentType: string | undefined;
}

/** Targets on `mcp` endpoints (mostly) and `other` paths. */
export const targetsOn = (mcp: readonly string[], other: readonly string[]): fc.Arbitrary<Target> =>
  fc.record({
    endpoint: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...mcp) },
      { weight: 1, arbitrary: fc.constantFrom(...other) },
    ),
    era: fc.constantFrom<Era>(
      '2025-03-26',
      '2025-11-25',
      '2025-11-25',
      MODERN,
      MODERN,
      'no-session',
      'unknown-session',
    ),
    accept: fc.oneof(
      { weight: 8, arbitrary: fc.constant<string | undefined>(ACCEPT_BOTH) },
      {
        weight: 2,
        arbitrary: fc.constantFrom<string | undefined>(
          undefined,
          'application/json',
          'text/event-stream',
          '*/*',
          'text/html',
          'application/json;q=0, text/event-stream;q=0',
        ),
      },
    ),
    contentType: fc.oneof(
      { weight: 9, arbitrary: fc.constant<string | undefined>('application/json') },
      {
        weight: 1,
        arbitrary: fc.constantFrom<string | undefined>(
          undefined,
          'text/plain',
          'application/json; charset=utf-16',
        ),
      },
    ),
  });

/** Headers that must match a 2026-07-28 body; a name with characters a header cannot hold goes in Base64. */
export function modernHeaders(payload: RenderedPayload): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-protocol-version': MODERN };
  const method = payload.methods[0];
  if (!payload.batch && method !== undefined && /^[\x21-\x7e]+$/.test(method)) headers['mcp-method'] = method;
  if (payload.name !== undefined)
    headers['mcp-name'] = /^[\x21-\x7e]*$/.test(payload.name)
      ? payload.name
      : `=?base64?${Buffer.from(payload.name).toString('base64')}?=`;
  return headers;
}

/**
 * The headers of one generated request to `target`: its Accept and Content-Type, the 2026-07-28
 * headers, a session no gateway has, or the session `sessions` holds under "endpoint era".
 */
export function headersFor(
  target: Target,
  payload: RenderedPayload,
  sessions: ReadonlyMap<string, Record<string, string>>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (target.accept !== undefined) headers.accept = target.accept;
  if (target.contentType !== undefined) headers['content-type'] = target.contentType;
  if (target.era === MODERN) Object.assign(headers, modernHeaders(payload));
  else if (target.era === 'unknown-session') headers['mcp-session-id'] = 'no-such-session-0000';
  else if (target.era !== 'no-session')
    Object.assign(headers, sessions.get(`${target.endpoint} ${target.era}`));
  return headers;
}

/** Adds the 2026-07-28 `_meta` envelope to a single request's text when it has an object `params`. */
export function withModernMeta(text: string): string {
  const meta =
    '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"hostile","version":"1"}}';
  return text.replace(/"params":\{/, `"params":{${meta},`);
}

/** Sends one request; never throws for an HTTP answer (only for a dropped connection or a timeout). */
export async function send(url: string, headers: Record<string, string>, body: string): Promise<RawResponse> {
  const response = await request(url, {
    method: 'POST',
    headers,
    body,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text };
}

/** Checks one answer against what its payload was owed; returns a description of each problem. */
export function problemsWith(payload: RenderedPayload, response: RawResponse): string[] {
  const problems: string[] = [];
  if (!STATUSES.has(response.status)) problems.push(`status ${response.status}`);
  if (response.status === 202) {
    if (response.text.length > 0) problems.push('a 202 with a body');
    if (payload.expected.length > 0)
      problems.push(`202 for ${payload.expected.length} request(s) owed an answer`);
    return problems;
  }
  let messages: Record<string, unknown>[];
  try {
    messages = messagesOf(response);
  } catch (error) {
    return [...problems, `an answer that is not JSON-RPC: ${String(error).slice(0, 300)}`];
  }
  if (response.status !== 200) {
    // One refusal for the whole POST: a JSON-RPC error whose id is the request's, or null.
    const [only, ...rest] = messages;
    if (rest.length > 0 || only === undefined || !('error' in only))
      problems.push('a refusal that is not one error');
    else if (payload.expected.length === 1 && !payload.batch) {
      const key = JSON.stringify(only.id ?? null);
      if (key !== 'null' && key !== idKey(payload.expected[0]!)) problems.push(`refusal with id ${key}`);
    }
    return problems;
  }
  const owed = new Map<string, number>();
  for (const id of payload.expected) owed.set(idKey(id), (owed.get(idKey(id)) ?? 0) + 1);
  const got = new Map<string, number>();
  for (const key of answeredIds(messages)) got.set(key, (got.get(key) ?? 0) + 1);
  for (const [key, n] of owed) {
    const answered = got.get(key) ?? 0;
    // Invalid elements of a batch are answered under null too: null is owed at least, not exactly.
    if (key === 'null' ? answered < n : answered !== n)
      problems.push(`id ${key.slice(0, 60)}: ${answered} answer(s) for ${n} request(s)`);
  }
  // An id the gateway changed (an integer above 2^53 echoed rounded) shows up here, as nobody's.
  for (const [key, n] of got)
    if (key !== 'null' && !owed.has(key))
      problems.push(`${n} answer(s) for id ${key.slice(0, 60)} nobody asked`);
  return problems;
}

/**
 * Failures kept by kind (the problem's text without the ids in it), a few examples each, so that
 * one frequent defect cannot hide the others from the report; `full` once enough were seen.
 */
export class Failures {
  readonly #byKind = new Map<string, string[]>();
  #count = 0;

  add(problem: string, example: string): void {
    this.#count++;
    const kind = problem
      .replace(/-?\d[\d.e+-]*/g, 'N')
      .replace(/id "[^"]*"/g, 'id S')
      .slice(0, 120);
    const examples = this.#byKind.get(kind) ?? [];
    if (examples.length < 2) examples.push(`${problem} <- ${example}`);
    this.#byKind.set(kind, examples);
  }

  get full(): boolean {
    return this.#count >= 200;
  }

  report(): string {
    return [...this.#byKind.values()].flat().join('\n');
  }
}
