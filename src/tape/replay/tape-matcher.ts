/**
 * Which recorded request answers a live one: the replay's one decision, pure and synchronous (no
 * clock, no I/O), so it is tested on its own with generated sessions.
 *
 * A request matches a recorded one when their keys are equal: the method and the normalised params
 * (`request-key.ts`: ids, progress tokens, trace context and transport/gateway `_meta` ignored,
 * key order irrelevant). What happens then depends on the mode:
 *
 * - `strict`: the live client must send the recorded requests in the recorded order. Only the
 *   next recorded request can match; anything else is a miss (reason `out-of-order` when it
 *   matches a later one, `not-recorded` otherwise), and the position does not move.
 * - `match` (the default): any order, each recorded answer given once; identical requests are
 *   answered in recorded order (the first unused one). Once every identical request has been
 *   answered, another is a miss (`used-up`).
 * - `loose`: as `match`, and then never a miss while the method was recorded: when every identical
 *   request was answered the last of them is answered again (`reused`), and a request whose params
 *   were never recorded gets the answer of the closest recorded request of the same method (the
 *   fewest differing JSON paths, the unused first, then the earliest), with the differences
 *   reported (`approximate`), so the server can warn. A method never recorded is still a miss.
 *
 * Requests marked `reusable` (the replay marks the list methods: `tools/list`, `prompts/list`,
 * `resources/list`, `resources/templates/list`) stand outside the order in every mode: they match
 * whenever their key is recorded, any number of times, the first unused one first, then the last.
 *
 * A recorded value `[REDACTED]` (a secret the recorder cut) matches any value the live client sends
 * in its place, so a tape recorded without `--keep-secrets` still answers the request.
 *
 * A miss names the closest recorded request and how it differs, which the replay turns into the
 * `SB_TAPE_NO_MATCH` error.
 */
import type { JsonValue } from '../../audit/canonical-json.js';
import { REDACTED } from '../../audit/redaction.js';
import { diffSize, type JsonDifference, jsonPathDiff } from './json-path-diff.js';
import { normaliseParams, requestKey } from './request-key.js';

export type MatchMode = 'strict' | 'match' | 'loose';

export const MATCH_MODES: readonly MatchMode[] = ['strict', 'match', 'loose'];

/** A recorded client request: where it is on the tape, its method and params as recorded. */
export interface RecordedRequest {
  readonly seq: number;
  readonly method: string;
  readonly params?: unknown;
}

/** The recorded request closest to a live one that matched nothing, and how they differ. */
export interface Closest {
  readonly seq: number;
  readonly method: string;
  /** The differing JSON paths of the normalised params (at most five); empty when equal. */
  readonly differences: readonly JsonDifference[];
}

export type MissReason =
  /** No recorded request has this key. */
  | 'not-recorded'
  /** strict: the key is recorded, but later than the next expected request. */
  | 'out-of-order'
  /** match: every recorded request with this key has been answered already. */
  | 'used-up';

export type MatchOutcome =
  | {
      readonly kind: 'hit';
      /** The recorded request whose answer replays. */
      readonly seq: number;
      /** Its answer was given before (loose, or a reusable request). */
      readonly reused: boolean;
      /** loose: the params differ from the recorded ones (the closest of the method was taken). */
      readonly approximate?: readonly JsonDifference[];
    }
  | {
      readonly kind: 'miss';
      readonly reason: MissReason;
      /** The closest recorded request (the expected one in strict mode); absent on an empty tape. */
      readonly closest?: Closest;
    };

interface Entry {
  readonly seq: number;
  readonly method: string;
  readonly key: string;
  readonly params: JsonValue | undefined;
  readonly reusable: boolean;
  /** The recorded params hold a `[REDACTED]` secret, which matches any value (`json-path-diff.ts`). */
  readonly wildcard: boolean;
  used: boolean;
}

export class TapeMatcher {
  readonly #mode: MatchMode;
  readonly #entries: readonly Entry[];
  /** strict: the index in `#ordered` of the next expected request. */
  #next = 0;
  /** The entries that take part in the order (not reusable), in tape order. */
  readonly #ordered: readonly Entry[];
  /** The entries by key (those with a recorded secret apart: they are compared one by one). */
  readonly #byKey = new Map<string, Entry[]>();
  readonly #wildcards: Entry[] = [];

  constructor(
    recorded: readonly RecordedRequest[],
    mode: MatchMode,
    reusable: (method: string) => boolean = () => false,
  ) {
    this.#mode = mode;
    this.#entries = [...recorded]
      .sort((a, b) => a.seq - b.seq)
      .map((r) => ({
        seq: r.seq,
        method: r.method,
        key: requestKey(r.method, r.params),
        params: normaliseParams(r.params),
        reusable: reusable(r.method),
        wildcard: JSON.stringify(r.params ?? null).includes(JSON.stringify(REDACTED)),
        used: false,
      }));
    this.#ordered = this.#entries.filter((e) => !e.reusable);
    for (const e of this.#entries) {
      if (e.wildcard) this.#wildcards.push(e);
      else this.#byKey.set(e.key, [...(this.#byKey.get(e.key) ?? []), e]);
    }
  }

