// Shared statistics and number formatting. Latencies are kept in nanoseconds or microseconds as plain
// numbers; every suite reports medians over repeats of per-repeat percentiles.

/** Nearest-rank percentile of an ascending-sorted array (p in 0..100). */
export function percentileSorted(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** p50/p90/p99/mean/min/max of a list of samples (any unit). */
export function summarize(samples) {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    min: sorted.length ? sorted[0] : Number.NaN,
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : Number.NaN,
  };
}

/** The median of numbers (the mean of the middle two for an even count); NaN for none. */
export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Smallest and largest finite value, for "median (min–max)" cells. */
export function range(values) {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length ? [Math.min(...v), Math.max(...v)] : [Number.NaN, Number.NaN];
}

/** Rotates an array by k places: rotate([a,b,c], 1) = [b,c,a]. Used to vary the order between repeats. */
export function rotate(list, k) {
  const n = list.length;
  if (n === 0) return [];
  const s = ((k % n) + n) % n;
  return [...list.slice(s), ...list.slice(0, s)];
}

const nf = (digits) =>
  new Intl.NumberFormat('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function fmtNum(value, digits = 0) {
  return Number.isFinite(value) ? nf(digits).format(value) : 'n/a';
}

/** Microseconds, chosen precision: 12.3 µs, 456 µs, 1,234 µs. */
export function fmtUs(us) {
  if (!Number.isFinite(us)) return 'n/a';
  return `${fmtNum(us, Math.abs(us) < 100 ? 1 : 0)} µs`;
}

/** Signed microseconds: +12.3 µs / −4.0 µs. */
export function fmtUsSigned(us) {
  if (!Number.isFinite(us)) return 'n/a';
  return `${us >= 0 ? '+' : '−'}${fmtUs(Math.abs(us))}`;
}

/** Milliseconds from microseconds: 1.23 ms, 45.6 ms. */
export function fmtMsFromUs(us) {
  if (!Number.isFinite(us)) return 'n/a';
  const ms = us / 1000;
  return `${fmtNum(ms, ms < 10 ? 2 : 1)} ms`;
}

export function fmtRatio(r) {
  return Number.isFinite(r) ? `${fmtNum(r, 2)}×` : 'n/a';
}

export function fmtBytes(bytes) {
  if (!Number.isFinite(bytes)) return 'n/a';
  const abs = Math.abs(bytes);
  if (abs >= 1024 * 1024) return `${fmtNum(bytes / (1024 * 1024), 1)} MiB`;
  if (abs >= 1024) return `${fmtNum(bytes / 1024, 1)} KiB`;
  return `${fmtNum(bytes, 0)} B`;
}

/** A "median (min–max over n repeats)" cell. */
export function fmtSpread(values, fmt) {
  const [lo, hi] = range(values);
  if (values.length <= 1) return fmt(median(values));
  return `${fmt(median(values))} <sub>(${fmt(lo)}–${fmt(hi)})</sub>`;
}
