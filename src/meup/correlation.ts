/**
 * `correlation_id`: the envelope ids an envelope answers, fulfils, rejects or was built from
 * (seed 000, ADR-h2n). It is always an array on output and an unordered set: duplicates carry no
 * information and are removed (first occurrence kept, so output is deterministic), and two lists
 * with the same members are the same correlation whatever their order. `[]` is valid.
 *
 * Early peers send a bare string. ADR-h2n's migration path is implemented as two modes:
 * `accept` (the transition period: the string becomes a one-element array, and the sender is
 * warned about once and counted every time) and `strict` (the cut-over: the string is refused).
 */
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { MeupEnvelope } from './types.js';

/** How a string `correlation_id` is treated: converted with a deprecation warning, or refused. */
export type CorrelationMode = 'accept' | 'strict';

/** The mode used when none is configured: the transition period of ADR-h2n. */
export const DEFAULT_CORRELATION_MODE: CorrelationMode = 'accept';

/** The longest correlation element accepted: the same bound as an envelope id, which it names. */
export const MAX_CORRELATION_ELEMENT_LENGTH = 256;

/** The counter incremented on every accepted string correlation, labelled `{ sender }`. */
export const CORRELATION_STRING_COUNTER = 'meup_correlation_string_total';

/** The error codes `normalizeCorrelation` can return (a subset of the codec's `MeupErrorCode`). */
export const CorrelationErrorCode = {
  InvalidCorrelationId: 'invalid_correlation_id',
  CorrelationStringRejected: 'correlation_string_rejected',
} as const;

/** One of the `CorrelationErrorCode` values. */
export type CorrelationErrorCode = (typeof CorrelationErrorCode)[keyof typeof CorrelationErrorCode];

/** The result of normalising a raw `correlation_id` value; never thrown, always returned. */
export type CorrelationResult =
  | {
      readonly ok: true;
      /** Deduplicated, first occurrence kept. */
      readonly correlation: readonly string[];
      /** True when the input was a bare string (the deprecated form) that was converted. */
      readonly fromString: boolean;
    }
  | { readonly ok: false; readonly code: CorrelationErrorCode; readonly message: string };

/** What `CorrelationMigration` reports to: both optional so that either can be left out. */
export interface CorrelationMigrationOptions {
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /**
   * How many distinct senders are remembered for the once-per-sender warning (default 10 000).
   * `from` is not authenticated when the codec runs, so without a bound a peer inventing senders
   * could grow the set forever; past the bound one final warning says per-sender warnings stop.
   */
  readonly maxTrackedSenders?: number;
}

/**
 * Bookkeeping for the transition period: each string correlation accepted is counted in
 * `meup_correlation_string_total{sender}`, and the first one from each sender is logged as a
 * deprecation warning naming the sender, so operators can find the peers that must upgrade
 * before `strict` is switched on, without one chatty peer flooding the log. Share one instance
 * across every codec call of a gateway.
 */
export class CorrelationMigration {
  readonly #logger: Logger | undefined;
  readonly #metrics: Metrics | undefined;
  readonly #maxTracked: number;
  readonly #warned = new Set<string>();
  #saturated = false;

  constructor(options: CorrelationMigrationOptions = {}) {
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#maxTracked = options.maxTrackedSenders ?? 10_000;
  }

  /** Records one string correlation accepted from `sender`. */
  recordStringCorrelation(sender: string): void {
    this.#metrics?.inc(CORRELATION_STRING_COUNTER, { sender });
    if (this.#warned.has(sender) || this.#saturated) return;
    if (this.#warned.size >= this.#maxTracked) {
      this.#saturated = true;
      this.#logger?.warn(
        { event: 'meup_correlation_string', tracked_senders: this.#warned.size },
        'too many distinct senders use a string correlation_id; further per-sender deprecation warnings are suppressed (the counter still counts)',
      );
      return;
    }
    this.#warned.add(sender);
    this.#logger?.warn(
      { event: 'meup_correlation_string', sender },
      `deprecated: ${sender} sent correlation_id as a string; MEUP requires an array of envelope ids (accepted as a one-element array for now)`,
    );
  }

