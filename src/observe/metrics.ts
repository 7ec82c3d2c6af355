/**
 * Counters the gateway keeps about itself (malformed input, orphan responses, deprecations,
 * best-effort deliveries...). Cheap enough for the hot path: one Map lookup per increment.
 * Exporters (Prometheus, OpenTelemetry) read `snapshot()`.
 */
export type Labels = Readonly<Record<string, string>>;

function keyOf(name: string, labels?: Labels): string {
  if (!labels) return name;
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${parts.join(',')}}`;
}

export interface CounterSample {
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}

export class Metrics {
  readonly #counters = new Map<string, { name: string; labels: Labels; value: number }>();

  inc(name: string, labels?: Labels, by = 1): void {
    const key = keyOf(name, labels);
    const entry = this.#counters.get(key);
    if (entry) entry.value += by;
    else this.#counters.set(key, { name, labels: labels ?? {}, value: by });
  }

  get(name: string, labels?: Labels): number {
    return this.#counters.get(keyOf(name, labels))?.value ?? 0;
  }

  /** Sum over every label set of a counter. */
  total(name: string): number {
    let sum = 0;
    for (const entry of this.#counters.values()) if (entry.name === name) sum += entry.value;
    return sum;
  }

  snapshot(): CounterSample[] {
    return [...this.#counters.values()].map((e) => ({ ...e }));
  }
}
