/** ISO 8601 timestamps on hot paths (trace envelopes, audit records). */

/** The minute of the last call and its ISO text up to the minute (`2026-11-22T01:02:`). */
let isoMinute = Number.NaN;
let isoPrefix = '';

/**
 * An epoch-ms time as ISO 8601, exactly `new Date(ms).toISOString()` (MEUP's `ts`, the ledger's
 * `ts`): the part up to the minute is kept from the previous call, since consecutive calls share it.
 */
export function isoTimestamp(ms: number): string {
  // What `Date` does with a fractional time (TimeClip): truncate.
  const whole = Math.trunc(ms);
  const minute = Math.floor(whole / 60_000);
  if (minute !== isoMinute || !Number.isFinite(whole)) {
    const full = new Date(ms).toISOString();
    if (full.length !== 24) return full;
    isoMinute = minute;
    isoPrefix = full.slice(0, 17);
    return full;
  }
  const millis = whole - minute * 60_000;
  const seconds = Math.floor(millis / 1000);
  const rest = millis - seconds * 1000;
  return `${isoPrefix}${seconds < 10 ? '0' : ''}${seconds}.${rest < 10 ? '00' : rest < 100 ? '0' : ''}${rest}Z`;
}
