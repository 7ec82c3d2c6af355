/**
 * The states the `switchboard_upstream_state` gauge tells apart: the words of `/ready`
 * (`observe/readiness.ts`), whose record of link states (`gateways/serve/link-states.ts`) the gauge reads
 * through the composition (`GatewaySources.upstreams`).
 */
import type { UpstreamReadyState } from '../readiness.js';

export type UpstreamState = UpstreamReadyState;

export const UPSTREAM_STATES: readonly UpstreamState[] = ['ready', 'starting', 'restarting', 'down', 'idle'];
