/**
 * What the trace writes to disk of each message (`trace.payloads`). The audit ledger never keeps an
 * output body and redacts arguments before they reach a file (audit.md, tamper tests 28 and 29);
 * the trace database sits beside it in the same data directory, so by default it keeps no more:
 *
 * - `redacted` (the default): the body of every result answering `tools/call`, `resources/read` or
 *   `prompts/get` — the output the ledger keeps only as `output_sha256` and `output_len` — is
 *   replaced by an {@link OmittedOutput} marker with the same two figures (for the same result the
 *   trace's `sha256` equals the ledger's `output_sha256`); every other payload, and what is left of
 *   those responses, goes through the ledger's redactor (secret member names and secret shapes,
 *   plus the operator's `audit.redact` rules). MCP's `progressToken` stays readable: it correlates
 *   progress and is not a credential.
 * - `full`: payloads as they passed (a private debugging machine only).
 *
 * Either way a payload over the size limit becomes the size-and-digest marker of
 * `stored-payload.ts`. The guard is stateful: it sees a store's hops in order and remembers the
 * contexts of output calls whose answer has not reached their client yet, so that both hops of
 * the answer (upstream to gateway, gateway to client) lose their body. It runs where the rows are
 * built — in the trace worker for the gateway's store — never on the forwarding path.
 */
import { createHash, hash } from 'node:crypto';
import { createRedactor, createSecretKeyTest, type Redactor } from '../audit/redaction.js';
import { MAYBE_SECRET } from '../audit/secret-patterns.js';
import { isClientParticipant } from '../core/trace-mapping.js';
import type { TracePayloadMode } from './payload-mode.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, storedPayloadText } from './stored-payload.js';

export type { TracePayloadMode };

/** Methods whose result is an output body (what the ledger hashes instead of keeping). */
export const OUTPUT_METHODS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'prompts/get']);

/** Member names MCP defines for values that are not secrets although their names look it. */
const PROTOCOL_KEYS = ['progressToken'];

/**
 * Output calls waiting for their answer are remembered up to this many (oldest forgotten first):
 * a bound on the worker's memory when answers never come (cancelled calls, a dead upstream).
 */
const OPEN_CALLS_LIMIT = 65_536;

/** What a trace keeps in place of an output body in `redacted` mode. */
export interface OmittedOutput {
  readonly _omitted: 'output';
  /** UTF-8 length of the result's JSON text (the ledger's `output_len`). */
  readonly bytes: number;
  /** Lower-case hex SHA-256 of that text (the ledger's `output_sha256`). */
  readonly sha256: string;
  /** Present when the result said `isError: true` (a tool's own failure). */
  readonly isError?: true;
}

export interface TracePayloadOptions {
  /** Default `redacted`. */
  readonly mode?: TracePayloadMode;
  /** Default {@link DEFAULT_MAX_PAYLOAD_BYTES}. */
  readonly maxPayloadBytes?: number;
  /** The operator's extra redaction rules (`audit.redact`): member-name stems and value regexes. */
  readonly redact?: { readonly keys?: readonly string[]; readonly patterns?: readonly string[] };
}

/** One hop as the guard needs it. */
export interface GuardedHop {
  /** The message, when its JSON text is not known. */
  readonly payload: unknown;
  /** Exactly `JSON.stringify(payload)`, when known. */
  readonly json: string | undefined;
  readonly kind: string;
  readonly method: string | null;
  readonly context: string | null;
  readonly to: string | readonly string[] | undefined;
  /**
   * For a response the gateway serialised itself (`{jsonrpc, id, result}`): where the result's
   * own JSON text starts in `json` (it ends before the last character). See `result-text.ts`.
   */
  readonly resultAt?: number;
  /** With `resultAt`: the result says `isError: true`. */
  readonly resultIsError?: boolean;
  /**
   * For an upstream's response: the answer the gateway delivered from it, with its result's place.
   * The upstream's text is checked to be that same result before the answer's digest is used.
   */
  readonly sameResultAs?: DeliveredResult;
  /** The message's JSON-RPC id, when `json` is given (for `sameResultAs`). */
  readonly rpcId?: unknown;
}

/** A delivered answer's JSON text and where its result is in it. */
export interface DeliveredResult {
  readonly json: string;
  readonly resultAt: number;
  readonly resultIsError: boolean;
}

/** How an upstream's response with its result first starts. */
const RESULT_FIRST = '{"result":';

/** One JSON string token, and the colon after it when it is a member name. */
const JSON_STRING = /"((?:[^"\\]|\\.)*)"(\s*:)?/g;

