/**
 * The machinery of configuration validation: `Checker` collects located issues and warnings, and
 * its readers (text with `${env:NAME}`, integers, durations, sizes, booleans, maps, hosts, URLs,
 * headers...) report a problem and return a fallback so that validation goes on and every mistake
 * is reported at once. Each configuration section is read by its own function (validate.ts and
 * `sections/`) with a Checker.
 */
import { isIP } from 'node:net';
import { interpolateEnv } from './env-interpolation.js';
import type { GatewayConfig } from './types.js';
import { parseDuration, parseSize } from './units.js';

/**
 * One problem in a configuration file. `path` names the key (`upstreams.remote.url`; `""` for the
 * file as a whole), `found` is a short rendering of what is there ("nothing" when the key is
 * missing), `expected` says what is allowed. `line`/`column` (1-based) are set when the loader
 * knows where the key is. `message`, when set, replaces found/expected for problems that have no
 * key (YAML syntax errors).
 */
export interface ConfigIssue {
  readonly path: string;
  readonly found: string;
  readonly expected: string;
  readonly line?: number;
  readonly column?: number;
  readonly message?: string;
}

/** A key's position as segments: map keys and list indexes (`['upstreams', 'remote', 'url']`). */
export type ConfigPath = readonly (string | number)[];

/** A 1-based source position. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** What {@link validateConfig} needs besides the parsed file. */
export interface ValidateOptions {
  /** The directory relative `cwd` values are resolved against: the config file's directory. */
  readonly baseDir: string;
  /** The environment `${env:NAME}` reads (a parameter, so tests never touch `process.env`). */
  readonly env: NodeJS.ProcessEnv;
  /** Makes `sessions.mode` default to `strict` (see `defaultSessionsMode`). */
  readonly authConfigured?: boolean;
  /**
   * Where a key (`'key'`) or its value (`'value'`) is in the source, or undefined. The loader
   * passes one built from the YAML document; without it issues carry no line/column.
   */
  readonly locate?: (path: ConfigPath, target: 'key' | 'value') => SourcePosition | undefined;
}

/** The validated configuration with any warnings (valid but probably unintended), or all errors. */
export type ValidationResult =
  | { readonly ok: true; readonly config: GatewayConfig; readonly warnings: string[] }
  | { readonly ok: false; readonly errors: ConfigIssue[] };

/** Longest upstream name: it prefixes every aggregated tool name, which clients limit in length. */
export const MAX_UPSTREAM_NAME_LENGTH = 32;

/** The separator of aggregated tool names (`<upstream>__<tool>`), hence banned in upstream names. */
export const NAMESPACE_SEPARATOR = '__';

/**
 * Headers the gateway sets itself on upstream requests (framing, session, protocol negotiation,
 * resumption, connection management); configuring them would break the protocol. Lower case.
 */
export const RESERVED_HEADERS: readonly string[] = [
  'host',
  'content-length',
  'mcp-session-id',
  'mcp-protocol-version',
  'accept',
  'content-type',
  'last-event-id',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
];

export const RESERVED_HEADERS_DISPLAY =
  'Host, Content-Length, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID and the connection headers';
/** The gateway's own log levels (its pino logger), for the config and the `--log-level` option. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export const ENV_NAME_EXPECTED =
  'an environment variable name: letters, digits and _, not starting with a digit';
export const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
export const HOSTNAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*\\.?$`);

/** Collects issues and warnings; its readers report a problem and return a fallback to go on. */
export class Checker {
  readonly errors: ConfigIssue[] = [];
  readonly warnings: string[] = [];

  constructor(readonly options: ValidateOptions) {}

  issue(path: ConfigPath, found: string, expected: string, target: 'key' | 'value' = 'value'): void {
    const at = this.options.locate?.(path, target);
    this.errors.push({
      path: formatPath(path),
      found,
      expected,
      ...(at === undefined ? {} : { line: at.line, column: at.column }),
    });
  }

  warn(path: ConfigPath, message: string): void {
    this.warnings.push(`${formatPath(path)}: ${message}`);
  }

