/**
 * Human units in the configuration file: durations (`250ms`, `30s`, `10m`, `1h`, `1d`) and sizes
 * (`512`, `64KiB`, `4MiB`, `1GB`). The validated configuration holds plain milliseconds and bytes;
 * these parsers are the one place that converts, and the formatters are their inverses, so that
 * `config show` prints values a person would write and that read back to the same numbers.
 */

/**
 * The outcome of parsing a unit value. On failure, `expected` says what is allowed (it becomes the
 * `expected` of a configuration issue) and `message` is a complete sentence for other callers.
 */
export type UnitResult =
  | { readonly ok: true; readonly value: number }
  | { readonly ok: false; readonly expected: string; readonly message: string };

/** Milliseconds per duration unit, largest first (the formatter relies on the order). */
export const DURATION_UNITS: Readonly<Record<string, number>> = {
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
};

/** Bytes per size unit: IEC units are powers of 1024, SI units powers of 1000. */
export const SIZE_UNITS: Readonly<Record<string, number>> = {
  GiB: 1024 ** 3,
  MiB: 1024 ** 2,
  KiB: 1024,
  GB: 1000 ** 3,
  MB: 1000 ** 2,
  KB: 1000,
  kB: 1000,
  B: 1,
};

const DURATION_EXPECTED =
  'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h)';
const SIZE_EXPECTED =
  'a size: a whole number of bytes or a number with a unit B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000), e.g. 64KiB, 4MiB';

const QUANTITY = /^(\d*)(?:\.(\d+))?\s?([A-Za-z]*)$/;

/** A short rendering of an input, for messages. */
function show(input: unknown): string {
  if (typeof input === 'string')
    return JSON.stringify(input.length > 40 ? `${input.slice(0, 37)}...` : input);
  if (typeof input === 'number')
    return Number.isFinite(input) ? String(input) : input > 0 ? '.inf' : String(input);
  if (input === null || input === undefined) return 'nothing';
  if (Array.isArray(input)) return 'a list';
  return typeof input === 'object' ? 'a map' : String(input);
}

function fail(input: unknown, kind: string, expected: string): UnitResult {
  return { ok: false, expected, message: `${show(input)} is not ${kind}: expected ${expected}` };
}

interface Scale {
  readonly kind: 'a duration' | 'a size';
  readonly units: Readonly<Record<string, number>>;
  /** The unit names listed in messages. */
  readonly unitList: string;
  readonly expected: string;
  /** What a plain number counts: `milliseconds` or `bytes`. */
  readonly base: string;
  readonly fractionExample: string;
}

const DURATION: Scale = {
  kind: 'a duration',
  units: DURATION_UNITS,
  unitList: 'ms, s, m, h or d',
  expected: DURATION_EXPECTED,
  base: 'milliseconds',
  fractionExample: '1.5s',
};

const SIZE: Scale = {
  kind: 'a size',
  units: SIZE_UNITS,
  unitList: 'B, KiB, MiB, GiB, KB, MB or GB',
  expected: SIZE_EXPECTED,
  base: 'bytes',
  fractionExample: '1.5MiB',
};

function parseQuantity(input: unknown, scale: Scale): UnitResult {
  const whole = `a whole number of ${scale.base} (use a unit for fractions, e.g. ${scale.fractionExample})`;
  if (typeof input === 'number') {
    if (Number.isSafeInteger(input) && input >= 0) return { ok: true, value: input };
    if (Number.isFinite(input) && input > 0 && input < Number.MAX_SAFE_INTEGER)
      return fail(input, scale.kind, whole);
    return fail(input, scale.kind, scale.expected);
  }
  if (typeof input !== 'string') return fail(input, scale.kind, scale.expected);
  const match = QUANTITY.exec(input.trim());
  const [, intDigits = '', fracDigits = '', unit = ''] = match ?? [];
  if (!match || (intDigits === '' && fracDigits === '')) return fail(input, scale.kind, scale.expected);
  const factor = unit === '' ? 1 : scale.units[unit];
  if (factor === undefined) {
    return fail(input, scale.kind, `a unit ${scale.unitList} after the number, not "${unit}"`);
  }
  if (unit === '' && fracDigits !== '') return fail(input, scale.kind, whole);
  // Exact arithmetic: `1.1s` is 1100 ms, and `1.0000001GiB` is not a whole number of bytes.
  const scaleDown = 10n ** BigInt(fracDigits.length);
  const numerator = BigInt(`${intDigits}${fracDigits}` || '0') * BigInt(factor);
  if (numerator % scaleDown !== 0n) {
    return fail(input, scale.kind, `a whole number of ${scale.base}`);
  }
  const value = numerator / scaleDown;
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    return fail(input, scale.kind, `at most ${Number.MAX_SAFE_INTEGER} ${scale.base}`);
  }
  return { ok: true, value: Number(value) };
}

/**
 * Parses a duration into milliseconds. Accepts a non-negative integer (milliseconds, as YAML gives
 * `0` or `1500`) or a string: an optional decimal number and one unit (`250ms`, `1.5s`, `10m`, `1h`,
 * `1d`; a bare `"1500"` is milliseconds). The result must be a whole number of milliseconds.
 * Negative values, `.inf` and compound forms (`1h30m`: write `90m`) are rejected.
 */
export function parseDuration(input: unknown): UnitResult {
  return parseQuantity(input, DURATION);
}

/**
 * Parses a size into bytes. Accepts a non-negative integer (bytes) or a string: a number and an
 * optional unit, `B`, `KiB`, `MiB`, `GiB` (powers of 1024) or `KB`/`kB`, `MB`, `GB` (powers of
 * 1000), with at most one space between (`4MiB`, `4 MiB`, `1.5MiB`). The result must be whole bytes.
 */
export function parseSize(input: unknown): UnitResult {
  return parseQuantity(input, SIZE);
}

/**
 * The shortest exact rendering of a millisecond count in the largest unit that divides it
 * (`90000` -> `90s`, `5400000` -> `90m`, `0` -> `0`). `parseDuration(formatDuration(ms))` is `ms`.
 */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, factor] of Object.entries(DURATION_UNITS)) {
    if (ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * The exact rendering of a byte count in the largest IEC unit that divides it (`4194304` ->
 * `4MiB`), else the largest SI unit that does (`2000` -> `2KB`), else bytes as a plain number.
 * `parseSize(formatSize(bytes))` is `bytes`.
 */
export function formatSize(bytes: number): string {
  if (bytes === 0) return '0';
  for (const unit of ['GiB', 'MiB', 'KiB', 'GB', 'MB', 'KB'] as const) {
    const factor = SIZE_UNITS[unit] ?? 1;
    if (bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return String(bytes);
}
