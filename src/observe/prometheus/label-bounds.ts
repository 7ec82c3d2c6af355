/**
 * Label values with a bound: whatever a client or a server sends, the number of series a label can
 * make stays fixed. A value the gateway cannot vouch for is `other`:
 *
 * - methods: the MCP methods of every revision (a client may send any string);
 * - tool and prompt names: only those an upstream listed (`tools/list`, `prompts/list` answers seen
 *   passing through the gateway), at most {@link MAX_TARGETS_PER_UPSTREAM} per upstream and kind;
 * - JSON-RPC error codes: the standard ones and the gateway's own range;
 * - protocol versions: the MCP revisions;
 * - principals: the first `max` seen, when the configuration asks for them at all.
 */
import { isKnownRevision } from '../../protocol/mcp/revisions.js';
import { OTHER } from '../label-vocabulary.js';

export { boundMethod, MCP_METHODS, OTHER } from '../label-vocabulary.js';

/**
 * A JSON-RPC error code as a label value: the standard codes (-32700, -32600 to -32603) and the
 * implementation-defined range -32099 to -32000 (where MCP's and the gateway's codes live) as
 * themselves, anything else `other`: an upstream may answer with any integer.
 */
export function boundErrorCode(code: number): string {
  if (code === -32700 || (code >= -32603 && code <= -32600) || (code >= -32099 && code <= -32000))
    return String(code);
  return OTHER;
}

export function boundProtocolVersion(version: string | undefined): string | undefined {
  if (version === undefined) return undefined;
  return isKnownRevision(version) ? version : OTHER;
}

/** At most this many tool (and prompt) names per upstream are kept as label values. */
export const MAX_TARGETS_PER_UPSTREAM = 1000;
/** A longer name is not kept (it counts as `other`). */
const MAX_TARGET_LENGTH = 200;

/**
 * The tool and prompt names each upstream listed. Names are only added, up to the bound: a name an
 * upstream no longer lists keeps its series, which already exist.
 */
export class KnownTargets {
  readonly #byUpstream = new Map<string, { readonly tool: Set<string>; readonly prompt: Set<string> }>();

  /** Learns the names of a `tools/list` or `prompts/list` result from `upstream`. */
  learn(upstream: string, kind: 'tool' | 'prompt', result: unknown): void {
    const items = (result as { tools?: unknown; prompts?: unknown } | null | undefined)?.[
      kind === 'tool' ? 'tools' : 'prompts'
    ];
    if (!Array.isArray(items)) return;
    let known = this.#byUpstream.get(upstream);
    if (known === undefined) {
      known = { tool: new Set(), prompt: new Set() };
      this.#byUpstream.set(upstream, known);
    }
    const names = known[kind];
    for (const item of items) {
      if (names.size >= MAX_TARGETS_PER_UPSTREAM) return;
      const name = (item as { name?: unknown } | null)?.name;
      if (typeof name === 'string' && name.length > 0 && name.length <= MAX_TARGET_LENGTH) names.add(name);
    }
  }

  knows(upstream: string, kind: 'tool' | 'prompt', name: string): boolean {
    return this.#byUpstream.get(upstream)?.[kind].has(name) ?? false;
  }

  /** How many names are known in all (for tests and the bound's own check). */
  get size(): number {
    let n = 0;
    for (const known of this.#byUpstream.values()) n += known.tool.size + known.prompt.size;
    return n;
  }
}

/** The first `max` principals seen keep their name as a label value; the others are `other`. */
export class PrincipalLabels {
  readonly #max: number;
  readonly #seen = new Set<string>();

  constructor(max: number) {
    this.#max = max;
  }

  label(principal: string | undefined): string {
    const name = principal ?? 'local';
    if (this.#seen.has(name)) return name;
    if (this.#seen.size >= this.#max || name.length > MAX_TARGET_LENGTH) return OTHER;
    this.#seen.add(name);
    return name;
  }
}
