/**
 * Spotting, in what an upstream stream carries, the response to one request: the transport must
 * know whether a POST's stream delivered its answer before it ended (else it resumes), and must
 * read the `initialize` result for the negotiated protocol version. Notifications, which make up
 * most of a stream, are told apart without parsing them.
 */
import type { JsonObject, RequestId } from '../../../protocol/jsonrpc/types.js';

function isResponseTo(value: unknown, id: RequestId): value is JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const object = value as JsonObject;
  return object.id === id && !('method' in object) && ('result' in object || 'error' in object);
}

/**
 * The response to request `id` in `text` (one message or a batch), or undefined. Text that cannot
 * contain a response (no `"result"` nor `"error"` member name anywhere) is rejected without being
 * parsed, so a stream of progress notifications costs a substring search each.
 */
export function findResponse(text: string, id: RequestId): JsonObject | undefined {
  if (!text.includes('"result"') && !text.includes('"error"')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(value)) return value.find((item: unknown) => isResponseTo(item, id));
  return isResponseTo(value, id) ? value : undefined;
}

/** The ids of the responses in `text` (one message or a batch); same cheap rejection as above. */
export function responseIds(text: string): RequestId[] {
  if (!text.includes('"result"') && !text.includes('"error"')) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  const ids: RequestId[] = [];
  for (const item of Array.isArray(value) ? value : [value]) {
    if (typeof item !== 'object' || item === null || 'method' in item) continue;
    const id = (item as JsonObject).id;
    if ((typeof id === 'string' || typeof id === 'number') && ('result' in item || 'error' in item))
      ids.push(id);
  }
  return ids;
}

/** The `protocolVersion` of a successful `initialize` response, if it has one. */
export function negotiatedVersion(response: JsonObject): string | undefined {
  const result = response.result;
  if (typeof result !== 'object' || result === null) return undefined;
  const version = (result as JsonObject).protocolVersion;
  return typeof version === 'string' && version.length > 0 ? version : undefined;
}