  /**
   * The known keys of a map (absent or null: none), reporting anything else: a value that is not
   * a map, and unknown keys (with a suggestion, or `hint(key)` when it has a better one).
   */
  section(
    raw: unknown,
    path: ConfigPath,
    keys: readonly string[],
    expected = `a map with the keys ${keys.join(', ')}`,
    hint?: (key: string) => string | undefined,
  ): Map<string, unknown> {
    const out = new Map<string, unknown>();
    if (raw === undefined || raw === null) {
      if (path.length === 0) this.issue(path, 'nothing (an empty file)', expected);
      return out;
    }
    const entries = entriesOf(raw);
    if (entries === undefined) {
      this.issue(path, describeValue(raw), expected);
      return out;
    }
    for (const [key, value] of entries) {
      if (keys.includes(key)) {
        out.set(key, value);
        continue;
      }
      const where = path.length === 0 ? 'at the top level' : `in ${formatPath(path)}`;
      const suggestion = suggest(key, keys);
      const explanation =
        hint?.(key) ?? (suggestion === undefined ? undefined : `did you mean "${suggestion}"?`);
      this.issue(
        [...path, key],
        'an unknown key',
        `one of the keys allowed ${where}: ${keys.join(', ')}${explanation === undefined ? '' : ` (${explanation})`}`,
        'key',
      );
    }
    return out;
  }

  /** A string, with `${env:NAME}` resolved; undefined (after an issue) for anything else. */
  text(value: unknown, path: ConfigPath, expected = 'a string'): string | undefined {
    if (typeof value !== 'string') {
      this.issue(path, describeValue(value), expected);
      return undefined;
    }
    const result = interpolateEnv(value, this.options.env, formatPath(path));
    if (result.ok) return result.value;
    for (const error of result.errors) this.issue(path, error.found, error.expected);
    return undefined;
  }

  /** A value that may be written as a string (interpolated) or as its YAML scalar. */
  scalar(value: unknown, path: ConfigPath): unknown {
    return typeof value === 'string' ? this.text(value, path) : value;
  }

  requiredText(f: Map<string, unknown>, p: ConfigPath, key: string, expected: string): string {
    const value = f.get(key);
    if (value === undefined) {
      this.issue([...p, key], 'nothing', expected, 'key');
      return '';
    }
    const text = this.text(value, [...p, key], expected);
    if (text === undefined) return '';
    if (text.trim() === '' || text.includes('\0'))
      this.issue([...p, key], describeValue(text), `a non-empty string: ${expected}`);
    return text;
  }

  optionalText(f: Map<string, unknown>, p: ConfigPath, key: string): string | undefined {
    const value = f.get(key);
    if (value === undefined) return undefined;
    const text = this.text(value, [...p, key], 'a directory path (relative to the configuration file)');
    if (text !== undefined && (text === '' || text.includes('\0'))) {
      this.issue(
        [...p, key],
        describeValue(text),
        'a non-empty directory path (relative to the configuration file)',
      );
    }
    return text;
  }

  integer(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    o: { min: number; max?: number; fallback: number; expected?: string },
  ): number {
    const raw = f.get(key);
    if (raw === undefined) return o.fallback;
    const path = [...p, key];
    const expected =
      o.expected ??
      (o.min === 1
        ? 'a positive integer'
        : o.min === 0
          ? 'a non-negative integer'
          : `an integer of at least ${o.min}`);
    const value = this.scalar(raw, path);
    if (value === undefined) return o.fallback;
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (
      typeof n !== 'number' ||
      !Number.isSafeInteger(n) ||
      n < o.min ||
      (o.max !== undefined && n > o.max)
    ) {
      this.issue(path, shown(raw, value), expected);
      return o.fallback;
    }
    return n;
  }

  maxRestarts(f: Map<string, unknown>, p: ConfigPath, fallback: number): number {
    const raw = f.get('maxRestarts');
    if (raw === undefined) return fallback;
    const path = [...p, 'maxRestarts'];
    const value = this.scalar(raw, path);
    if (value === undefined) return fallback;
    if (value === Number.POSITIVE_INFINITY || value === '.inf') return Number.POSITIVE_INFINITY;
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return n;
    this.issue(path, shown(raw, value), 'a non-negative integer, or .inf to restart forever');
    return fallback;
  }

