import { isObject } from '../../protocol/jsonrpc/json-object.js';

/**
 * One line per envelope for `switchboard space tail` and `space send` (without `--json`):
 *
 *   12:03:04.512  mcp/proposal  client-3xY… → server-everything  ctx 3xY…/01J…  #01JABC…XYZ  tools/call echo
 *
 * time (UTC, from `ts`), kind, from → to (`*` for everyone), the context, the id (in full, to be
 * named in a reply), what it correlates to (`↩ id,id`), and a short summary of the payload (the
 * method and tool of MCP kinds, the text of chat and reasoning, the error of system/error...). Ids
 * in the context and correlation are cut to 12 characters.
 */

const MAX_SUMMARY = 100;

function short(id: string): string {
  return id.length > 12 ? `${id.slice(0, 11)}…` : id;
}

function clip(text: string, max = MAX_SUMMARY): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function time(ts: unknown): string {
  if (typeof ts !== 'string') return '??:??:??.???';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts.slice(0, 12) : d.toISOString().slice(11, 23);
}

/** What a payload is about, in a few words. */
export function summarizePayload(kind: string, payload: unknown): string {
  if (!isObject(payload)) return '';
  const params = isObject(payload.params) ? payload.params : {};
  const target =
    typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : '';
  switch (kind) {
    case 'mcp/request':
    case 'mcp/proposal':
    case 'mcp/notification':
      return clip(`${String(payload.method ?? '')}${target ? ` ${target}` : ''}`);
    case 'mcp/response':
      if (isObject(payload.error))
        return clip(`error ${String(payload.error.code)}: ${String(payload.error.message)}`);
      return clip(`result ${JSON.stringify(payload.result ?? null)}`);
    case 'system/error':
      return clip(`${String(payload.error)}: ${String(payload.message ?? '')}`);
    case 'system/welcome': {
      const you = isObject(payload.you) ? String(payload.you.id) : '?';
      const others = Array.isArray(payload.participants) ? payload.participants.length : 0;
      return `you are ${you}; ${others} other participant${others === 1 ? '' : 's'}`;
    }
    case 'system/presence':
      return `${String(payload.event)} ${isObject(payload.participant) ? String(payload.participant.id) : '?'}`;
    case 'system/approval':
      return clip(
        `${String(payload.outcome)}${payload.decided_by ? ` by ${String(payload.decided_by)}` : ''} (${String(payload.via)})`,
      );
    case 'system/history':
      return `${Array.isArray(payload.envelopes) ? payload.envelopes.length : 0} envelopes${payload.truncated ? ' (truncated)' : ''}`;
    default:
      if (typeof payload.text === 'string') return clip(payload.text);
      if (typeof payload.message === 'string') return clip(payload.message);
      if (typeof payload.reason === 'string') return clip(payload.reason);
      return clip(JSON.stringify(payload), 60);
  }
}

/** The human line of one envelope as received (any JSON value: a malformed one is shown raw). */
export function formatEnvelopeLine(envelope: unknown): string {
  if (!isObject(envelope)) return clip(JSON.stringify(envelope), 200);
  const kind = String(envelope.kind ?? '?');
  const to = Array.isArray(envelope.to) && envelope.to.length > 0 ? envelope.to.map(String).join(',') : '*';
  const parts = [time(envelope.ts), kind, `${String(envelope.from ?? '?')} → ${to}`];
  if (typeof envelope.context === 'string')
    parts.push(`ctx ${envelope.context.split('/').map(short).join('/')}`);
  // The id in full: it is what a reply names in correlation_id (space send --correlation).
  parts.push(`#${String(envelope.id ?? '?')}`);
  if (Array.isArray(envelope.correlation_id) && envelope.correlation_id.length > 0)
    parts.push(`↩ ${envelope.correlation_id.map((c) => short(String(c))).join(',')}`);
  const summary = summarizePayload(kind, envelope.payload);
  if (summary) parts.push(summary);
  return parts.join('  ');
}
