/**
 * Counters the gateway keeps about itself (malformed input, orphan responses, deprecations,
 * best-effort deliveries...). Cheap enough for the hot path: a few Map lookups per increment.
 * Exporters (Prometheus, OpenTelemetry) read `snapshot()`.
 *
 * Bounded: each counter name keeps at most {@link MAX_LABEL_SETS_PER_COUNTER} label sets. Some
 * label values come from outside (a method a client named, a status an upstream answered with);
 * the call sites map those to a fixed vocabulary (`prometheus/label-bounds.ts`), and this cap holds
 * whatever a call site forgets: an increment of a new label set past the cap is folded into the
 * counter's overflow label set (the same label names, every value `other`), and
 * {@link LABEL_SETS_FOLDED_METRIC}`{counter}` counts the increments so folded. Memory then stays
 * bounded by the counter names, which the code chooses.
 */
/** A counter's labels, by name. */
export type Labels = Readonly<Record<string, string>>;

/** Distinct label sets one counter name keeps; more are folded (see the file comment). */
export const MAX_LABEL_SETS_PER_COUNTER = 500;

/** Increments folded into a counter's overflow label set, by `counter` (the counter's name). */
export const LABEL_SETS_FOLDED_METRIC = 'metrics_label_sets_folded_total';

/** The value every label of an overflow label set has (as `label-bounds.ts`'s `OTHER`). */
const FOLDED = 'other';

/** The canonical key of a label set: names sorted, values JSON-quoted. */
function canonicalKey(name: string, labels: Labels): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${parts.join(',')}}`;
}

/**
 * Canonical keys by label set, found by walking the labels in the caller's key order (name, then
 * each label's name and value): the hot path pays a few Map lookups instead of a sort and JSON
 * quoting per increment. A path is made only for a label set the counters hold (never for a
 * folded one, nor by a `get`), so the trie is bounded as the counters are.
 */
interface KeyNode {
  key?: string;
  readonly next: Map<string, KeyNode>;
}

/** The key cached for `labels` under `root`, if a path was made for it. */
function findKey(root: KeyNode, name: string, labels: Labels): string | undefined {
  let node = root.next.get(name);
  for (const k in labels) {
    if (node === undefined) return undefined;
    node = node.next.get(k)?.next.get(labels[k] as string);
  }
  return node?.key;
}

/** Whether a label set has no labels: `inc(name)` and `inc(name, {})` count one series. */
function isEmpty(labels: Labels): boolean {
  for (const _ in labels) return false;
  return true;
}

function childOf(node: KeyNode, part: string): KeyNode {
  let child = node.next.get(part);
  if (child === undefined) {
    child = { next: new Map() };
    node.next.set(part, child);
  }
  return child;
}

/** Makes the path of `labels` under `root`, ending at `key`. */
function rememberKey(root: KeyNode, name: string, labels: Labels, key: string): void {
  let node = childOf(root, name);
  for (const k in labels) node = childOf(childOf(node, k), labels[k] as string);
  node.key = key;
}

/** One counter at one label set, as `snapshot` reads it. */
export interface CounterSample {
  /** The counter's name (e.g. `tap_errors_total`). */
  readonly name: string;
  /** Its labels, as the first increment gave them. */
  readonly labels: Labels;
  /** Its total so far. */
  readonly value: number;
}

interface Counter {
  readonly name: string;
  readonly labels: Labels;
  value: number;
}

/** The gateway's counters, in memory, created on their first increment and never reset. */
export class Metrics {
  readonly #counters = new Map<string, Counter>();
  /** How many label sets each counter name holds (its overflow label set not counted). */
  readonly #labelSets = new Map<string, number>();
  readonly #keys: KeyNode = { next: new Map() };

  /** Adds `by` (1 by default) to counter `name` at `labels` (the order of the labels does not matter). */
  inc(name: string, labels?: Labels, by = 1): void {
    this.#counter(name, labels).value += by;
  }

  /** The value of counter `name` at exactly `labels`; 0 if never counted. */
  get(name: string, labels?: Labels): number {
    if (labels === undefined || isEmpty(labels)) return this.#counters.get(name)?.value ?? 0;
    const key = findKey(this.#keys, name, labels) ?? canonicalKey(name, labels);
    return this.#counters.get(key)?.value ?? 0;
  }

  /** Sum over every label set of a counter. */
  total(name: string): number {
    let sum = 0;
    for (const entry of this.#counters.values()) if (entry.name === name) sum += entry.value;
    return sum;
  }

  /**
   * What the counters hold: their label sets, and the nodes of the key cache (walked: for tests
   * and the bound's own check, not the hot path).
   */
  footprint(): { readonly labelSets: number; readonly keyNodes: number } {
    let keyNodes = 0;
    const walk = (node: KeyNode): void => {
      for (const child of node.next.values()) {
        keyNodes++;
        walk(child);
      }
    };
    walk(this.#keys);
    return { labelSets: this.#counters.size, keyNodes };
  }

  /** Every counter at every label set, copied: a later increment does not change them. */
  snapshot(): CounterSample[] {
    return [...this.#counters.values()].map((e) => ({ ...e, labels: { ...e.labels } }));
  }

  /** The counter of a label set: found, made (under the cap), or the overflow one (past it). */
  #counter(name: string, labels: Labels | undefined, capped = true): Counter {
    if (labels === undefined || isEmpty(labels))
      return this.#made(name, name, {}, capped) ?? this.#folded(name, {});
    const cached = findKey(this.#keys, name, labels);
    if (cached !== undefined) return this.#counters.get(cached)!;
    const key = canonicalKey(name, labels);
    const counter = this.#made(key, name, labels, capped);
    if (counter === undefined) return this.#folded(name, labels);
    rememberKey(this.#keys, name, labels, key);
    return counter;
  }

  /** The counter under `key`, made if the cap allows; undefined if it does not. */
  #made(key: string, name: string, labels: Labels, capped: boolean): Counter | undefined {
    const known = this.#counters.get(key);
    if (known !== undefined) return known;
    const sets = this.#labelSets.get(name) ?? 0;
    if (capped && sets >= MAX_LABEL_SETS_PER_COUNTER) return undefined;
    const counter: Counter = { name, labels: { ...labels }, value: 0 };
    this.#counters.set(key, counter);
    if (capped) this.#labelSets.set(name, sets + 1);
    return counter;
  }

  /** The overflow counter of `name` for a label set past the cap, the fold counted. */
  #folded(name: string, labels: Labels): Counter {
    const other: Record<string, string> = {};
    for (const k in labels) other[k] = FOLDED;
    // The fold counter's own label sets are the counter names, which the code chooses; it is kept
    // out of the cap so that counting a fold can never fold (and recurse).
    if (name !== LABEL_SETS_FOLDED_METRIC)
      this.#counter(LABEL_SETS_FOLDED_METRIC, { counter: name }, false).value += 1;
    return this.#counter(name, other, false);
  }
}
