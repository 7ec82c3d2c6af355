/**
 * Names of tools and prompts behind the aggregated endpoint: `<server>__<name>`.
 *
 * Deterministic and bounded: a name of at most 63 characters is exactly `<server>__<name>`; a
 * longer one is cut to 57 characters and ends with `_` and 6 characters of a hash of the full
 * `(server, name)` pair, making exactly 64. The length tells the two forms apart, so a literal
 * name can never be mistaken for a truncated one; the same pair always gets the same name, and
 * two pairs collide only if their hashes do (1 in 2^30). Server names never contain `__` (the
 * config refuses it), so the literal form splits back unambiguously at its first `__`.
 */
import { createHash } from 'node:crypto';

export const SEPARATOR = '__';
export const MAX_NAME_LENGTH = 64;
const HASH_LENGTH = 6;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function shortHash(server: string, name: string): string {
  const digest = createHash('sha256').update(server).update('\u0000').update(name).digest();
  let out = '';
  for (let i = 0; i < HASH_LENGTH; i++) out += BASE32[(digest[i] ?? 0) % 32];
  return out;
}

/** The exposed name of `name` from upstream `server`. */
export function exposedName(server: string, name: string): string {
  const full = `${server}${SEPARATOR}${name}`;
  if (full.length < MAX_NAME_LENGTH) return full;
  const keep = MAX_NAME_LENGTH - HASH_LENGTH - 1;
  // Cut on a code point boundary: a split surrogate pair would make an unusable name.
  let cut = full.slice(0, keep);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}_${shortHash(server, name)}`;
}

/**
 * Remembers the names it has handed out so that truncated names can be mapped back, and maps
 * untruncated ones back by splitting at the first separator.
 */
export class NameMap {
  readonly #servers: ReadonlySet<string>;
  readonly #reverse = new Map<string, { server: string; name: string }>();

  constructor(servers: Iterable<string>) {
    this.#servers = new Set(servers);
  }

  expose(server: string, name: string): string {
    const exposed = exposedName(server, name);
    this.#reverse.set(exposed, { server, name });
    return exposed;
  }

  /** The upstream and original name behind an exposed name, if it is one. */
  resolve(exposed: string): { server: string; name: string } | undefined {
    const known = this.#reverse.get(exposed);
    if (known) return known;
    // A 64-character name is always a truncated one, which must have been handed out by `expose`.
    if (exposed.length >= MAX_NAME_LENGTH) return undefined;
    const at = exposed.indexOf(SEPARATOR);
    if (at <= 0) return undefined;
    const server = exposed.slice(0, at);
    const name = exposed.slice(at + SEPARATOR.length);
    if (!this.#servers.has(server) || name.length === 0) return undefined;
    return { server, name };
  }
}