  duration(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    fallback: number,
    zeroAllowed: boolean,
  ): number {
    return this.#quantity(
      f,
      p,
      key,
      fallback,
      zeroAllowed,
      parseDuration,
      'a duration longer than 0, e.g. 30s or 10m',
    );
  }

  size(f: Map<string, unknown>, p: ConfigPath, key: string, fallback: number, zeroAllowed: boolean): number {
    return this.#quantity(
      f,
      p,
      key,
      fallback,
      zeroAllowed,
      parseSize,
      'a size larger than 0, e.g. 64KiB or 4MiB',
    );
  }

  #quantity(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    fallback: number,
    zeroAllowed: boolean,
    parse: typeof parseDuration,
    positive: string,
  ): number {
    const raw = f.get(key);
    if (raw === undefined) return fallback;
    const path = [...p, key];
    const value = this.scalar(raw, path);
    if (value === undefined) return fallback;
    const result = parse(value);
    if (!result.ok) {
      this.issue(path, shown(raw, value), zeroAllowed ? `${result.expected}; 0 disables` : result.expected);
      return fallback;
    }
    if (result.value === 0 && !zeroAllowed) {
      this.issue(path, shown(raw, value), positive);
      return fallback;
    }
    return result.value;
  }

  boolean(f: Map<string, unknown>, p: ConfigPath, key: string, fallback: boolean): boolean {
    const raw = f.get(key);
    if (raw === undefined) return fallback;
    const value = this.scalar(raw, [...p, key]);
    if (value === true || value === 'true') return true;
    if (value === false || value === 'false') return false;
    if (value !== undefined) this.issue([...p, key], shown(raw, value), 'true or false');
    return fallback;
  }

  choice<T extends string, F extends T | undefined>(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    options: readonly T[],
    fallback: F,
  ): T | F {
    const raw = f.get(key);
    if (raw === undefined) return fallback;
    const path = [...p, key];
    const value = this.scalar(raw, path);
    if (value === undefined) return fallback;
    if (typeof value === 'string' && (options as readonly string[]).includes(value)) return value as T;
    const suggestion = typeof value === 'string' ? suggest(value, options) : undefined;
    this.issue(
      path,
      shown(raw, value),
      `${oneOf(options)}${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`,
    );
    return fallback;
  }

  list<T>(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    fallback: readonly T[],
    item: (value: unknown, path: ConfigPath) => T | undefined,
  ): readonly T[] {
    const raw = f.get(key);
    if (raw === undefined) return fallback;
    const path = [...p, key];
    if (!Array.isArray(raw)) {
      this.issue(path, describeValue(raw), 'a list, e.g. [a, b] or one "- item" per line');
      return fallback;
    }
    const out: T[] = [];
    raw.forEach((value, index) => {
      const parsed = item(value, [...path, index]);
      if (parsed !== undefined) out.push(parsed);
    });
    return out;
  }

  record(
    f: Map<string, unknown>,
    p: ConfigPath,
    key: string,
    /** What a name should be when `name` is not acceptable, else undefined. */
    nameProblem: (name: string) => string | undefined,
    value: (value: unknown, path: ConfigPath) => string | undefined,
  ): Readonly<Record<string, string>> {
    const raw = f.get(key);
    const out: Record<string, string> = {};
    if (raw === undefined) return out;
    const path = [...p, key];
    const entries = entriesOf(raw);
    if (entries === undefined) {
      this.issue(path, describeValue(raw), 'a map from name to value, e.g. { NAME: value }');
      return out;
    }
    for (const [name, v] of entries) {
      const problem = nameProblem(name);
      if (problem !== undefined)
        this.issue([...path, name], `the name ${JSON.stringify(name)}`, problem, 'key');
      const parsed = value(v, [...path, name]);
      if (parsed !== undefined) out[name] = parsed;
    }
    return out;
  }

  envName(value: unknown, path: ConfigPath): string | undefined {
    const name = this.text(value, path, ENV_NAME_EXPECTED);
    if (name !== undefined && !ENV_NAME.test(name)) this.issue(path, describeValue(name), ENV_NAME_EXPECTED);
    return name;
  }

  envValue(value: unknown, path: ConfigPath): string | undefined {
    const text = this.text(value, path, 'a string (quote numbers and booleans: "8080", "true")');
    if (text?.includes('\0'))
      this.issue(
        path,
        'a string containing a NUL character (value not shown)',
        'a string without NUL characters',
      );
    return text;
  }

  upstreamName(name: string, path: ConfigPath): void {
    const found = `the name ${JSON.stringify(name)}`;
    if (!UPSTREAM_NAME.test(name)) {
      this.issue(
        path,
        found,
        'an upstream name of letters, digits, _ and -, starting with a letter or digit',
        'key',
      );
    } else if (name.length > MAX_UPSTREAM_NAME_LENGTH) {
      this.issue(
        path,
        `${found} (${name.length} characters)`,
        `an upstream name of at most ${MAX_UPSTREAM_NAME_LENGTH} characters`,
        'key',
      );
    } else if (name.includes(NAMESPACE_SEPARATOR) || name.endsWith('_')) {
      this.issue(
        path,
        found,
        'an upstream name without "__" and not ending in "_" ("__" separates the upstream from the tool in aggregated tool names)',
        'key',
      );
    }
  }

  host(f: Map<string, unknown>, p: ConfigPath, fallback: string): string {
    const raw = f.get('host');
    if (raw === undefined) return fallback;
    const path = [...p, 'host'];
    const expected = 'a host name or IP address to listen on, e.g. 127.0.0.1, ::1, localhost or 0.0.0.0';
    const text = this.text(raw, path, expected);
    if (text === undefined) return fallback;
    const bare = /^\[(.*)\]$/.exec(text)?.[1] ?? text;
    if (isHostOrIp(bare)) return bare;
    this.issue(path, shown(raw, text), expected);
    return fallback;
  }

  allowedHost(value: unknown, path: ConfigPath): string | undefined {
    const expected =
      'a host as clients send it in the Host header, optionally with a port, e.g. gateway.internal or gateway.internal:8787';
    const text = this.text(value, path, expected);
    if (text === undefined) return undefined;
    const m = /^(\[([0-9A-Fa-f:.]+)\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(text);
    const host = m?.[2] ?? m?.[1];
    const port = m?.[3] === undefined ? undefined : Number(m[3]);
    const hostOk = host !== undefined && (m?.[2] !== undefined ? isIP(host) === 6 : isHostOrIp(host));
    if (!hostOk || (port !== undefined && port > 65_535)) {
      this.issue(path, describeValue(value), expected);
      return undefined;
    }
    return text.toLowerCase();
  }

  origin(value: unknown, path: ConfigPath): string | undefined {
    const expected =
      'an origin: scheme://host[:port] with no path, e.g. https://app.example.com or http://localhost:6274, or * for any';
    const text = this.text(value, path, expected);
    if (text === undefined || text === '*') return text;
    let url: URL | undefined;
    try {
      url = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]+\/?$/.test(text) ? new URL(text) : undefined;
    } catch {
      url = undefined;
    }
    if (url === undefined || url.username !== '' || url.password !== '' || url.host === '') {
      this.issue(path, describeValue(value), expected);
      return undefined;
    }
    return url.origin !== 'null' ? url.origin : `${url.protocol}//${url.host}`;
  }

  url(f: Map<string, unknown>, p: ConfigPath): string {
    const path = [...p, 'url'];
    const expected = 'an absolute http:// or https:// URL';
    const raw = f.get('url');
    if (raw === undefined) {
      this.issue(
        path,
        'nothing',
        `${expected}, the upstream's MCP endpoint (e.g. https://mcp.example.com/mcp)`,
        'key',
      );
      return '';
    }
    const text = this.text(raw, path, expected);
    if (text === undefined) return '';
    let url: URL | undefined;
    try {
      url = /^https?:\/\/[^/?#]/i.test(text) ? new URL(text) : undefined;
    } catch {
      url = undefined;
    }
    if (url === undefined) {
      this.issue(path, describeValue(raw === text ? raw : text), expected);
    } else if (url.username !== '' || url.password !== '') {
      this.issue(
        path,
        'a URL with user:password@ (value not shown)',
        `${expected} without credentials (send them in headers)`,
      );
    }
    return text;
  }

  headers(f: Map<string, unknown>, p: ConfigPath): Readonly<Record<string, string>> {
    const headers = this.record(
      f,
      p,
      'headers',
      (name) =>
        !HEADER_NAME.test(name)
          ? "a header name made of letters, digits and !#$%&'*+.^_`|~- (an HTTP token)"
          : RESERVED_HEADERS.includes(name.toLowerCase())
            ? `a header the gateway does not set itself (it owns ${RESERVED_HEADERS_DISPLAY})`
            : undefined,
      (value, path) => {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
        const text = this.text(value, path, 'a string (quote numbers: "42"); use ${env:NAME} for secrets');
        if (text !== undefined && hasControlCharacter(text)) {
          this.issue(
            path,
            'a string with a line break or control character (value not shown)',
            'a header value on one line, without control characters',
          );
        }
        return text;
      },
    );
    const seen = new Map<string, string>();
    for (const name of Object.keys(headers)) {
      const previous = seen.get(name.toLowerCase());
      if (previous !== undefined) {
        this.issue(
          [...p, 'headers', name],
          `the header ${name}, already given as ${previous}`,
          'each header once (names are case-insensitive)',
          'key',
        );
      }
      seen.set(name.toLowerCase(), name);
    }
    return headers;
  }
}

/** `found` for a value that may have come from `${env:NAME}`: the value, and what it came from. */
export function shown(raw: unknown, value: unknown): string {
  if (value === undefined || value === raw || typeof raw !== 'string') return describeValue(raw);
  return `${describeValue(value)} (from ${describeValue(raw)})`;
}

/** A map's entries with string keys, for plain objects and `Map`s; undefined for anything else. */
export function entriesOf(value: unknown): [string, unknown][] | undefined {
  if (value instanceof Map) return [...value.entries()].map(([k, v]) => [String(k), v]);
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return Object.entries(value);
  return undefined;
}

/** Any control character except horizontal tab (RFC 9110 field values). */
export function hasControlCharacter(text: string): boolean {
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return true;
  }
  return false;
}

