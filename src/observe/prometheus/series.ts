/**
 * Counters and histograms for the hot path: each call of the gateway updates a few of them, so a
 * series is found by one string key its caller builds from the label values (one Map lookup), and
 * its label object is made once, when the series first appears. prom-client's own `Counter` and
 * `Histogram` validate and hash the label object on every update (about 2 µs each here); these
 * cost a lookup and an add. They are registered in prom-client's `Registry` like its own metrics
 * (`get()` answers in the same shape), so the exposition does not tell them apart.
 */
import type { Registry } from 'prom-client';
import type { Family, Sample } from './exposition.js';

export type LabelValues = Readonly<Record<string, string>>;

export class CounterCell {
  value = 0;
  constructor(readonly labels: LabelValues) {}

  inc(by = 1): void {
    this.value += by;
  }
}

export class HistogramCell {
  /** Per bucket, the observations at or below its bound (not cumulative; `get()` adds them up). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: LabelValues,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (this.counts as Float64Array)[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** What prom-client's `Registry` needs of a metric: a name, and `get()` at each scrape. */
abstract class Family_<C> {
  readonly #cells = new Map<string, C>();

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    // The registry only stores it and calls `get()` (and `reset()` on `resetMetrics`).
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of `key`, made with `labels()` the first time. */
  cell(key: string, labels: () => LabelValues): C {
    let cell = this.#cells.get(key);
    if (cell === undefined) {
      cell = this.make(labels());
      this.#cells.set(key, cell);
    }
    return cell;
  }

  protected abstract make(labels: LabelValues): C;

  protected get cells(): IterableIterator<C> {
    return this.#cells.values();
  }

  /** How many series it has. */
  get size(): number {
    return this.#cells.size;
  }

  reset(): void {
    this.#cells.clear();
  }
}

export class CounterFamily extends Family_<CounterCell> {
  readonly type = 'counter';

  protected make(labels: LabelValues): CounterCell {
    return new CounterCell(labels);
  }

  async get(): Promise<Family> {
    const values: Sample[] = [];
    for (const cell of this.cells) values.push({ labels: cell.labels, value: cell.value });
    return { name: this.name, help: this.help, type: this.type, values };
  }
}

export class HistogramFamily extends Family_<HistogramCell> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(name: string, help: string, registry: Registry, bounds: readonly number[]) {
    super(name, help, registry);
    this.#bounds = [...bounds].sort((a, b) => a - b);
  }

  protected make(labels: LabelValues): HistogramCell {
    return new HistogramCell(labels, this.#bounds);
  }

  /** `_bucket` per bound (cumulative) and `+Inf`, `_sum` and `_count`, as prom-client writes them. */
  async get(): Promise<Family> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const cell of this.cells) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += cell.counts[i] as number;
        values.push({
          metricName: bucket,
          labels: { le: this.#bounds[i] as number, ...cell.labels },
          value: cumulative,
        });
      }
      values.push({ metricName: bucket, labels: { le: '+Inf', ...cell.labels }, value: cell.count });
      values.push({ metricName: `${this.name}_sum`, labels: cell.labels, value: cell.sum });
      values.push({ metricName: `${this.name}_count`, labels: cell.labels, value: cell.count });
    }
    return { name: this.name, help: this.help, type: this.type, values };
  }
}
