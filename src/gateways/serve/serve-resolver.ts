/**
 * Routing for `serve`: which upstream each client message goes to, what the gateway answers
 * itself, and which sessions an upstream notification concerns.
 *
 * Endpoints: `/servers/<name>/mcp` (single) forwards everything to that upstream; `/mcp`
 * (aggregate) fronts every upstream: tools and prompts are exposed as `<server>__<name>`
 * (namespacing.ts), resources keep their URIs (routed by the URI index built from lists and
 * templates), and list requests are answered by the gateway from N upstream answers (fan-in). With
 * a single upstream configured, `/mcp` behaves like `/servers/<name>/mcp`.
 *
 * The gateway answers `initialize` itself (merged capabilities, negotiated revision), `ping`, and
 * `logging/setLevel` (per session: a shared upstream is set to the lowest level any of its
 * sessions asked for, and each session only receives messages at or above its own level).
 * `resources/subscribe` on a shared upstream is reference-counted, and `resources/updated` reaches
 * only the sessions that subscribed.
 *
 * A pooled upstream (`upstream-pool.ts`) is one server to its sessions, as a shared one is: levels
 * and subscriptions are held here the same way; the level goes to every child, subscriptions to the
 * pool's anchor (the first child). A held child's log messages reach its holder only; every other
 * notification no request explains fans out as a shared upstream's does. Each client call holds a child (`holdKey`), given
 * back when the call ends (`PoolLeaseInterceptor`); a server request from a child belongs to the
 * session holding it.
 */
import type { LinkId, SessionKey } from '../../core/correlation-table.js';
import type {
  LocalAnswer,
  LocalCall,
  RequestResolver,
  Resolution,
  Router,
  SessionView,
  UpstreamReply,
} from '../../core/router.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { gatewayError, rejectionAsJsonRpcError } from '../../errors/to-jsonrpc-error.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import { JsonRpcCode } from '../../protocol/jsonrpc/codes.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import type {
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcNotification,
  JsonRpcRequest,
} from '../../protocol/jsonrpc/types.js';
import { MCP_LOG_LEVELS, type McpLogLevel, mcpLogSeverity } from '../../protocol/mcp/log-levels.js';
import { type McpRevision, negotiateLegacyRevision } from '../../protocol/mcp/revisions.js';
import { NameMap } from './namespacing.js';
import type { InitializeResult, UpstreamManager } from './upstream-manager.js';
import { holdKey } from './upstream-pool.js';
import { UriIndex } from './uri-index.js';

export type Endpoint =
  | { readonly kind: 'aggregate' }
  | { readonly kind: 'single'; readonly upstream: string };

interface SessionRouting {
  readonly endpoint: Endpoint;
  readonly upstreams: readonly string[];
  logLevel?: McpLogLevel;
}

export interface ServeResolverOptions {
  readonly manager: UpstreamManager;
  readonly router: Router;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly gatewayVersion: string;
  /** Legacy revisions the downstream transport serves. */
  readonly revisions: readonly McpRevision[];
  /** Told when a session has completed its `initialize` (for the trace's session table). */
  readonly onInitialized?: (key: SessionKey) => void;
}

const MAX_PAGES = 100;

function paramsOf(request: JsonRpcRequest): JsonObject {
  return isObject(request.params) ? request.params : {};
}

function invalidParams(message: string): Resolution {
  return { kind: 'error', error: { code: JsonRpcCode.InvalidParams, message } };
}

export class ServeResolver implements RequestResolver {
  readonly #o: ServeResolverOptions;
  readonly #sessions = new Map<SessionKey, SessionRouting>();
  /** Sessions using each upstream. */
  readonly #users = new Map<string, Set<SessionKey>>();
  readonly #names: NameMap;
  readonly #uris = new UriIndex();
  /** Shared upstream -> uri -> subscribed sessions. */
  readonly #subscribers = new Map<string, Map<string, Set<SessionKey>>>();
  /** Shared upstream -> the level last sent to it. */
  readonly #levelSent = new Map<string, McpLogLevel>();

  constructor(options: ServeResolverOptions) {
    this.#o = options;
    this.#names = new NameMap(options.manager.names);
    for (const name of options.manager.names) this.#users.set(name, new Set());
  }

