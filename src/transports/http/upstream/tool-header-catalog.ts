/**
 * What a modern upstream transport knows of its tools' `x-mcp-header` annotations, to mirror the
 * arguments of each `tools/call` into `Mcp-Param-*` headers. It learns from every `tools/list`
 * result that passes through (dropping, with a warning, tools whose annotations are invalid, as the
 * specification requires of clients), and lists the tools itself once when a call names a tool it
 * has never seen. A `notifications/tools/list_changed` forgets everything: the next call lists again.
 */
import type { Logger } from '../../../observe/logger.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import { scanToolHeaders, type ToolHeaders } from '../../../protocol/mcp/x-mcp-header.js';

/** Fetches every tool of the upstream (all pages); rejects when it cannot. */
export type ListTools = () => Promise<readonly unknown[]>;

/** The tools' headers, learnt and fetched on demand (see the file comment). */
export class ToolHeaderCatalog {
  readonly #tools = new Map<string, ToolHeaders>();
  readonly #list: ListTools;
  readonly #logger: Logger;
  readonly #upstream: string;
  /** A full listing was done since the last change. */
  #complete = false;
  /** The listing in progress, shared by every call waiting for it. */
  #listing: Promise<void> | undefined;
  /** Bumped by `forget`, so a listing that started before a change does not count as complete. */
  #generation = 0;

  constructor(list: ListTools, logger: Logger, upstream: string) {
    this.#list = list;
    this.#logger = logger;
    this.#upstream = upstream;
  }

  /**
   * Records the tools of one `tools/list` page and returns those to hand on: the same array when
   * every tool is valid, else a copy without the invalid ones (each logged once per page).
   */
  learn(tools: readonly unknown[]): readonly unknown[] {
    let kept: unknown[] | undefined;
    tools.forEach((tool, index) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return;
      const headers = scanToolHeaders(tool.inputSchema);
      this.#tools.set(tool.name, headers);
      if (headers.ok) {
        kept?.push(tool);
        return;
      }
      kept ??= tools.slice(0, index);
      this.#logger.warn(
        { upstream: this.#upstream, tool: tool.name, reason: headers.reason },
        'dropped a tool with an invalid x-mcp-header annotation from tools/list',
      );
    });
    return kept ?? tools;
  }

  /** The tool's headers: known ones at once, else after one listing (undefined: still unknown). */
  async lookup(name: string): Promise<ToolHeaders | undefined> {
    const known = this.#tools.get(name);
    if (known || this.#complete) return known;
    await this.refresh();
    return this.#tools.get(name);
  }

  /** Lists the tools again (one listing at a time); a failure is logged and leaves what was known. */
  refresh(): Promise<void> {
    this.#listing ??= this.#fetch().finally(() => {
      this.#listing = undefined;
    });
    return this.#listing;
  }

  /** The tool list changed: everything known may be stale. */
  forget(): void {
    this.#tools.clear();
    this.#complete = false;
    this.#generation++;
  }

  async #fetch(): Promise<void> {
    const generation = this.#generation;
    try {
      const tools = await this.#list();
      this.learn(tools);
      if (generation === this.#generation) this.#complete = true;
    } catch (error) {
      this.#logger.warn(
        { upstream: this.#upstream, err: error instanceof Error ? error.message : String(error) },
        'could not list the tools to learn their x-mcp-header parameters',
      );
    }
  }
}