  get mode(): MatchMode {
    return this.#mode;
  }

  /** How many recorded (non-reusable) requests have not been answered yet. */
  get remaining(): number {
    return this.#ordered.filter((e) => !e.used).length;
  }

  /** Decides which recorded request answers `method` with `params`, and marks it answered. */
  match(method: string, params: unknown): MatchOutcome {
    const key = requestKey(method, params);
    const got = normaliseParams(params);
    const same = this.#sameAs(key, method, got);
    if (same.length > 0 && same.every((e) => e.reusable)) return this.#take(same, true);
    if (this.#mode === 'strict') return this.#strict(key, method, params, got);
    const unused = same.filter((e) => !e.used);
    if (unused.length > 0) return this.#take(unused, false);
    if (same.length > 0) {
      if (this.#mode === 'loose') return this.#take(same, true);
      return { kind: 'miss', reason: 'used-up', closest: this.#closestTo(same.at(-1) as Entry, params) };
    }
    if (this.#mode === 'loose') {
      const nearest = this.#nearest(method, params, (e) => e.method === method);
      if (nearest) {
        const wasUsed = nearest.used;
        nearest.used = true;
        return {
          kind: 'hit',
          seq: nearest.seq,
          reused: wasUsed,
          approximate: jsonPathDiff(nearest.params, normaliseParams(params)),
        };
      }
    }
    const nearest = this.#nearest(method, params, () => true);
    return {
      kind: 'miss',
      reason: 'not-recorded',
      ...(nearest ? { closest: this.#closestTo(nearest, params) } : {}),
    };
  }

  /** The recorded requests that are request `key`, in tape order. */
  #sameAs(key: string, method: string, got: JsonValue | undefined): Entry[] {
    const exact = this.#byKey.get(key) ?? [];
    const secret = this.#wildcards.filter((e) => this.#same(e, key, method, got));
    return secret.length === 0 ? exact : [...exact, ...secret].sort((a, b) => a.seq - b.seq);
  }

  /** Whether recorded `e` is the request `key` (equal keys, or equal but for recorded secrets). */
  #same(e: Entry, key: string, method: string, got: JsonValue | undefined): boolean {
    return e.key === key || (e.wildcard && e.method === method && diffSize(e.params, got) === 0);
  }

  #strict(key: string, method: string, params: unknown, got: JsonValue | undefined): MatchOutcome {
    const expected = this.#ordered[this.#next];
    if (expected && this.#same(expected, key, method, got)) {
      expected.used = true;
      this.#next++;
      return { kind: 'hit', seq: expected.seq, reused: false };
    }
    const later = this.#sameAs(key, method, got).some(
      (e) => !e.reusable && this.#ordered.indexOf(e) >= this.#next,
    );
    const closest = expected ?? this.#nearest(method, params, () => true);
    return {
      kind: 'miss',
      reason: later ? 'out-of-order' : 'not-recorded',
      ...(closest ? { closest: this.#closestTo(closest, params) } : {}),
    };
  }

  /** Answers with the first unused of `candidates` (tape order), else the last of them. */
  #take(candidates: readonly Entry[], reusable: boolean): MatchOutcome {
    const entry = candidates.find((e) => !e.used) ?? (candidates.at(-1) as Entry);
    const reused = entry.used;
    entry.used = true;
    return { kind: 'hit', seq: entry.seq, reused: reusable ? reused : false };
  }

  /** The entry passing `filter` closest to the request: same method first, fewest differences, unused, earliest. */
  #nearest(method: string, params: unknown, filter: (e: Entry) => boolean): Entry | undefined {
    const got = normaliseParams(params);
    let best: { entry: Entry; score: readonly number[] } | undefined;
    for (const entry of this.#entries) {
      if (!filter(entry)) continue;
      const score = [entry.method === method ? 0 : 1, diffSize(entry.params, got), entry.used ? 1 : 0];
      if (!best || less(score, best.score)) best = { entry, score };
    }
    return best?.entry;
  }

  #closestTo(entry: Entry, params: unknown): Closest {
    return {
      seq: entry.seq,
      method: entry.method,
      differences: jsonPathDiff(entry.params, normaliseParams(params)),
    };
  }
}

/** Lexicographic order of two scores of the same length. */
function less(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    if ((a[i] as number) !== (b[i] as number)) return (a[i] as number) < (b[i] as number);
  }
  return false;
}