  openSession(key: SessionKey, endpoint: Endpoint): void {
    const upstreams = endpoint.kind === 'single' ? [endpoint.upstream] : [...this.#o.manager.names];
    this.#sessions.set(key, { endpoint, upstreams });
    for (const name of upstreams) this.#users.get(name)?.add(key);
  }

  /** Forgets a session; shared subscriptions it held are released (unsubscribed upstream when last). */
  closeSession(key: SessionKey): void {
    const routing = this.#sessions.get(key);
    if (!routing) return;
    this.#sessions.delete(key);
    for (const name of routing.upstreams) this.#users.get(name)?.delete(key);
    for (const [upstream, byUri] of this.#subscribers) {
      for (const [uri, sessions] of byUri) {
        if (sessions.delete(key) && sessions.size === 0) {
          byUri.delete(uri);
          this.#sendShared(upstream, 'resources/unsubscribe', { uri });
        }
      }
    }
    for (const name of routing.upstreams) this.#updateSharedLevel(name);
  }

  /** The upstream and original name behind an aggregated tool or prompt name. */
  resolveName(exposed: string): { readonly server: string; readonly name: string } | undefined {
    return this.#names.resolve(exposed);
  }

  /** Where a session's call of tool or prompt `exposed` goes: the upstream and its own name. */
  targetOf(key: SessionKey, exposed: string): { readonly server: string; readonly name: string } | undefined {
    const routing = this.#sessions.get(key);
    if (!routing) return undefined;
    if (routing.upstreams.length === 1) return { server: routing.upstreams[0]!, name: exposed };
    const target = this.#names.resolve(exposed);
    return target && routing.upstreams.includes(target.server) ? target : undefined;
  }

  endpointOf(key: SessionKey): Endpoint | undefined {
    return this.#sessions.get(key)?.endpoint;
  }

  // ------------------------------------------------------------------ client requests

  resolve(session: SessionView, request: JsonRpcRequest): Resolution {
    const routing = this.#sessions.get(session.key);
    if (!routing) return { kind: 'error', error: gatewayError(SbErrorCode.Internal, 'session has no route') };
    switch (request.method) {
      case 'initialize':
        return { kind: 'local', handle: (call) => this.#initialize(call, routing) };
      case 'ping':
        return { kind: 'local', handle: async () => ({ result: {} }) };
      case 'logging/setLevel':
        return { kind: 'local', handle: (call) => this.#setLevel(call, routing) };
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.#subscription(session, routing, request);
    }
    if (routing.upstreams.length === 1) return this.#forward(routing.upstreams[0]!, session, request);
    return this.#resolveAggregated(session, routing, request);
  }

  #resolveAggregated(session: SessionView, routing: SessionRouting, request: JsonRpcRequest): Resolution {
    const params = paramsOf(request);
    switch (request.method) {
      case 'tools/list':
        return {
          kind: 'local',
          handle: (call) => this.#mergeList(call, routing, 'tools/list', 'tools', 'tools', true),
        };
      case 'prompts/list':
        return {
          kind: 'local',
          handle: (call) => this.#mergeList(call, routing, 'prompts/list', 'prompts', 'prompts', true),
        };
      case 'resources/list':
        return {
          kind: 'local',
          handle: (call) => this.#mergeList(call, routing, 'resources/list', 'resources', 'resources', false),
        };
      case 'resources/templates/list':
        return {
          kind: 'local',
          handle: (call) =>
            this.#mergeList(
              call,
              routing,
              'resources/templates/list',
              'resources',
              'resourceTemplates',
              false,
            ),
        };
      case 'tools/call':
      case 'prompts/get': {
        if (typeof params.name !== 'string') return invalidParams('params.name must be a string');
        const target = this.#names.resolve(params.name);
        if (!target || !routing.upstreams.includes(target.server)) {
          const what = request.method === 'tools/call' ? 'tool' : 'prompt';
          return invalidParams(`Unknown ${what}: ${params.name}`);
        }
        return this.#forward(target.server, session, {
          ...request,
          params: { ...params, name: target.name },
        });
      }
      case 'resources/read': {
        if (typeof params.uri !== 'string') return invalidParams('params.uri must be a string');
        const upstream = this.#uriOwner(params.uri, routing);
        if (!upstream) {
          const uri = params.uri;
          return {
            kind: 'local',
            handle: async (call) => {
              const found = await this.#probeOwner(call, uri, routing);
              if (!found.reply) return { error: found.error, derivedFrom: found.derivedFrom };
              const response = found.reply.response;
              return 'error' in response
                ? { error: response.error, derivedFrom: found.derivedFrom }
                : { result: response.result, derivedFrom: found.derivedFrom };
            },
          };
        }
        return this.#forward(upstream, session, request);
      }
      case 'completion/complete': {
        const ref = isObject(params.ref) ? params.ref : {};
        if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
          const target = this.#names.resolve(ref.name);
          if (!target) return invalidParams(`Unknown prompt: ${ref.name}`);
          return this.#forward(target.server, session, {
            ...request,
            params: { ...params, ref: { ...ref, name: target.name } },
          });
        }
        if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
          const upstream = this.#uriOwner(ref.uri, routing);
          if (!upstream) return invalidParams(`Unknown resource template: ${ref.uri}`);
          return this.#forward(upstream, session, request);
        }
        return invalidParams('params.ref must be a ref/prompt with a name or a ref/resource with a uri');
      }
      default:
        return {
          kind: 'error',
          error: {
            code: JsonRpcCode.MethodNotFound,
            message: `Method not found on the aggregated endpoint: ${request.method} (use /servers/<name>/mcp to reach one upstream directly)`,
          },
        };
    }
  }

  #forward(upstream: string, session: SessionView, message: JsonRpcRequest): Resolution {
    // A pooled upstream leases a child to this call (released when it ends: the router's `complete`
    // hook, `PoolLeaseInterceptor`); the others ignore the hold.
    const lookup = this.#o.manager.linkFor(
      upstream,
      session.key,
      session.initializeParams,
      holdKey(session.key, message.id),
    );
    if (lookup.kind === 'ready') return { kind: 'forward', link: lookup.link, message };
    if (lookup.kind === 'pending') return { kind: 'pending', ready: lookup.ready };
    return {
      kind: 'error',
      error: gatewayError(SbErrorCode.UpstreamUnavailable, lookup.reason, { upstream }),
    };
  }

  /** The link of `upstream` for this session once it is ready. */
  #readyLink(upstream: string, session: SessionView): Promise<LinkId> {
    return this.#readyLinkOf(upstream, session.key, session.initializeParams);
  }

  async #readyLinkOf(upstream: string, key: SessionKey, initializeParams?: JsonObject): Promise<LinkId> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const lookup = this.#o.manager.linkFor(upstream, key, initializeParams);
      if (lookup.kind === 'ready') return lookup.link;
      if (lookup.kind === 'down')
        throw new SwitchboardError(SbErrorCode.UpstreamUnavailable, lookup.reason, { details: { upstream } });
      await lookup.ready;
    }
    throw new SwitchboardError(SbErrorCode.UpstreamUnavailable, `upstream ${upstream} is not ready`, {
      details: { upstream },
    });
  }

  #uriOwner(uri: string, routing: SessionRouting): string | undefined {
    const owner = this.#uris.owner(uri, routing.upstreams);
    if (owner) return owner;
    // One upstream serving resources at all: it is the only possible owner.
    const serving = routing.upstreams.filter((u) =>
      isObject(this.#o.manager.known(u)?.capabilities?.resources),
    );
    return serving.length === 1 ? serving[0] : undefined;
  }

  // ------------------------------------------------------------------ local handlers

  async #initialize(call: LocalCall, routing: SessionRouting): Promise<LocalAnswer> {
    const params = paramsOf(call.request);
    const version = negotiateLegacyRevision(params.protocolVersion, this.#o.revisions);
    this.#o.router.setSessionProtocol(call.session.key, version);
    const gathered = await this.#gather(call.session.key, routing, call.session.initializeParams ?? params);
    if ('error' in gathered) return gathered;
    this.#o.onInitialized?.(call.session.key);
    if (routing.upstreams.length === 1) {
      return { result: { ...gathered.results[0]!.result, protocolVersion: version } };
    }
    return {
      result: {
        protocolVersion: version,
        capabilities: mergeCapabilities(gathered.results.map((r) => r.result)),
        serverInfo: {
          name: 'switchboard',
          title: 'Switchboard MCP gateway',
          version: this.#o.gatewayVersion,
        },
        instructions: mergeInstructions(gathered.results),
      },
    };
  }

  /**
   * What `server/discover` answers a 2026-07-28 client of a session: the capabilities of its
   * upstreams (merged on the aggregated endpoint) and their instructions. Rejects with a JSON-RPC
   * error object when no upstream is available.
   */
  async discover(key: SessionKey): Promise<{ capabilities: JsonObject; instructions?: string }> {
    const routing = this.#sessions.get(key);
    if (!routing) throw new SwitchboardError(SbErrorCode.Internal, 'session has no route');
    const gathered = await this.#gather(key, routing, undefined);
    if ('error' in gathered) throw gathered.error;
    const single = routing.upstreams.length === 1 ? gathered.results[0]!.result : undefined;
    const capabilities = single
      ? isObject(single.capabilities)
        ? single.capabilities
        : {}
      : mergeCapabilities(gathered.results.map((r) => r.result));
    const instructions = single
      ? typeof single.instructions === 'string'
        ? single.instructions
        : undefined
      : mergeInstructions(gathered.results);
    return instructions === undefined ? { capabilities } : { capabilities, instructions };
  }

  /** The initialize results of a session's upstreams; upstreams that fail are left out (and logged). */
  async #gather(
    key: SessionKey,
    routing: SessionRouting,
    params: JsonObject | undefined,
  ): Promise<{ results: { name: string; result: InitializeResult }[] } | { error: JsonRpcErrorObject }> {
    const settled = await Promise.allSettled(
      routing.upstreams.map((name) => this.#o.manager.initializeResult(name, key, params)),
    );
    const results: { name: string; result: InitializeResult }[] = [];
    settled.forEach((outcome, i) => {
      const name = routing.upstreams[i]!;
      if (outcome.status === 'fulfilled') results.push({ name, result: outcome.value });
      else {
        this.#o.metrics.inc('initialize_upstream_failures_total', { upstream: name });
        this.#o.logger.warn(
          {
            upstream: name,
            err: String((outcome.reason as { message?: unknown })?.message ?? outcome.reason),
          },
          'an upstream is missing from this session',
        );
      }
    });
    if (results.length > 0) return { results };
    const first = settled[0];
    const reason = first?.status === 'rejected' ? first.reason : undefined;
    return {
      error: rejectionAsJsonRpcError(reason, () =>
        gatewayError(SbErrorCode.UpstreamUnavailable, 'no upstream is available'),
      ),
    };
  }

  async #mergeList(
    call: LocalCall,
    routing: SessionRouting,
    method: string,
    capability: string,
    field: string,
    rename: boolean,
  ): Promise<LocalAnswer> {
    const upstreams = routing.upstreams.filter((u) => {
      const known = this.#o.manager.known(u);
      return known === undefined || isObject(known.capabilities?.[capability]);
    });
    const derivedFrom: string[] = [];
    const lists = await Promise.allSettled(
      upstreams.map(async (name) => {
        const link = await this.#readyLink(name, call.session);
        const items: JsonObject[] = [];
        let cursor: unknown;
        for (let page = 0; page < MAX_PAGES; page++) {
          const reply = await call.requestUpstream(
            link,
            method,
            typeof cursor === 'string' ? { cursor } : undefined,
          );
          derivedFrom.push(reply.traceId);
          if ('error' in reply.response) throw reply.response.error;
          const result = isObject(reply.response.result) ? reply.response.result : {};
          const list = Array.isArray(result[field]) ? (result[field] as unknown[]) : [];
          for (const item of list) if (isObject(item)) items.push(item);
          cursor = result.nextCursor;
          if (typeof cursor !== 'string') break;
        }
        return { name, items };
      }),
    );
    const merged: JsonObject[] = [];
    let failures = 0;
    lists.forEach((outcome, i) => {
      const name = upstreams[i]!;
      if (outcome.status === 'rejected') {
        failures++;
        this.#o.metrics.inc('aggregate_list_failures_total', { upstream: name, method });
        this.#o.logger.warn(
          { upstream: name, method, err: JSON.stringify(outcome.reason) },
          'an upstream is missing from an aggregated list',
        );
        return;
      }
      for (const item of outcome.value.items) {
        if (rename && typeof item.name === 'string')
          merged.push({ ...item, name: this.#names.expose(name, item.name) });
        else {
          if (typeof item.uri === 'string') this.#uris.add(item.uri, name);
          if (typeof item.uriTemplate === 'string') this.#uris.addTemplate(item.uriTemplate, name);
          merged.push(item);
        }
      }
    });
    if (failures > 0 && failures === upstreams.length) {
      return {
        error: gatewayError(SbErrorCode.UpstreamUnavailable, `no upstream answered ${method}`),
        derivedFrom,
      };
    }
    return { result: { [field]: merged }, derivedFrom };
  }

  async #setLevel(call: LocalCall, routing: SessionRouting): Promise<LocalAnswer> {
    const level = paramsOf(call.request).level;
    if (mcpLogSeverity(level) < 0) {
      return {
        error: {
          code: JsonRpcCode.InvalidParams,
          message: `params.level must be one of ${MCP_LOG_LEVELS.join(', ')}`,
        },
      };
    }
    routing.logLevel = level as McpLogLevel;
    await Promise.all(
      routing.upstreams.map(async (name) => {
        if (!isObject(this.#o.manager.known(name)?.capabilities?.logging)) return;
        if (this.#gatewayHeld(name)) {
          this.#updateSharedLevel(name);
          return;
        }
        const link = await this.#readyLink(name, call.session).catch(() => undefined);
        if (link)
          await call
            .requestUpstream(link, 'logging/setLevel', { level: level as string })
            .catch(() => undefined);
      }),
    );
    return { result: {} };
  }

  /**
   * Sets a shared upstream to the lowest level any of its sessions needs, when that changed. A
   * session that never set a level receives every message (as it would from the server directly),
   * so it counts as `debug`; each session is then filtered to its own level on the way out.
   */
  #updateSharedLevel(name: string): void {
    if (!this.#gatewayHeld(name)) return;
    let lowest: McpLogLevel | undefined;
    let anyLevel = false;
    for (const key of this.#users.get(name) ?? []) {
      const level = this.#sessions.get(key)?.logLevel ?? 'debug';
      if (this.#sessions.get(key)?.logLevel !== undefined) anyLevel = true;
      if (lowest === undefined || mcpLogSeverity(level) < mcpLogSeverity(lowest)) lowest = level;
    }
    // Nobody asked for a level: leave the server at its own default (or what was last sent).
    if (!anyLevel || lowest === undefined || this.#levelSent.get(name) === lowest) return;
    this.#levelSent.set(name, lowest);
    if (this.#o.manager.sharing(name) === 'pooled') {
      for (const link of this.#o.manager.childLinks(name))
        this.#sendTo(link, name, 'logging/setLevel', { level: lowest });
    } else this.#sendShared(name, 'logging/setLevel', { level: lowest });
  }

  /** Shared and pooled upstreams: the gateway holds their sessions' levels and subscriptions. */
  #gatewayHeld(name: string): boolean {
    const sharing = this.#o.manager.sharing(name);
    return sharing === 'shared' || sharing === 'pooled';
  }

  /**
   * A pooled child finished a handshake (new, or restarted): it gets the level last set for the
   * upstream and, if it is the anchor, the subscriptions.
   */
  pooledChildReady(name: string, link: LinkId): void {
    const level = this.#levelSent.get(name);
    if (level !== undefined) this.#sendTo(link, name, 'logging/setLevel', { level });
    if (!this.#o.manager.isAnchor(link)) return;
    for (const uri of this.#subscribers.get(name)?.keys() ?? [])
      this.#sendTo(link, name, 'resources/subscribe', { uri });
  }

  /**
   * A shared upstream restarted: the new process knows nothing of the levels and subscriptions its
   * sessions asked for, so they are sent again.
   */
  upstreamRestarted(name: string): void {
    this.#levelSent.delete(name);
    this.#updateSharedLevel(name);
    for (const uri of this.#subscribers.get(name)?.keys() ?? [])
      this.#sendShared(name, 'resources/subscribe', { uri });
  }

  #subscription(session: SessionView, routing: SessionRouting, request: JsonRpcRequest): Resolution {
    const uri = paramsOf(request).uri;
    if (typeof uri !== 'string') return invalidParams('params.uri must be a string');
    const upstream = routing.upstreams.length === 1 ? routing.upstreams[0] : this.#uriOwner(uri, routing);
    if (!upstream) {
      // Nobody listed it yet: find its owner by reading it, then subscribe there.
      return {
        kind: 'local',
        handle: async (call) => {
          const found = await this.#probeOwner(call, uri, routing);
          if (!found.upstream) return { error: found.error, derivedFrom: found.derivedFrom };
          const link = await this.#readyLink(found.upstream, call.session);
          const reply = await call.requestUpstream(link, request.method, { uri });
          const derivedFrom = [...found.derivedFrom, reply.traceId];
          if (this.#gatewayHeld(found.upstream) && !('error' in reply.response)) {
            this.#trackSubscription(
              found.upstream,
              uri,
              session.key,
              request.method === 'resources/subscribe',
            );
          }
          return 'error' in reply.response
            ? { error: reply.response.error, derivedFrom }
            : { result: {}, derivedFrom };
        },
      };
    }
    if (!this.#gatewayHeld(upstream)) return this.#forward(upstream, session, request);
    const subscribe = request.method === 'resources/subscribe';
    return {
      kind: 'local',
      handle: async (call) => {
        let byUri = this.#subscribers.get(upstream);
        if (!byUri) {
          byUri = new Map();
          this.#subscribers.set(upstream, byUri);
        }
        const sessions = byUri.get(uri) ?? new Set<SessionKey>();
        const first = sessions.size === 0;
        if (subscribe) {
          sessions.add(session.key);
          byUri.set(uri, sessions);
          if (!first) return { result: {} };
        } else {
          if (!sessions.delete(session.key)) return { result: {} };
          if (sessions.size > 0) return { result: {} };
          byUri.delete(uri);
        }
        // A pooled upstream's subscriptions live on its anchor (where `pooledChildReady` resends them).
        const link =
          this.#o.manager.sharing(upstream) === 'pooled'
            ? await this.#anchorLink(upstream)
            : await this.#readyLink(upstream, call.session);
        const reply = await call.requestUpstream(link, request.method, { uri });
        if ('error' in reply.response) {
          if (subscribe) sessions.delete(session.key);
          return { error: reply.response.error, derivedFrom: [reply.traceId] };
        }
        return { result: {}, derivedFrom: [reply.traceId] };
      },
    };
  }

  /**
   * The owner of a URI no list has shown yet: each upstream serving resources is asked to read it,
   * in configuration order, until one has it; it is then remembered as the owner. (A URI that a
   * tool result or a template produced is readable before anyone lists it.)
   */
  async #probeOwner(
    call: LocalCall,
    uri: string,
    routing: SessionRouting,
  ): Promise<{ upstream?: string; reply?: UpstreamReply; error: JsonRpcErrorObject; derivedFrom: string[] }> {
    const derivedFrom: string[] = [];
    let error: JsonRpcErrorObject = {
      code: JsonRpcCode.ResourceNotFound,
      message: `Resource not found: ${uri}`,
    };
    for (const name of routing.upstreams) {
      const known = this.#o.manager.known(name);
      if (known !== undefined && !isObject(known.capabilities?.resources)) continue;
      const link = await this.#readyLink(name, call.session).catch(() => undefined);
      if (!link) continue;
      const reply = await call.requestUpstream(link, 'resources/read', { uri }).catch(() => undefined);
      if (!reply) continue;
      derivedFrom.push(reply.traceId);
      if (!('error' in reply.response)) {
        this.#uris.add(uri, name);
        return { upstream: name, reply, error, derivedFrom };
      }
      // "Not found" (-32002, or -32602 as 2026-07-28 has it) means: try the next upstream.
      const code = reply.response.error.code;
      if (code !== JsonRpcCode.ResourceNotFound && code !== JsonRpcCode.InvalidParams)
        error = reply.response.error;
    }
    return { error, derivedFrom };
  }

  /** Records a subscription a session holds on a shared upstream (or its end). */
  #trackSubscription(upstream: string, uri: string, session: SessionKey, subscribe: boolean): void {
    let byUri = this.#subscribers.get(upstream);
    if (!byUri) {
      byUri = new Map();
      this.#subscribers.set(upstream, byUri);
    }
    const sessions = byUri.get(uri) ?? new Set<SessionKey>();
    if (subscribe) sessions.add(session);
    else sessions.delete(session);
    if (sessions.size > 0) byUri.set(uri, sessions);
    else byUri.delete(uri);
  }

  /** The link of a pooled upstream's anchor, once ready. */
  async #anchorLink(upstream: string): Promise<LinkId> {
    // No session holds a child under the empty key: `linkFor` answers with the anchor.
    return this.#readyLinkOf(upstream, '');
  }

  /**
   * A gateway-originated request to a shared upstream (a pooled one's anchor) that nobody waits for
   * (errors are logged).
   */
  #sendShared(upstream: string, method: string, params: JsonObject): void {
    const lookup = this.#o.manager.linkFor(upstream, '', undefined);
    if (lookup.kind !== 'ready') return;
    this.#sendTo(lookup.link, upstream, method, params);
  }

  #sendTo(link: LinkId, upstream: string, method: string, params: JsonObject): void {
    this.#o.router.requestUpstream(link, method, params).then(
      (reply) => {
        if ('error' in reply.response)
          this.#o.logger.warn(
            { upstream, method, error: reply.response.error.message },
            'upstream refused a gateway request',
          );
      },
      (error: unknown) =>
        this.#o.logger.warn(
          { upstream, method, err: JSON.stringify(error) },
          'gateway request to upstream failed',
        ),
    );
  }

  // ------------------------------------------------------------------ notifications

  notificationLinks(session: SessionView, notification: JsonRpcNotification): readonly LinkId[] {
    // The gateway did the handshake with every upstream itself.
    if (notification.method === 'notifications/initialized') return [];
    const routing = this.#sessions.get(session.key);
    if (!routing) return [];
    const links: LinkId[] = [];
    for (const name of routing.upstreams) {
      // A shared upstream cannot hold one client's roots or state; only per-session ones hear it.
      if (this.#o.manager.sharing(name) !== 'per-session') continue;
      const lookup = this.#o.manager.linkFor(name, session.key, session.initializeParams);
      if (lookup.kind === 'ready') links.push(lookup.link);
    }
    return links;
  }

  sessionsFor(link: LinkId): readonly SessionKey[] {
    const owner = this.#o.manager.describeLink(link);
    if (!owner) return [];
    if (owner.session !== undefined) return [owner.session];
    if (owner.pooled) {
      // A pooled child's requests are its holder's; a free child's are nobody's (-32008).
      const holder = this.#o.manager.holderOf(link);
      return holder === undefined ? [] : [holder];
    }
    return [...(this.#users.get(owner.upstream) ?? [])];
  }

  notificationTargets(link: LinkId, notification: JsonRpcNotification): readonly SessionKey[] {
    const owner = this.#o.manager.describeLink(link);
    if (!owner || owner.session !== undefined) return this.sessionsFor(link);
    const params = isObject(notification.params) ? notification.params : {};
    let sessions: readonly SessionKey[];
    if (owner.pooled) {
      // A log message from a held child is about its holder's calls, and reaches only it; anything
      // else unattributable reaches every session, filtered, as a shared upstream's does.
      const holder = this.#o.manager.holderOf(link);
      sessions =
        notification.method === 'notifications/message' && holder !== undefined
          ? [holder]
          : [...(this.#users.get(owner.upstream) ?? [])];
    } else sessions = this.sessionsFor(link);
    if (notification.method === 'notifications/message') {
      const rank = mcpLogSeverity(params.level);
      return sessions.filter((key) => {
        const level = this.#sessions.get(key)?.logLevel;
        return level === undefined || rank < 0 || rank >= mcpLogSeverity(level);
      });
    }
    if (notification.method === 'notifications/resources/updated' && typeof params.uri === 'string') {
      const subscribed = this.#subscribers.get(owner.upstream)?.get(params.uri);
      return subscribed ? sessions.filter((key) => subscribed.has(key)) : [];
    }
    return sessions;
  }
}

/** The union of what the upstreams can do, as one server's capabilities. */
export function mergeCapabilities(results: readonly InitializeResult[]): JsonObject {
  const caps = results.map((r) => (isObject(r.capabilities) ? r.capabilities : {}));
  const has = (name: string) => caps.some((c) => isObject(c[name]));
  const merged: JsonObject = {};
  if (has('tools')) merged.tools = { listChanged: true };
  if (has('prompts')) merged.prompts = { listChanged: true };
  if (has('resources')) {
    const subscribe = caps.some((c) => isObject(c.resources) && c.resources.subscribe === true);
    merged.resources = subscribe ? { subscribe: true, listChanged: true } : { listChanged: true };
  }
  if (has('logging')) merged.logging = {};
  if (has('completions')) merged.completions = {};
  return merged;
}

function mergeInstructions(
  results: readonly { name: string; result: InitializeResult }[],
): string | undefined {
  const parts = results
    .filter((r) => typeof r.result.instructions === 'string' && r.result.instructions.length > 0)
    .map((r) => `## ${r.name} (tools and prompts prefixed ${r.name}__)\n\n${r.result.instructions}`);
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}
