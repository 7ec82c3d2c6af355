/**
 * Counters the gateway keeps about itself (malformed input, orphan responses, deprecations,
 * best-effort deliveries...). Cheap enough for the hot path: one Map lookup per increment.
 * Exporters (Prometheus, OpenTelemetry) read `snapshot()`.
 */
/** A counter's labels, by name. */
export type Labels = Readonly<Record<string, string>>;

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
 * quoting per increment. It holds one entry per label set ever counted, as the counters do.
 */
interface KeyNode {
  key?: string;
  readonly next: Map<string, KeyNode>;
}

const keyRoot: KeyNode = { next: new Map() };

function childOf(node: KeyNode, part: string): KeyNode {
  let child = node.next.get(part);
  if (child === undefined) {
    child = { next: new Map() };
    node.next.set(part, child);
  }
  return child;
}

function keyOf(name: string, labels?: Labels): string {
  if (!labels) return name;
  let node = childOf(keyRoot, name);
  for (const k in labels) node = childOf(childOf(node, k), labels[k] as string);
  node.key ??= canonicalKey(name, labels);
  return node.key;
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

/** The gateway's counters, in memory, created on their first increment and never reset. */
export class Metrics {
  readonly #counters = new Map<string, { name: string; labels: Labels; value: number }>();

  /** Adds `by` (1 by default) to counter `name` at `labels` (the order of the labels does not matter). */
  inc(name: string, labels?: Labels, by = 1): void {
    const key = keyOf(name, labels);
    const entry = this.#counters.get(key);
    if (entry) entry.value += by;
    else this.#counters.set(key, { name, labels: labels ?? {}, value: by });
  }

  /** The value of counter `name` at exactly `labels`; 0 if never counted. */
  get(name: string, labels?: Labels): number {
    return this.#counters.get(keyOf(name, labels))?.value ?? 0;
  }

  /** Sum over every label set of a counter. */
  total(name: string): number {
    let sum = 0;
    for (const entry of this.#counters.values()) if (entry.name === name) sum += entry.value;
    return sum;
  }

  /** Every counter at every label set, copied: a later increment does not change them. */
  snapshot(): CounterSample[] {
    return [...this.#counters.values()].map((e) => ({ ...e }));
  }
}
