/**
 * The MEUP envelope (protocol `meup/v0.2`; `mew/v0.3` and `mew/v0.4` are compatible dialects).
 *
 * The TypeScript API uses `correlationId` (always an array, an unordered set of envelope ids);
 * the wire uses `correlation_id`. Only the codec (`codec.ts`) and `wire.ts` know both spellings.
 */
export const MEUP_PROTOCOL = 'meup/v0.2';
export const MEW_DIALECTS = ['mew/v0.3', 'mew/v0.4'] as const;
export type MeupProtocol = typeof MEUP_PROTOCOL | (typeof MEW_DIALECTS)[number];
export const MEUP_PROTOCOLS: readonly MeupProtocol[] = [MEUP_PROTOCOL, ...MEW_DIALECTS];

export interface MeupEnvelope {
  readonly protocol: MeupProtocol;
  /** Globally unique; the gateway's ids are time-sortable and valid context segments. */
  readonly id: string;
  /** RFC 3339 timestamp. */
  readonly ts: string;
  readonly from: string;
  /** Recipients; absent or empty means everyone. */
  readonly to?: readonly string[];
  readonly kind: string;
  /** Envelope ids this one answers, fulfils, rejects or was built from (deduplicated, unordered). */
  readonly correlationId?: readonly string[];
  /** Hierarchical path `root/child/...` (seed 004). */
  readonly context?: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** The envelope exactly as it is written on the wire (snake_case `correlation_id`). */
export interface MeupWireEnvelope {
  protocol: string;
  id: string;
  ts: string;
  from: string;
  to?: string[];
  kind: string;
  correlation_id?: string[];
  context?: string;
  payload: Record<string, unknown>;
}
