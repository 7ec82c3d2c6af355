/**
 * What each upstream's tools say of themselves (annotations), learnt from the `tools/list`
 * answers that pass through the gateway; the policy derives tiers from it. When a tool is called
 * before its upstream was ever listed, the catalog asks the upstream once (`fetch`), so that a
 * destructive tool is never taken for a harmless one just because nobody listed it first.
 *
 * It also keeps the `x-mcp-header` parameters of each tool's input schema: a 2026-07-28 request
 * mirrors them in `Mcp-Param-*` headers, which the modern endpoint checks against the arguments.
 */

import type { ToolHints } from '../../policy/policy-engine.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../../protocol/jsonrpc/types.js';
import { type ParamHeader, scanToolHeaders } from '../../protocol/mcp/x-mcp-header.js';

export type ToolFetcher = (upstream: string, session: string) => Promise<readonly JsonObject[]>;

function hintsOf(tool: JsonObject): ToolHints {
  const a = isObject(tool.annotations) ? tool.annotations : {};
  const hints: { -readonly [K in keyof ToolHints]: ToolHints[K] } = {};
  if (typeof a.readOnlyHint === 'boolean') hints.readOnlyHint = a.readOnlyHint;
  if (typeof a.destructiveHint === 'boolean') hints.destructiveHint = a.destructiveHint;
  return hints;
}

interface ToolEntry {
  readonly hints: ToolHints;
  /** Parameters mirrored in headers; 'invalid' when the annotations break the rules. */
  readonly headers: readonly ParamHeader[] | 'invalid';
}

export class ToolCatalog {
  readonly #tools = new Map<string, Map<string, ToolEntry>>();
  readonly #fetching = new Map<string, Promise<void>>();
  readonly #fetch: ToolFetcher | undefined;

  constructor(fetch?: ToolFetcher) {
    this.#fetch = fetch;
  }

  /** Records the tools of one upstream (a complete list replaces what was known). */
  learn(upstream: string, tools: readonly JsonObject[], complete = true): void {
    let known = this.#tools.get(upstream);
    if (!known || complete) {
      known = new Map();
      this.#tools.set(upstream, known);
    }
    for (const tool of tools) {
      if (typeof tool.name !== 'string') continue;
      const headers = scanToolHeaders(tool.inputSchema);
      known.set(tool.name, { hints: hintsOf(tool), headers: headers.ok ? headers.headers : 'invalid' });
    }
  }

  /** The hints of a tool, if its upstream has been listed (undefined hints: unknown tool). */
  hints(upstream: string, tool: string): ToolHints | undefined {
    return this.#tools.get(upstream)?.get(tool)?.hints;
  }

  /**
   * The `x-mcp-header` parameters of a known tool: empty when it declares none, 'invalid' when its
   * declarations break the rules, undefined when the tool is unknown.
   */
  paramHeaders(upstream: string, tool: string): readonly ParamHeader[] | 'invalid' | undefined {
    return this.#tools.get(upstream)?.get(tool)?.headers;
  }

  knows(upstream: string): boolean {
    return this.#tools.has(upstream);
  }

  /** Makes sure the upstream's tools are known, asking it once if needed; never rejects. */
  ensure(upstream: string, session: string): Promise<void> {
    if (this.#tools.has(upstream) || !this.#fetch) return Promise.resolve();
    let pending = this.#fetching.get(upstream);
    if (!pending) {
      pending = this.#fetch(upstream, session)
        .then((tools) => this.learn(upstream, tools))
        .catch(() => undefined)
        .finally(() => this.#fetching.delete(upstream));
      this.#fetching.set(upstream, pending);
    }
    return pending;
  }

  /** Forgets an upstream's tools (its list changed). */
  forget(upstream: string): void {
    this.#tools.delete(upstream);
  }
}
