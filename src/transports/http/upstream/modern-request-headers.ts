/**
 * The headers of one POST to a 2026-07-28 upstream. The transport mirrors body fields into headers
 * so intermediaries can route without parsing: `MCP-Protocol-Version` (equal to the envelope's
 * version), `Mcp-Method`, `Mcp-Name` (the tool or prompt name, resource URI, or task id), and the
 * `Mcp-Param-*` of the tool's `x-mcp-header` parameters; values that are not header-safe travel in
 * the Base64 sentinel form.
 *
 * Client `Mcp-Param-*` headers handed on by the gateway's modern endpoint are sent unchanged (the
 * specification asks intermediaries to forward those they do not recognise). When the transport
 * computed the same header from the arguments, the two must agree (after decoding), or the request
 * is refused with -32020 here rather than sent with headers that contradict its body. Only
 * `Mcp-Param-*` names are accepted from there: a client can never set other upstream headers.
 */
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcErrorObject } from '../../../protocol/jsonrpc/types.js';
import {
  decodeHeaderValue,
  encodeHeaderValue,
  isSendableHeaderValue,
} from '../../../protocol/mcp/header-value.js';
import type { ParamHeaderValue } from '../../../protocol/mcp/x-mcp-header.js';
import { POST_ACCEPT } from './request-headers.js';

/** The body field `Mcp-Name` mirrors, per method (2026-07-28 core, plus the tasks extension). */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const PARAM_HEADER = /^mcp-param-[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** Headers this transport owns; configured headers with these names are ignored. */
const OWNED = new Set(['mcp-method', 'mcp-name']);

/** What one request's headers are made of. */
export interface ModernHeaderInput {
  /** The configured headers, lower-cased, without those the protocol owns (`configuredHeaders`). */
  readonly base: Readonly<Record<string, string>>;
  /** The envelope's protocol version. */
  readonly version: string;
  readonly method: string;
  readonly params: JsonObject;
  /** Computed from the tool's `x-mcp-header` parameters (tools/call only). */
  readonly computed?: readonly ParamHeaderValue[];
  /** The raw `switchboard.dev/forwardHeaders` value, when the request had one. */
  readonly forwarded?: unknown;
}

/** The headers, or the error refusing the request. */
export type ModernHeaders =
  | { readonly ok: true; readonly headers: Record<string, string> }
  | { readonly ok: false; readonly error: JsonRpcErrorObject };

function refuse(code: number, message: string): ModernHeaders {
  return { ok: false, error: { code, message } };
}

/** Whether a decoded header text stands for the same parameter value as `computed`. */
function agrees(text: string, computed: ParamHeaderValue): boolean {
  if (computed.type === 'integer') return text.trim() !== '' && Number(text) === Number(computed.text);
  return text === computed.text;
}

/** Builds the headers of one request (see the file comment). */
export function modernRequestHeaders(input: ModernHeaderInput): ModernHeaders {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.base)) {
    if (!OWNED.has(name) && !name.startsWith('mcp-param-')) headers[name] = value;
  }
  const computed = new Map((input.computed ?? []).map((c) => [c.header, c]));
  if (input.forwarded !== undefined) {
    if (!isObject(input.forwarded))
      return refuse(JsonRpcCode.InvalidParams, 'switchboard.dev/forwardHeaders must be an object of headers');
    for (const [rawName, value] of Object.entries(input.forwarded)) {
      const name = rawName.toLowerCase();
      if (!PARAM_HEADER.test(name))
        return refuse(
          JsonRpcCode.InvalidParams,
          `switchboard.dev/forwardHeaders may only carry Mcp-Param-* headers, not ${JSON.stringify(rawName)}`,
        );
      if (typeof value !== 'string' || !isSendableHeaderValue(value))
        return refuse(
          JsonRpcCode.InvalidParams,
          `the forwarded header ${rawName} has a value no header can carry`,
        );
      if (name in headers)
        return refuse(JsonRpcCode.InvalidParams, `the forwarded header ${rawName} is given twice`);
      const mine = computed.get(name);
      if (mine) {
        const text = decodeHeaderValue(value);
        if (text === undefined || !agrees(text, mine))
          return refuse(
            JsonRpcCode.HeaderMismatch,
            `Header mismatch: the client sent ${rawName}: ${value}, but the arguments make it ${mine.value}`,
          );
      }
      headers[name] = value;
    }
  }
  for (const c of computed.values()) headers[c.header] = c.value;
  // Mcp-Method and the version have no encoded form: a value no header can carry is refused.
  if (!isSendableHeaderValue(input.method) || !isSendableHeaderValue(input.version))
    return refuse(
      JsonRpcCode.InvalidRequest,
      'the method or protocol version holds characters no header can carry',
    );
  headers['content-type'] = 'application/json';
  headers.accept = POST_ACCEPT;
  headers['mcp-protocol-version'] = input.version;
  headers['mcp-method'] = input.method;
  const source = NAME_SOURCE[input.method];
  const name = source === undefined ? undefined : input.params[source];
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  return { ok: true, headers };
}
