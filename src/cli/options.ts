/** Parsers for command-line option values, each failing with a message that names the option. */
import { InvalidArgumentError } from 'commander';
import { LOG_LEVELS } from '../config/checker.js';

export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`expected a non-negative integer, got "${value}"`);
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return n;
}

/** `KEY=VALUE`, accumulated into a record (repeatable option). */
export function collectKeyValue(
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected KEY=VALUE, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function parseLogLevel(value: string): (typeof LOG_LEVELS)[number] {
  if ((LOG_LEVELS as readonly string[]).includes(value)) return value as (typeof LOG_LEVELS)[number];
  throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(', ')}, got "${value}"`);
}
