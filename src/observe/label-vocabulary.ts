/**
 * The bounded vocabulary of label values that come from outside: a value the gateway cannot vouch
 * for is {@link OTHER}. Both levels use it: the call sites that count by such a value (a method a
 * client or an upstream named) map it here before `Metrics.inc`, so the counters hold a fixed set
 * of label sets, and the Prometheus export (`prometheus/label-bounds.ts`, which re-exports it)
 * bounds its labels with the same words, so what is kept and what is exported agree.
 */

/** The value of a label whose real value is unknown or would make too many series. */
export const OTHER = 'other';

/** The methods of the MCP revisions, requests and notifications (a client may send anything else). */
export const MCP_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/write',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'sampling/createMessage',
  'elicitation/create',
  'roots/list',
  'server/discover',
  'subscriptions/listen',
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
  'tasks/update',
]);

/** `method` if it is an MCP method, else {@link OTHER}: a method as a label value. */
export function boundMethod(method: string): string {
  return MCP_METHODS.has(method) ? method : OTHER;
}
