/**
 * Checks every HTTP request and WebSocket upgrade passes before anything else: DNS-rebinding
 * protection (`Host` on a loopback bind) and `Origin` (`HostOriginGuard`, one instance per server,
 * applied by `McpHttpServer` to both entry points), and the content negotiation of the MCP
 * endpoints. Hosts and origins are parsed by `authority.ts`, never compared by prefix.
 */
import type { IncomingMessage } from 'node:http';
import {
  type Authority,
  isLoopbackAddress,
  isLoopbackAuthority,
  parseAuthority,
  parseOrigin,
} from './authority.js';

/** Whether the gateway is bound to a loopback address (the default). */
export function isLoopbackBind(host: string): boolean {
  return isLoopbackAddress(host);
}

export interface HostRules {
  readonly bindHost: string;
  /** `server.allowedHosts`: names or addresses, with or without a port, as validated. */
  readonly allowedHosts: readonly string[];
}

export interface OriginRules {
  readonly bindHost: string;
  /** `server.allowedOrigins`: normalised origins, or `*`. */
  readonly allowedOrigins: readonly string[];
}

/** The configured hosts as `host` and `host:port` keys of their parsed form, built once per list. */
const HOST_SETS = new WeakMap<readonly string[], ReadonlySet<string>>();

function allowedHostSet(hosts: readonly string[]): ReadonlySet<string> {
  let set = HOST_SETS.get(hosts);
  if (set === undefined) {
    const keys = new Set<string>();
    for (const entry of hosts) {
      const authority = parseAuthority(entry);
      // The configuration validates entries; one this grammar refuses could never match.
      if (authority !== undefined) keys.add(authorityKey(authority));
    }
    set = keys;
    HOST_SETS.set(hosts, set);
  }
  return set;
}

function authorityKey(authority: Authority): string {
  return authority.port === undefined ? authority.host : `${authority.host}:${authority.port}`;
}

function shown(value: string): string {
  return JSON.stringify(value.slice(0, 100));
}

/**
 * DNS rebinding: a page on `evil.example` that resolves to 127.0.0.1 reaches a loopback server with
 * `Host: evil.example`. On a loopback bind only loopback hosts (`authority.ts`) and configured extras
 * are served; on any other bind the Host is not restricted unless `allowedHosts` is set. Returns why
 * the value is refused, or undefined.
 */
export function checkHost(hostHeader: string | undefined, rules: HostRules): string | undefined {
  const allowed = allowedHostSet(rules.allowedHosts);
  const loopback = isLoopbackBind(rules.bindHost);
  if (!loopback && allowed.size === 0) return undefined;
  if (hostHeader === undefined || hostHeader.length === 0) return 'missing Host header';
  const authority = parseAuthority(hostHeader);
  if (authority === undefined) return `Host ${shown(hostHeader)} is not a valid host[:port]`;
  if (allowed.has(authority.host) || allowed.has(authorityKey(authority))) return undefined;
  if (loopback && isLoopbackAuthority(authority)) return undefined;
  return `Host ${shown(hostHeader)} is not allowed`;
}

/**
 * `Origin` (sent by browsers): when present it must be an `http:`/`https:` origin of a loopback
 * host on a loopback bind, or one of `allowedOrigins` (compared normalised), or anything when
 * `allowedOrigins` holds `*`. Absent is fine: non-browser clients do not send it.
 */
export function checkOrigin(origin: string | undefined, rules: OriginRules): string | undefined {
  if (origin === undefined) return undefined;
  const allowed = rules.allowedOrigins;
  if (allowed.includes('*') || allowed.includes(origin)) return undefined;
  const parsed = parseOrigin(origin);
  if (parsed !== undefined) {
    if (allowed.includes(parsed.normalized)) return undefined;
    if (
      isLoopbackBind(rules.bindHost) &&
      (parsed.scheme === 'http' || parsed.scheme === 'https') &&
      isLoopbackAuthority(parsed.authority)
    )
      return undefined;
  }
  return `Origin ${shown(origin)} is not allowed`;
}

