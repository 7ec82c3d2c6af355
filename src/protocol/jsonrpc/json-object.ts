import type { JsonObject } from './types.js';

/**
 * Whether a parsed JSON value is an object (not null, not an array): the one check every reader of
 * untyped JSON in the gateway uses before it looks at members.
 */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
