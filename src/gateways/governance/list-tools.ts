/**
 * Every tool an upstream link lists, all pages, asked by the gateway itself (the tool catalog's
 * fetcher: a call's tier comes from the tool's annotations even when no client listed the tools).
 */
import type { LinkId, SessionKey } from '../../core/correlation-table.js';
import type { Router } from '../../core/router.js';
import type { JsonObject } from '../../protocol/jsonrpc/types.js';

/** More pages than any real server sends; a server that keeps answering a cursor is cut off here. */
const MAX_PAGES = 20;

export async function listAllTools(
  router: Router,
  link: LinkId,
  traceSession: SessionKey,
): Promise<readonly JsonObject[]> {
  const tools: JsonObject[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const reply = await router.requestUpstream(
      link,
      'tools/list',
      cursor === undefined ? undefined : { cursor },
      {
        traceSession,
      },
    );
    if (!('result' in reply.response)) break;
    const result = reply.response.result as { tools?: unknown; nextCursor?: unknown };
    if (Array.isArray(result.tools))
      for (const t of result.tools) if (typeof t === 'object' && t !== null) tools.push(t as JsonObject);
    if (typeof result.nextCursor !== 'string') break;
    cursor = result.nextCursor;
  }
  return tools;
}