/** Why a request was refused by {@link HostOriginGuard}: the counter's reason and the message. */
export interface GuardRefusal {
  readonly reason: 'host' | 'origin';
  readonly message: string;
}

const VERDICTS_KEPT = 64;

/**
 * The Host and Origin guards of one server, as one check of a request. Verdicts are kept by header
 * text (a client sends the same values with every request), in a bounded map that starts over when
 * full, since the texts are the client's.
 */
export class HostOriginGuard {
  readonly #host: HostRules;
  readonly #origin: OriginRules;
  readonly #hostChecked: boolean;
  readonly #hosts = new Map<string, string | undefined>();
  readonly #origins = new Map<string, string | undefined>();

  constructor(rules: HostRules & OriginRules) {
    this.#host = { bindHost: rules.bindHost, allowedHosts: rules.allowedHosts };
    this.#origin = { bindHost: rules.bindHost, allowedOrigins: rules.allowedOrigins };
    this.#hostChecked = isLoopbackBind(rules.bindHost) || rules.allowedHosts.length > 0;
  }

  /** The request's refusal, or undefined when it may go on. */
  check(req: IncomingMessage): GuardRefusal | undefined {
    if (this.#hostChecked) {
      // Node keeps the first of several Host lines; a request with two is malformed (RFC 9112 §3.2).
      if (hostLines(req.rawHeaders) > 1) return { reason: 'host', message: 'more than one Host header' };
      const problem = remembered(this.#hosts, req.headers.host ?? '', (v) =>
        checkHost(v.length === 0 ? undefined : v, this.#host),
      );
      if (problem !== undefined) return { reason: 'host', message: problem };
    }
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    const problem = remembered(this.#origins, origin, (v) => checkOrigin(v, this.#origin));
    return problem === undefined ? undefined : { reason: 'origin', message: problem };
  }
}

function hostLines(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

function remembered(
  kept: Map<string, string | undefined>,
  value: string,
  decide: (value: string) => string | undefined,
): string | undefined {
  if (kept.has(value)) return kept.get(value);
  const verdict = decide(value);
  if (kept.size >= VERDICTS_KEPT) kept.clear();
  kept.set(value, verdict);
  return verdict;
}

interface MediaRange {
  readonly type: string;
  readonly q: number;
}

function mediaRanges(accept: string): MediaRange[] {
  return accept.split(',').map((part) => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = q ? Number(q.slice(2)) : 1;
    return { type: type.trim(), q: Number.isFinite(value) ? value : 1 };
  });
}

/**
 * Parsed `Accept` values by text: a client sends the same one with every request. Bounded, since
 * the text is the client's: past the bound it starts over.
 */
const RANGES = new Map<string, readonly MediaRange[]>();
const RANGES_KEPT = 64;

function rangesOf(accept: string): readonly MediaRange[] {
  let ranges = RANGES.get(accept);
  if (ranges === undefined) {
    ranges = mediaRanges(accept);
    if (RANGES.size >= RANGES_KEPT) RANGES.clear();
    RANGES.set(accept, ranges);
  }
  return ranges;
}

/**
 * Whether `accept` lists `mediaType` by name with a q-value above 0. Wildcard ranges (`*` as the
 * type or the subtype) do not count: every revision of the Streamable HTTP transport (2025-03-26 to
 * 2026-07-28) says the client MUST send an `Accept` header *listing* `application/json` and
 * `text/event-stream` (and `text/event-stream` on a GET), and the gateway answers 406 otherwise,
 * as the reference SDKs do. So a missing header, and a client's default of any type (curl, fetch),
 * get 406 rather than an answer in a type the client never said it reads.
 */
export function listsMediaType(accept: string | undefined, mediaType: string): boolean {
  if (!accept) return false;
  return rangesOf(accept).some((r) => r.q > 0 && r.type === mediaType);
}

/** `application/json`, with or without parameters (charset). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  if (contentType === 'application/json') return true;
  return contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
}
