/**
 * Counters and histograms for the hot path: each call of the gateway updates a few of them, so
 * finding a series allocates nothing. A family has fixed label names; its caller fills the
 * family's `values` (one slot per label name, `undefined` for an absent label) and asks for
 * `cell()`, which walks a tree of Maps, one level per label, to the series. The label object is
 * made once, when the series first appears. (prom-client's own `Counter` and `Histogram` validate
 * and hash the label object on every update, about 2 µs each here; a string key joined from the
 * values costs its allocation and hashing on every call.) They are registered in prom-client's
 * `Registry` like its own metrics (`get()` answers in the same shape), so the exposition does not
 * tell them apart.
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

type Level = Map<string | undefined, unknown>;

/** What prom-client's `Registry` needs of a metric: a name, and `get()` at each scrape. */
abstract class Family_<C> {
  /**
   * The label values of the series `cell()` finds, by position in `labelNames`; `undefined` for a
   * label the series does not have. Filled by the caller before each `cell()` (single-threaded:
   * nothing runs between the two).
   */
  readonly values: (string | undefined)[];
  readonly #labelNames: readonly string[];
  readonly #root: Level = new Map();
  readonly #cells: C[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
    labelNames: readonly string[],
  ) {
    if (labelNames.length === 0) throw new Error(`${name}: a family has at least one label`);
    this.#labelNames = labelNames;
    this.values = labelNames.map(() => undefined);
    // The registry only stores it and calls `get()` (and `reset()` on `resetMetrics`).
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of the label values in `values`, made the first time they are seen. */
  cell(): C {
    const values = this.values;
    const last = values.length - 1;
    let level = this.#root;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]) as Level | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[i], next);
      }
      level = next;
    }
    let cell = level.get(values[last]) as C | undefined;
    if (cell === undefined) {
      cell = this.make(this.#labels());
      level.set(values[last], cell);
      this.#cells.push(cell);
    }
    return cell;
  }

  /** The label object of the values in `values`: the defined ones, by name. */
  #labels(): LabelValues {
    const labels: Record<string, string> = {};
    for (let i = 0; i < this.#labelNames.length; i++) {
      const value = this.values[i];
      if (value !== undefined) labels[this.#labelNames[i] as string] = value;
    }
    return labels;
  }

  protected abstract make(labels: LabelValues): C;

  protected get cells(): readonly C[] {
    return this.#cells;
  }

  /** How many series it has. */
  get size(): number {
    return this.#cells.length;
  }

  reset(): void {
    this.#root.clear();
    this.#cells.length = 0;
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

  constructor(
    name: string,
    help: string,
    registry: Registry,
    labelNames: readonly string[],
    bounds: readonly number[],
  ) {
    super(name, help, registry, labelNames);
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
