/**
 * The redaction of a tape's messages: the audit redactor's rules (`audit/redaction.ts`: secret
 * member names, secret shapes inside strings), applied to each message, with a list of what was
 * cut so the tape's header can say so.
 *
 * Contract: the message keeps its shape (the same members, arrays the same length); only string
 * values, the values of secret-named members and member names holding a secret shape change. The
 * protocol's own members that merely look secret (`progressToken`, `_meta` keys) are kept, and
 * nesting is not cut (a tape must replay whatever the server sent).
 */
import {
  createRedactor,
  createSecretKeyTest,
  REDACTED,
  type Redactor,
  type RedactorOptions,
} from '../audit/redaction.js';
import { MAX_JSON_DEPTH_LIMIT } from '../protocol/jsonrpc/parse.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';

/** One cut: a JSON Pointer into the message and the kind of rule that cut there. */
export interface MessageCut {
  /** Where, as a JSON Pointer into the message (`/params/arguments/token`). */
  readonly path: string;
  /** `secret-name`: a member whose name looks secret; `secret-shape`: a credential inside a string. */
  readonly rule: 'secret-name' | 'secret-shape';
}

/** Members of MCP messages that look secret by name but are the protocol's. */
const PROTOCOL_KEYS = ['progressToken', 'nextCursor', 'cursor', 'maxTokens', 'sessionId'];

/** Cuts secret-looking values out of a message: the message as cut (the same one when nothing was), and where. */
export type MessageRedactor = (message: JsonRpcMessage) => {
  readonly message: JsonRpcMessage;
  readonly cuts: readonly MessageCut[];
};

/** A redactor of whole messages with the built-in rules plus `options`' (the configuration's). */
export function createMessageRedactor(options: RedactorOptions = {}): MessageRedactor {
  const keepKeys = [...PROTOCOL_KEYS, ...(options.keepKeys ?? [])];
  const full = { ...options, keepKeys, maxDepth: MAX_JSON_DEPTH_LIMIT + 1 };
  const redactor: Redactor = createRedactor(full);
  const isSecretKey = createSecretKeyTest(full);
  return (message) => {
    const redacted = redactor(message) as JsonRpcMessage;
    const cuts: MessageCut[] = [];
    diff(message, redacted, '', cuts, isSecretKey);
    return cuts.length === 0 ? { message, cuts } : { message: redacted, cuts };
  };
}

function pointer(path: string, key: string): string {
  return `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

function diff(
  before: unknown,
  after: unknown,
  path: string,
  cuts: MessageCut[],
  isSecretKey: (key: string) => boolean,
): void {
  if (typeof before === 'string') {
    if (before !== after) cuts.push({ path, rule: 'secret-shape' });
    return;
  }
  if (typeof before !== 'object' || before === null || typeof after !== 'object' || after === null) return;
  if (Array.isArray(before)) {
    const list = after as unknown[];
    // A `[name, value]` pair with a secret name (a header list) loses its value, as a member would.
    const pair =
      before.length === 2 && typeof before[0] === 'string' && isSecretKey(before[0]) && list[1] === REDACTED;
    for (let i = 0; i < before.length; i += 1) {
      const at = pointer(path, String(i));
      if (pair && i === 1 && before[1] !== REDACTED && before[1] !== null && before[1] !== undefined)
        cuts.push({ path: at, rule: 'secret-name' });
      else diff(before[i], list[i], at, cuts, isSecretKey);
    }
    return;
  }
  const keys = Object.keys(before);
  const keysAfter = Object.keys(after);
  for (let i = 0; i < keys.length; i += 1) {
    const key = keys[i] as string;
    const keyAfter = keysAfter[i] as string;
    const at = pointer(path, key);
    if (keyAfter !== key) cuts.push({ path: at, rule: 'secret-shape' });
    const value = (before as Record<string, unknown>)[key];
    const valueAfter = (after as Record<string, unknown>)[keyAfter];
    if (isSecretKey(key) && valueAfter === REDACTED && value !== REDACTED && value !== null) {
      cuts.push({ path: at, rule: 'secret-name' });
      continue;
    }
    diff(value, valueAfter, at, cuts, isSecretKey);
  }
}