export function isHostOrIp(host: string): boolean {
  if (isIP(host) !== 0) return true;
  // All-numeric names that are not addresses (`999.1.1.1`, `8080`) are mistakes, not host names.
  if (/^[\d.]+$/.test(host)) return false;
  return host.length <= 253 && HOSTNAME.test(host);
}

/** True for addresses and names that only this machine can reach. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return (
    h === 'localhost' || h.endsWith('.localhost') || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'))
  );
}

export function oneOf(options: readonly string[]): string {
  if (options.length <= 1) return options.join('');
  return `${options.slice(0, -1).join(', ')} or ${options.at(-1)}`;
}

/**
 * A key path for people: `upstreams.remote.url`, `upstreams.everything.args[2]`, and quoted
 * segments for keys that are not plain words (`headers["X.Trace"]`). The empty path is `""`.
 */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/**
 * A short rendering of a value for the `found` of an issue: strings quoted (and cut at 60
 * characters), numbers as YAML writes them (`.inf`), lists and maps by size and keys.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return '.nan';
    if (!Number.isFinite(value)) return value > 0 ? '.inf' : '-.inf';
    return String(value);
  }
  if (Array.isArray(value)) {
    return value.length === 0
      ? 'an empty list'
      : `a list of ${value.length} item${value.length === 1 ? '' : 's'}`;
  }
  const entries = entriesOf(value);
  if (entries !== undefined) {
    if (entries.length === 0) return 'an empty map';
    const keys = entries.slice(0, 3).map(([k]) => k);
    return `a map (${keys.join(', ')}${entries.length > 3 ? ', ...' : ''})`;
  }
  return String(value);
}

/**
 * The candidate a mistyped `input` most likely meant, or undefined when none is close: the same
 * word in another case or with `_`/`-` (`max_body_bytes`), a unit suffix too many (`keepAliveMs`),
 * within a small edit distance (transpositions count as one edit), else a prefix of the input or
 * an input that is a prefix of it (at least 3 characters).
 */
export function suggest(input: string, candidates: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  const forms = [norm(input), norm(input).replace(/(ms|bytes)$/, '')];
  let best: { candidate: string; score: number } | undefined;
  for (const candidate of candidates) {
    const target = norm(candidate);
    const distance = Math.min(...forms.map((form) => editDistance(form, target)));
    const limit = target.length <= 4 ? 1 : target.length <= 8 ? 2 : 3;
    // A word cut short or run on (`warning` for `warn`, `environment` for `env`) also counts,
    // ranked after every near miss.
    const [shorter, longer] = forms[0]!.length <= target.length ? [forms[0]!, target] : [target, forms[0]!];
    const score =
      distance <= limit
        ? distance
        : shorter.length >= 3 && longer.startsWith(shorter)
          ? 10 + longer.length - shorter.length
          : undefined;
    if (score !== undefined && (best === undefined || score < best.score)) best = { candidate, score };
  }
  return best?.candidate;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] ?? 0;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, at(i - 2, j - 2) + 1);
      d[i * cols + j] = value;
    }
  }
  return at(rows - 1, cols - 1);
}
