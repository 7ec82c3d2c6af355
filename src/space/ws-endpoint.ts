/**
 * The WebSocket endpoint `/meup` of `switchboard serve` (package `ws`, in noServer mode on the
 * gateway's HTTP server, as one of its upgrade routes). The server applies the same Host and Origin
 * guards to an upgrade as to `/mcp` before it gets here (a browser page cannot open the space from
 * another origin, nor through a rebound name), then:
 *
 * - with `Authorization: Bearer <token>`: authenticated before the upgrade (401 with a challenge
 *   when refused); the participant is welcomed at once. A MEW join frame sent anyway as the first
 *   frame is accepted when it agrees with the credentials;
 * - without: the first frame must be a MEW join frame (`join-frame.ts`) within
 *   `space.joinTimeout`; frames sent meanwhile are kept (up to 64) and handled after the welcome.
 *
 * Limits: `space.maxConnections` in all (503 on the upgrade) and
 * `space.maxConnectionsPerParticipant`; frames above `space.maxFrameBytes` are refused with
 * `frame_too_large`, and above twice that (plus 64 KiB) `ws` closes the connection with 1009;
 * a ping every `space.heartbeat`, and a connection that missed the previous pong is cut.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { encodeMeupEnvelope } from '../meup/codec.js';
import { MEUP_PROTOCOL, type MeupProtocol } from '../meup/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { UpgradeRoutes } from '../transports/http/server/mcp-http-server.js';
import { refuseUpgrade } from '../transports/http/server/responses.js';
import { type JoinFrame, readJoinFrame } from './join-frame.js';
import type { MeupSpace } from './meup-space.js';
import type { SpaceAuthenticator, SpaceIdentity } from './space-auth.js';
import { SpaceErrorCode, type SystemErrorCode } from './space-error-codes.js';
import { errorEnvelope } from './system-envelopes.js';
import { CloseCode, WsSpaceConnection } from './ws-connection.js';

export const SPACE_PATH = '/meup';
const MAX_EARLY_FRAMES = 64;

export interface SpaceEndpointOptions {
  readonly space: MeupSpace;
  readonly auth: SpaceAuthenticator;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

function hasAuthorization(req: IncomingMessage): boolean {
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]?.toLowerCase() === 'authorization') return true;
  }
  return false;
}

export class SpaceEndpoint {
  readonly #o: SpaceEndpointOptions;
  readonly #wss: WebSocketServer;
  readonly #pending = new Set<WebSocket>();
  readonly #connections = new Set<WsSpaceConnection>();
  #upgrading = 0;
  #counter = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  #detach: (() => void) | undefined;
  readonly #onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    this.#upgrade(req, socket, head).catch((err: unknown) => {
      this.#o.logger.error({ err: String(err) }, 'a space upgrade failed');
      if (!socket.destroyed) refuseUpgrade(socket, 500, 'internal error');
    });
  };

  constructor(options: SpaceEndpointOptions) {
    this.#o = options;
    const { maxFrameBytes } = options.space.config;
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: maxFrameBytes * 2 + 64 * 1024,
      perMessageDeflate: false,
      clientTracking: false,
    });
  }

  /** The connections joined now. */
  get size(): number {
    return this.#connections.size;
  }

  /** Serves `/meup` as an upgrade route of the gateway's HTTP server (behind its guards). */
  attach(server: UpgradeRoutes): void {
    this.#detach = server.addUpgrade(SPACE_PATH, this.#onUpgrade);
    const every = this.#o.space.config.heartbeatMs;
    if (every > 0) {
      this.#heartbeat = setInterval(() => {
        for (const connection of this.#connections) connection.heartbeat();
      }, every);
      this.#heartbeat.unref();
    }
  }

  /** Closes every connection (1001) and stops serving. */
  close(): void {
    this.#detach?.();
    this.#detach = undefined;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    for (const connection of this.#connections)
      connection.close(CloseCode.GoingAway, 'the gateway is shutting down');
    for (const ws of this.#pending) ws.terminate();
    this.#pending.clear();
    this.#wss.close();
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { metrics, space } = this.#o;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if (q >= 0 && new URLSearchParams(url.slice(q + 1)).has('access_token')) {
      metrics.inc('space_upgrades_refused_total', { reason: 'query_token' });
      refuseUpgrade(
        socket,
        401,
        'Unauthorized: tokens in the URL are not accepted; send Authorization: Bearer <token> or a join frame',
        {
          'WWW-Authenticate': 'Bearer realm="switchboard", error="invalid_request"',
        },
      );
      return;
    }
    if (this.#connections.size + this.#pending.size + this.#upgrading >= space.config.maxConnections) {
      metrics.inc('space_upgrades_refused_total', { reason: 'limit' });
      refuseUpgrade(
        socket,
        503,
        `the space has reached space.maxConnections (${space.config.maxConnections})`,
      );
      return;
    }
    this.#upgrading++;
    let identity: SpaceIdentity | undefined;
    try {
      if (hasAuthorization(req)) {
        const result = await this.#o.auth.fromRequest(req);
        if (!result.ok) {
          metrics.inc('space_upgrades_refused_total', { reason: 'auth' });
          refuseUpgrade(socket, result.status, result.message, result.headers ?? {});
          return;
        }
        identity = result.identity;
      }
    } finally {
      this.#upgrading--;
    }
    if (socket.destroyed) return;
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', (err) => this.#o.logger.debug({ err: String(err) }, 'space connection error'));
      if (identity) this.#admit(ws, identity, this.#defaultProtocol(MEUP_PROTOCOL), true, []);
      else this.#awaitJoin(ws, req.url);
    });
  }

  #defaultProtocol(preferred: MeupProtocol): MeupProtocol {
    const accepted = this.#o.space.config.protocols;
    return accepted.includes(preferred) ? preferred : accepted[0]!;
  }

  /** A connection without credentials on the upgrade: its first frame must be a join frame. */
  #awaitJoin(ws: WebSocket, url: string | undefined): void {
    const { space, metrics } = this.#o;
    this.#pending.add(ws);
    const early: { data: RawData; isBinary: boolean }[] = [];
    let joining = false;
    const timer = setTimeout(() => {
      metrics.inc('space_joins_refused_total', { reason: 'timeout' });
      this.#refuseJoin(
        ws,
        undefined,
        this.#defaultProtocol('mew/v0.4'),
        SpaceErrorCode.Unauthorized,
        `no join frame within ${space.config.joinTimeoutMs} ms`,
      );
    }, space.config.joinTimeoutMs);
    timer.unref();
    const onClose = () => {
      clearTimeout(timer);
      this.#pending.delete(ws);
    };
    ws.once('close', onClose);
    const onMessage = (data: RawData, isBinary: boolean) => {
      if (joining) {
        if (early.length >= MAX_EARLY_FRAMES) {
          this.#refuseJoin(
            ws,
            undefined,
            this.#defaultProtocol('mew/v0.4'),
            SpaceErrorCode.Unauthorized,
            'too many frames before the join completed',
          );
          return;
        }
        early.push({ data, isBinary });
        return;
      }
      joining = true;
      clearTimeout(timer);
      const join = this.#readJoin(data, isBinary);
      const protocol =
        join.ok &&
        join.join.protocol !== undefined &&
        space.config.protocols.includes(join.join.protocol as MeupProtocol)
          ? (join.join.protocol as MeupProtocol)
          : this.#defaultProtocol('mew/v0.4');
      if (!join.ok) {
        metrics.inc('space_joins_refused_total', { reason: join.code });
        this.#refuseJoin(ws, undefined, protocol, join.code, join.message);
        return;
      }
      const requested = join.join.participantId;
      this.#o.auth.fromJoin(join.join, url).then(
        (result) => {
          ws.off('message', onMessage);
          ws.off('close', onClose);
          this.#pending.delete(ws);
          if (ws.readyState !== 1) return;
          if (!result.ok) {
            metrics.inc('space_joins_refused_total', { reason: 'auth' });
            this.#refuseJoin(ws, requested, protocol, result.code, result.message);
            return;
          }
          this.#admit(ws, result.identity, protocol, false, early);
        },
        (err: unknown) => {
          this.#o.logger.error({ err: String(err) }, 'space join failed');
          this.#refuseJoin(ws, requested, protocol, SpaceErrorCode.Internal, 'the join could not be checked');
        },
      );
    };
    ws.on('message', onMessage);
  }

  #readJoin(
    data: RawData,
    isBinary: boolean,
  ): { ok: true; join: JoinFrame } | { ok: false; code: SystemErrorCode; message: string } {
    const expected =
      'the first frame must be a join frame {"type":"join","token":...,"participantId":...} (or authenticate the upgrade with Authorization: Bearer)';
    if (isBinary) return { ok: false, code: SpaceErrorCode.Unauthorized, message: expected };
    let value: unknown;
    try {
      value = JSON.parse(rawText(data)) as unknown;
    } catch {
      return { ok: false, code: SpaceErrorCode.Unauthorized, message: `not JSON: ${expected}` };
    }
    const join = readJoinFrame(value);
    if (join.kind === 'other') return { ok: false, code: SpaceErrorCode.Unauthorized, message: expected };
    if (join.kind === 'invalid')
      return { ok: false, code: SpaceErrorCode.Unauthorized, message: join.message };
    const config = this.#o.space.config;
    if (join.join.space !== undefined && join.join.space !== config.name)
      return {
        ok: false,
        code: SpaceErrorCode.UnknownSpace,
        message: `this gateway hosts the space ${JSON.stringify(config.name)}, not ${JSON.stringify(join.join.space.slice(0, 64))}`,
      };
    if (join.join.protocol !== undefined && !config.protocols.includes(join.join.protocol as MeupProtocol))
      return {
        ok: false,
        code: 'invalid_protocol',
        message: `unsupported protocol ${JSON.stringify(join.join.protocol.slice(0, 40))}; accepted: ${config.protocols.join(', ')}`,
      };
    return { ok: true, join: join.join };
  }

  /** Refuses a join: a `system/error` (there is no envelope to correlate to), then close 1008. */
  #refuseJoin(
    ws: WebSocket,
    participant: string | undefined,
    protocol: MeupProtocol,
    code: SystemErrorCode,
    message: string,
  ): void {
    this.#pending.delete(ws);
    if (ws.readyState === 1) {
      const envelope = errorEnvelope({
        ...(participant === undefined ? {} : { to: participant }),
        code,
        message,
      });
      ws.send(JSON.stringify(encodeMeupEnvelope({ ...envelope, protocol })));
      ws.close(CloseCode.PolicyViolation, message.slice(0, 120));
    }
    setTimeout(() => ws.terminate(), 2000).unref();
  }

  #admit(
    ws: WebSocket,
    identity: SpaceIdentity,
    protocol: MeupProtocol,
    mayEchoJoin: boolean,
    early: readonly { data: RawData; isBinary: boolean }[],
  ): void {
    const { space, metrics, logger } = this.#o;
    if (space.participants.connectionCount(identity.id) >= space.config.maxConnectionsPerParticipant) {
      metrics.inc('space_joins_refused_total', { reason: 'limit' });
      this.#refuseJoin(
        ws,
        identity.id,
        protocol,
        SpaceErrorCode.TooManyConnections,
        `participant ${identity.id} has space.maxConnectionsPerParticipant connections already`,
      );
      return;
    }
    const connection = new WsSpaceConnection(ws, {
      id: `c${++this.#counter}`,
      participant: identity.id,
      roles: identity.roles,
      protocol,
      maxBufferedBytes: space.config.maxBufferedBytes,
      metrics,
      logger,
    });
    this.#connections.add(connection);
    let first = mayEchoJoin;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (first) {
        first = false;
        if (!isBinary && this.#agreeingJoin(connection, data)) return;
      }
      space.receive(connection, data, isBinary);
    });
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('close', () => {
      this.#connections.delete(connection);
      space.leave(connection);
    });
    logger.info(
      { participant: identity.id, via: identity.via, connection: connection.id },
      'space participant joined',
    );
    space.join(connection);
    for (const frame of early) space.receive(connection, frame.data, frame.isBinary);
  }

  /**
   * Whether the first frame of a connection authenticated on the upgrade is a join frame that
   * agrees with it (the MEW client always sends one): then it is swallowed. A disagreeing one is
   * left to the space, which refuses it (`already_joined`).
   */
  #agreeingJoin(connection: WsSpaceConnection, data: RawData): boolean {
    const text = rawText(data);
    if (!text.trimStart().startsWith('{') || text.length > 64 * 1024) return false;
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      return false;
    }
    const join = readJoinFrame(value);
    if (join.kind !== 'join') return false;
    const { participantId, space, protocol } = join.join;
    if (participantId !== undefined && participantId !== connection.participant) return false;
    if (space !== undefined && space !== this.#o.space.config.name) return false;
    if (protocol !== undefined) {
      if (!this.#o.space.config.protocols.includes(protocol as MeupProtocol)) return false;
      connection.protocol = protocol as MeupProtocol;
    }
    return true;
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
