/**
 * The era each HTTP upstream was found to speak, remembered per MCP endpoint (origin, path and
 * query), so it is probed once rather than on every connection: the specification asks clients to
 * cache the era per origin, since it is a property of the server. It outlives the transports (a
 * supervisor recreates one on each reconnection), and one cache can serve many supervisors (the
 * per-session connections to one upstream). An entry is forgotten when a connection built on it
 * failed, so a server that changed era is probed again.
 */
import type { UpstreamEra } from './era-probe.js';

/** The key of an endpoint: origin + path + query (the fragment never reaches the server). */
export function eraKey(url: URL): string {
  return url.origin + url.pathname + url.search;
}

/** Known eras by endpoint (see the file comment). */
export class EraCache {
  readonly #eras = new Map<string, UpstreamEra>();

  /** The era found for `url`, if any. */
  get(url: URL): UpstreamEra | undefined {
    return this.#eras.get(eraKey(url));
  }

  set(url: URL, era: UpstreamEra): void {
    this.#eras.set(eraKey(url), era);
  }

  /** The assumption failed: the next connection probes again. */
  forget(url: URL): void {
    this.#eras.delete(eraKey(url));
  }
}
