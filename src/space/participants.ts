/**
 * Who is in the space: participants, their connections and what each may send. A participant is
 * present while it has at least one connection (presence `join` on the first, `leave` on the
 * last). Its capabilities are its configuration entry's (else `space.defaults.capabilities`) plus
 * the grants it holds. The gateway's own participants are listed too: `server-<name>` for every
 * upstream, which answer `mcp/request`s; they never connect.
 */
import type { SpaceConfig } from '../config/sections/space.js';
import { type CompiledCapability, compileCapability } from './capability-matcher.js';
import type { CapabilityPattern } from './capability-pattern.js';
import { GrantBook } from './grants.js';
import { GATEWAY_ID } from './participant-id.js';
import type { SpaceConnection } from './space-connection.js';
import type { ParticipantView } from './system-envelopes.js';

/** What a server participant may send: the answers to requests and their notifications. */
const SERVER_CAPABILITIES: readonly CapabilityPattern[] = [
  { kind: 'mcp/response' },
  { kind: 'mcp/notification' },
];

interface StaticEntry {
  readonly capabilities: readonly CapabilityPattern[];
  readonly compiled: readonly CompiledCapability[];
  readonly observe: boolean;
}

export function serverParticipantId(upstream: string): string {
  return `server-${upstream}`;
}

export class Participants {
  readonly grants: GrantBook;
  readonly #configured = new Map<string, StaticEntry>();
  readonly #defaults: StaticEntry;
  readonly #servers: ReadonlyMap<string, string>;
  readonly #connections = new Map<string, Set<SpaceConnection>>();

  constructor(config: Pick<SpaceConfig, 'defaults' | 'participants'>, upstreams: readonly string[]) {
    this.grants = new GrantBook();
    const entry = (capabilities: readonly CapabilityPattern[], observe: boolean): StaticEntry => ({
      capabilities,
      compiled: capabilities.map(compileCapability),
      observe,
    });
    this.#defaults = entry(config.defaults.capabilities, config.defaults.observe);
    for (const p of config.participants) {
      this.#configured.set(
        p.id,
        entry(p.capabilities ?? config.defaults.capabilities, p.observe ?? config.defaults.observe),
      );
    }
    this.#servers = new Map(upstreams.map((name) => [serverParticipantId(name), name]));
  }

  /** Adds a connection; true when its participant was not present before (presence `join`). */
  connect(connection: SpaceConnection): boolean {
    let set = this.#connections.get(connection.participant);
    const first = set === undefined;
    if (!set) {
      set = new Set();
      this.#connections.set(connection.participant, set);
    }
    set.add(connection);
    return first;
  }

  /** Removes a connection; true when it was its participant's last (presence `leave`). */
  disconnect(connection: SpaceConnection): boolean {
    const set = this.#connections.get(connection.participant);
    if (!set?.delete(connection)) return false;
    if (set.size > 0) return false;
    this.#connections.delete(connection.participant);
    return true;
  }

  connectionsOf(id: string): ReadonlySet<SpaceConnection> {
    return this.#connections.get(id) ?? EMPTY;
  }

  connectionCount(id: string): number {
    return this.#connections.get(id)?.size ?? 0;
  }

  /** Every connection, or every one but `except`: a new array (a broadcast's recipients, made per envelope). */
  allConnections(except?: SpaceConnection): SpaceConnection[] {
    const all: SpaceConnection[] = [];
    for (const set of this.#connections.values()) for (const c of set) if (c !== except) all.push(c);
    return all;
  }

  /** Ids of the participants present (with at least one connection). */
  present(): string[] {
    return [...this.#connections.keys()];
  }

  /** The upstream a `server-<name>` id stands for, or undefined. */
  serverOf(id: string): string | undefined {
    return this.#servers.get(id);
  }

  get serverIds(): readonly string[] {
    return [...this.#servers.keys()];
  }

  /**
   * Whether `to` may name `id`: present, configured, holding a grant, the gateway, or a server
   * participant. (The space adds the MCP clients whose proposals are open.)
   */
  isKnown(id: string): boolean {
    return (
      this.#connections.has(id) ||
      this.#configured.has(id) ||
      this.#servers.has(id) ||
      id === GATEWAY_ID ||
      this.grants.holds(id)
    );
  }

  /** Every capability `id` holds, compiled: its static ones, then its grants'. */
  compiledCapabilities(id: string): CompiledCapability[] {
    const base = this.#static(id).compiled;
    const granted = this.grants.of(id).flatMap((g) => g.compiled);
    return granted.length === 0 ? [...base] : [...base, ...granted];
  }

  /** Every capability `id` holds, as patterns (what welcome and capability_violation show). */
  capabilities(id: string): CapabilityPattern[] {
    if (this.#servers.has(id)) return [...SERVER_CAPABILITIES];
    return [...this.#static(id).capabilities, ...this.grants.of(id).flatMap((g) => g.capabilities)];
  }

  /** Whether `id` receives the MCP traffic of the gateway. */
  observes(id: string): boolean {
    return this.#static(id).observe;
  }

  view(id: string): ParticipantView {
    return { id, capabilities: this.capabilities(id) };
  }

  #static(id: string): StaticEntry {
    return this.#configured.get(id) ?? this.#defaults;
  }
}

const EMPTY: ReadonlySet<SpaceConnection> = new Set();
