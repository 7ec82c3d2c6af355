/**
 * The MEUP space as `switchboard serve` hosts it: an adapter on the router like the HTTP server.
 * Composition only:
 *
 * - a downstream side for participants: `McpBridge` opens router sessions for their MCP calls;
 * - a tap for observers: every hop the router emits is published, as its MEUP envelope (the one
 *   the trace keeps), to the participants allowed to observe (installed only when the
 *   configuration lets someone observe, so that otherwise no hop is built for it);
 * - a call watcher (a router interceptor that only reads): the trace id of each participant call,
 *   and the end of held calls approved from the space;
 * - the approvals bridge on the registry the HTTP approvals API shares;
 * - the WebSocket endpoint `/meup` on the gateway's HTTP server.
 */

import type { GatewayConfig } from '../config/types.js';
import type { CallInterceptor, Router } from '../core/router.js';
import type { Tap } from '../core/taps.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { ApprovalRegistry } from '../policy/approvals.js';
import type { UpgradeRoutes } from '../transports/http/server/mcp-http-server.js';
import { ApprovalBridge } from './approval-bridge.js';
import { McpBridge, type McpSessionHooks } from './mcp-bridge.js';
import { MeupSpace, type SpaceTraceSink } from './meup-space.js';
import { type GatewayAuthenticate, SpaceAuthenticator } from './space-auth.js';
import { SpaceEndpoint } from './ws-endpoint.js';

export interface ServeSpaceOptions {
  readonly config: Pick<GatewayConfig, 'space' | 'server' | 'policy' | 'auth' | 'upstreams'>;
  readonly router: Router;
  readonly approvals: ApprovalRegistry;
  /** Opens and closes the router-side routing of a participant's session to one upstream. */
  readonly sessions: McpSessionHooks;
  /** The gateway's authenticator; undefined without `auth` (local mode). */
  readonly authenticate?: GatewayAuthenticate;
  readonly trace?: SpaceTraceSink;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export class ServeSpace {
  readonly space: MeupSpace;
  readonly endpoint: SpaceEndpoint;
  readonly #bridge: McpBridge;
  readonly #approvals: ApprovalBridge;
  readonly #router: Router;
  readonly #tap: Tap | undefined;

  constructor(options: ServeSpaceOptions) {
    const { config, router, logger, metrics } = options;
    const log = logger.child({ component: 'space' });
    this.#router = router;
    this.#bridge = new McpBridge({ router, hooks: options.sessions, logger: log, metrics });
    this.space = new MeupSpace({
      config: config.space,
      upstreams: config.upstreams.map((u) => u.name),
      approverRoles: config.policy.approvals.approverRoles,
      localIsTrusted: config.auth === undefined,
      mcp: this.#bridge,
      maxJsonDepth: config.server.maxJsonDepth,
      ...(options.trace ? { trace: options.trace } : {}),
      logger: log,
      metrics,
    });
    this.#approvals = new ApprovalBridge({
      registry: options.approvals,
      host: {
        proposals: this.space.proposals,
        publish: (envelope, session) =>
          this.space.publish(envelope, { traceSession: session, broadcastIfVirtual: true }),
      },
      logger: log,
      metrics,
    });
    this.space.approvals = this.#approvals;
    const bridge = this.#bridge;
    const approvals = this.#approvals;
    const watcher: CallInterceptor = {
      name: 'space',
      complete: (call, response) => {
        if (bridge.owns(call.session.key))
          bridge.noteTraceId(call.session.key, call.request.id, call.traceId);
        approvals.callCompleted(call.traceId, response);
        return undefined;
      },
    };
    router.addInterceptor(watcher);
    const { space } = config;
    if (space.defaults.observe || space.participants.some((p) => p.observe === true)) {
      const published = this.space;
      this.#tap = { name: 'space', observe: (event) => published.observe(event.meup) };
      router.taps.add(this.#tap);
    }
    this.endpoint = new SpaceEndpoint({
      space: this.space,
      auth: new SpaceAuthenticator({ gateway: options.authenticate, participants: space.participants }),
      logger: log,
      metrics,
    });
    this.#approvals.start();
  }

  /** Serves `/meup` on the gateway's HTTP server, behind its Host and Origin guards. */
  attach(server: UpgradeRoutes): void {
    this.endpoint.attach(server);
  }

  /** Closes every participant connection and stops publishing; MCP sessions of participants end. */
  close(): void {
    this.#approvals.stop();
    if (this.#tap) this.#router.taps.remove(this.#tap);
    this.endpoint.close();
    this.#bridge.close();
  }
}