  /** Whether `sender` has already been warned about. */
  hasWarned(sender: string): boolean {
    return this.#warned.has(sender);
  }

  /** How many distinct senders have been warned about. */
  get warnedSenderCount(): number {
    return this.#warned.size;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function elementProblem(element: unknown): string | undefined {
  if (typeof element !== 'string') return `is ${describe(element)}, not a string`;
  if (element.length === 0) return 'is an empty string';
  if (element.length > MAX_CORRELATION_ELEMENT_LENGTH) {
    return `is longer than ${MAX_CORRELATION_ELEMENT_LENGTH} characters`;
  }
  return undefined;
}

/**
 * Normalises a raw `correlation_id` value (the caller handles absence). An array of non-empty
 * strings of at most 256 characters is deduplicated; anything else in it is `invalid_correlation_id`.
 * A bare string is converted to a one-element array in `accept` mode (recorded on `migration`
 * under `sender`, default `"unknown"`) and refused with `correlation_string_rejected` in `strict`
 * mode. Any other type is `invalid_correlation_id`. Never throws.
 */
export function normalizeCorrelation(
  raw: unknown,
  mode: CorrelationMode = DEFAULT_CORRELATION_MODE,
  sender?: string,
  migration?: CorrelationMigration,
): CorrelationResult {
  if (typeof raw === 'string') {
    if (mode === 'strict') {
      return {
        ok: false,
        code: CorrelationErrorCode.CorrelationStringRejected,
        message: 'correlation_id must be an array of envelope ids; the string form is no longer accepted',
      };
    }
    const problem = elementProblem(raw);
    if (problem !== undefined) {
      return {
        ok: false,
        code: CorrelationErrorCode.InvalidCorrelationId,
        message: `correlation_id ${problem}`,
      };
    }
    migration?.recordStringCorrelation(sender ?? 'unknown');
    return { ok: true, correlation: [raw], fromString: true };
  }
  if (!Array.isArray(raw)) {
    return {
      ok: false,
      code: CorrelationErrorCode.InvalidCorrelationId,
      message: `correlation_id must be an array of envelope ids, got ${describe(raw)}`,
    };
  }
  const elements: unknown[] = raw;
  for (let i = 0; i < elements.length; i++) {
    const problem = elementProblem(elements[i]);
    if (problem !== undefined) {
      return {
        ok: false,
        code: CorrelationErrorCode.InvalidCorrelationId,
        message: `correlation_id[${i}] ${problem}`,
      };
    }
  }
  return { ok: true, correlation: mergeCorrelation(elements as string[]), fromString: false };
}

/**
 * The first correlation, or `undefined` when there is none: a convenience for kinds that in
 * practice answer one envelope. Code that acts on correlations (resolving requests, rejecting
 * proposals) must read them all, since an envelope may answer several at once.
 */
export function getSingleCorrelation(envelope: Pick<MeupEnvelope, 'correlationId'>): string | undefined {
  return envelope.correlationId?.[0];
}

/**
 * Whether two correlations name the same set of envelopes. Order and repetition are ignored, and
 * an absent correlation equals `[]` (both correlate with nothing).
 */
export function sameCorrelationSet(
  a: readonly string[] | undefined,
  b: readonly string[] | undefined,
): boolean {
  const left = new Set(a ?? []);
  const right = new Set(b ?? []);
  if (left.size !== right.size) return false;
  for (const id of left) if (!right.has(id)) return false;
  return true;
}

/** The union of correlation lists, without duplicates, in order of first occurrence. */
export function mergeCorrelation(...lists: readonly (readonly string[] | undefined)[]): string[] {
  const seen = new Set<string>();
  for (const list of lists) for (const id of list ?? []) seen.add(id);
  return [...seen];
}