export class PayloadGuard {
  readonly mode: TracePayloadMode;
  readonly maxPayloadBytes: number;
  readonly #redactor: Redactor;
  readonly #isSecretKey: (key: string) => boolean;
  /** Operator value patterns can match anything: every payload is redacted when there are some. */
  readonly #alwaysRedact: boolean;
  /** Contexts of output calls seen as requests whose answer has not gone to the client yet. */
  readonly #openCalls = new Set<string>();
  /** The last result digested: both hops of an answer are usually digested one after the other. */
  #digested: { json: string; resultAt: number; bytes: number; sha256: string } | undefined;

  constructor(options: TracePayloadOptions = {}) {
    this.mode = options.mode ?? 'redacted';
    this.maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    const keys = options.redact?.keys ?? [];
    const patterns = options.redact?.patterns ?? [];
    this.#redactor = createRedactor({
      extraKeyPatterns: keys,
      extraValuePatterns: patterns.map((pattern) => new RegExp(pattern, 'g')),
      keepKeys: PROTOCOL_KEYS,
    });
    this.#isSecretKey = createSecretKeyTest({ extraKeyPatterns: keys, keepKeys: PROTOCOL_KEYS });
    this.#alwaysRedact = patterns.length > 0;
  }

  /** The JSON text to store for `hop`'s payload. Never throws. */
  text(hop: GuardedHop): string {
    return this.stored(hop).text;
  }

  /**
   * {@link text}, and whether it differs from the message's own JSON (`changed`: a marker, an
   * omitted output, or a redacted copy, which may on occasion equal the original).
   */
  stored(hop: GuardedHop): { text: string; changed: boolean } {
    if (this.mode === 'full') {
      const { text, replaced } = storedPayloadText(hop.payload, hop.json, this.maxPayloadBytes);
      return { text, changed: replaced };
    }
    const output = this.#isOutput(hop);
    if (output && hop.json !== undefined) {
      const omitted = this.#omittedAtPlace(hop, hop.json);
      if (omitted !== undefined) return { text: omitted, changed: true };
    }
    const stored = storedPayloadText(hop.payload, hop.json, this.maxPayloadBytes);
    // A marker (too large, or not JSON) holds a size and a digest only.
    if (stored.replaced) return { text: stored.text, changed: true };
    if (output) return { text: this.#withoutOutput(stored.text), changed: true };
    if (!this.#mayHoldSecret(stored.text)) return { text: stored.text, changed: false };
    return { text: this.#redactedText(JSON.parse(stored.text)), changed: true };
  }

  /** A value kept beside the payloads (a session's `clientInfo`), redacted unless mode is `full`. */
  value(value: unknown): unknown {
    return this.mode === 'full' ? value : this.#redactor(value);
  }

  /** Whether `hop` answers an output call; remembers output calls and forgets answered ones. */
  #isOutput(hop: GuardedHop): boolean {
    const context = hop.context;
    if (context === null) return false;
    if (hop.kind === 'mcp/request') {
      if (hop.method !== null && OUTPUT_METHODS.has(hop.method)) {
        if (this.#openCalls.size >= OPEN_CALLS_LIMIT) {
          const oldest = this.#openCalls.values().next();
          if (oldest.done !== true) this.#openCalls.delete(oldest.value);
        }
        this.#openCalls.add(context);
      }
      return false;
    }
    if (hop.kind !== 'mcp/response' || !this.#openCalls.has(context)) return false;
    const to = hop.to;
    const toClient =
      typeof to === 'string' ? isClientParticipant(to) : to?.some(isClientParticipant) === true;
    if (toClient) this.#openCalls.delete(context);
    return true;
  }

  /**
   * Whether `text` might hold something the redactor would change. False only when the text has
   * no backslash (an escape could hide a name or a shape from the scans below), no operator value
   * pattern applies, no secret shape's telltale occurs anywhere in it, and no member name in it is
   * secret: then the redactor would return the message unchanged, and its walk is skipped.
   */
  #mayHoldSecret(text: string): boolean {
    if (this.#alwaysRedact || text.includes('\\') || MAYBE_SECRET.test(text)) return true;
    JSON_STRING.lastIndex = 0;
    for (let m = JSON_STRING.exec(text); m !== null; m = JSON_STRING.exec(text)) {
      if (m[2] !== undefined && this.#isSecretKey(m[1] as string)) return true;
    }
    return false;
  }

  #redactedText(message: unknown): string {
    return storedPayloadText(this.#redactor(message), undefined, this.maxPayloadBytes).text;
  }

  /**
   * {@link #withoutOutput} of an answer whose result's place in its text is known, without parsing
   * the text or serialising the result again; the same text, or undefined to take the general path.
   * Known for the gateway's own answer (`resultAt`); for the upstream's response it was built from
   * (`sameResultAs`), only when the upstream's text is `{"jsonrpc":"2.0","id":<its
   * id>,"result":<R>}` or `{"result":<R>,"jsonrpc":"2.0","id":<its id>}` where `<R>` is exactly the
   * delivered result's text (so the text has those three members and no other): any other member,
   * order or spacing takes the general path. Either way the digest is of `JSON.stringify(result)`,
   * as there, and what is left is scanned as there.
   */
  #omittedAtPlace(hop: GuardedHop, json: string): string | undefined {
    // A payload over the limit becomes the size marker on the general path.
    if (json.length * 3 > this.maxPayloadBytes && Buffer.byteLength(json, 'utf8') > this.maxPayloadBytes)
      return undefined;
    let text: string;
    if (hop.resultAt !== undefined) {
      const place = { json, resultAt: hop.resultAt, resultIsError: hop.resultIsError === true };
      text = `${json.slice(0, hop.resultAt)}${this.#omittedJson(place)}}`;
    } else {
      const same = hop.sameResultAs;
      const id = hop.rpcId;
      if (same === undefined || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
      const body = same.json.slice(same.resultAt, -1);
      const idJson = JSON.stringify(id);
      const head = `{"jsonrpc":"2.0","id":${idJson},"result":`;
      // Either order JSON.stringify gives these members: the result last (this gateway, most
      // servers) or first (the official SDKs).
      const tail = `,"jsonrpc":"2.0","id":${idJson}}`;
      let at: number;
      if (json.length === head.length + body.length + 1 && json.startsWith(head) && json.endsWith('}'))
        at = head.length;
      else if (
        json.length === RESULT_FIRST.length + body.length + tail.length &&
        json.startsWith(RESULT_FIRST) &&
        json.endsWith(tail)
      )
        at = RESULT_FIRST.length;
      else return undefined;
      if (json.slice(at, at + body.length) !== body) return undefined;
      // What the general path writes: the members but `result` in their order (`jsonrpc`, `id`),
      // then the marker.
      text = `${head}${this.#omittedJson(same)}}`;
    }
    return this.#mayHoldSecret(text) ? undefined : text;
  }

  /** `JSON.stringify` of the {@link OmittedOutput} of a delivered result. */
  #omittedJson(place: DeliveredResult): string {
    const digest = this.#digest(place);
    return `{"_omitted":"output","bytes":${digest.bytes},"sha256":"${digest.sha256}"${place.resultIsError ? ',"isError":true' : ''}}`;
  }

  #digest(place: DeliveredResult): { bytes: number; sha256: string } {
    const last = this.#digested;
    if (last !== undefined && last.json === place.json && last.resultAt === place.resultAt) return last;
    const body = place.json.slice(place.resultAt, -1);
    const digest = {
      json: place.json,
      resultAt: place.resultAt,
      bytes: Buffer.byteLength(body, 'utf8'),
      sha256: hash('sha256', body, 'hex'),
    };
    this.#digested = digest;
    return digest;
  }

  /** `text` (a response) with its result replaced by an {@link OmittedOutput}, the rest redacted. */
  #withoutOutput(text: string): string {
    const message = JSON.parse(text) as unknown;
    if (typeof message !== 'object' || message === null || !('result' in message)) {
      return this.#redactedText(message);
    }
    const { result, ...rest } = message as { result: unknown } & Record<string, unknown>;
    const body = JSON.stringify(result) ?? 'null';
    const omitted: { -readonly [K in keyof OmittedOutput]: OmittedOutput[K] } = {
      _omitted: 'output',
      bytes: Buffer.byteLength(body, 'utf8'),
      sha256: createHash('sha256').update(body, 'utf8').digest('hex'),
    };
    if (typeof result === 'object' && result !== null && (result as { isError?: unknown }).isError === true) {
      omitted.isError = true;
    }
    const out = { ...rest, result: omitted };
    // What is left is usually `jsonrpc` and `id`: scanned, not walked.
    const written = JSON.stringify(out);
    return this.#mayHoldSecret(written) ? this.#redactedText(out) : written;
  }
}

/** The guard of a store opened with these options (each store's options name them this way). */
export function payloadGuardOf(options: {
  readonly maxPayloadBytes?: number;
  readonly payloads?: TracePayloadMode;
  readonly redact?: TracePayloadOptions['redact'];
}): PayloadGuard {
  return new PayloadGuard({
    ...(options.maxPayloadBytes === undefined ? {} : { maxPayloadBytes: options.maxPayloadBytes }),
    ...(options.payloads === undefined ? {} : { mode: options.payloads }),
    ...(options.redact === undefined ? {} : { redact: options.redact }),
  });
}

/** True when a stored payload's result is the {@link OmittedOutput} marker. */
export function isOmittedOutput(value: unknown): value is OmittedOutput {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<string, unknown>)._omitted === 'output' &&
    typeof (value as Record<string, unknown>).sha256 === 'string'
  );
}
