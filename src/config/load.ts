/**
 * Reading a configuration file: YAML text to a validated {@link GatewayConfig}, with every
 * problem located at its line and column, since "line 12 is wrong" is what a person editing the
 * file needs. YAML syntax errors, which stop parsing, are reported the same way as invalid values.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import type { GatewayConfig } from './types.js';
import {
  type ConfigIssue,
  type ConfigPath,
  type SourcePosition,
  type ValidateOptions,
  type ValidationResult,
  validateConfig,
} from './validate.js';

/** What {@link loadConfigFile} needs: the environment for `${env:NAME}`, and whether auth is on. */
export interface LoadOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly authConfigured?: boolean;
}

/** A loaded configuration: the validated config, its warnings, and the file's absolute path. */
export interface LoadedConfig {
  readonly config: GatewayConfig;
  readonly warnings: string[];
  readonly file: string;
}

/**
 * Reads, parses and validates the configuration file at `path` (relative paths against the
 * working directory; relative `cwd`s in the file against the file's directory).
 *
 * Throws `SB_CONFIG_NOT_FOUND` naming the path when the file is missing or cannot be read
 * (`details`: `{ file, reason }`, reason being the system error code), and `SB_CONFIG_INVALID`
 * when it is not valid YAML or not a valid configuration: the message lists every issue as
 * {@link formatConfigIssues} renders them, `details` holds `{ file, issues }`.
 */
export async function loadConfigFile(path: string, options: LoadOptions): Promise<LoadedConfig> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code ?? 'EIO';
    const what =
      reason === 'ENOENT' || reason === 'ENOTDIR'
        ? `no configuration file at ${file}`
        : reason === 'EISDIR'
          ? `the configuration path ${file} is a directory, not a file`
          : `cannot read the configuration file ${file} (${reason})`;
    throw new SwitchboardError(SbErrorCode.ConfigNotFound, what, { cause, details: { file, reason } });
  }
  const result = parseConfigText(text, { ...options, baseDir: dirname(file) });
  if (!result.ok) {
    const count = result.errors.length;
    throw new SwitchboardError(
      SbErrorCode.ConfigInvalid,
      `invalid configuration (${count} problem${count === 1 ? '' : 's'}):\n${formatConfigIssues(result.errors, path)}`,
      { details: { file, issues: result.errors } },
    );
  }
  return { config: result.config, warnings: result.warnings, file };
}

/**
 * Parses YAML text and validates it (see `validateConfig`), attaching to each issue the line and
 * column of the key or value it is about (for a missing key: of its parent's key). Issues come
 * sorted by position. YAML syntax errors are issues with an empty `path` and a `message`; YAML
 * warnings (unknown tags) join the validation warnings.
 */
export function parseConfigText(text: string, options: Omit<ValidateOptions, 'locate'>): ValidationResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number): SourcePosition => {
    const { line, col } = lineCounter.linePos(offset);
    return { line: Math.max(line, 1), column: Math.max(col, 1) };
  };
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((error) => syntaxIssue(error.message, at(error.pos[0]))),
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ mapAsMap: true, maxAliasCount: 100 });
  } catch (error) {
    // Unresolvable or excessive aliases (a "billion laughs" file) surface here, not as parse errors.
    return {
      ok: false,
      errors: [syntaxIssue(error instanceof Error ? error.message : String(error), at(0))],
    };
  }
  const result = validateConfig(raw, { ...options, locate: locator(doc, at) });
  if (!result.ok) return { ok: false, errors: sortByPosition(result.errors) };
  const yamlWarnings = doc.warnings.map((w) => {
    const { line, column } = at(w.pos[0]);
    return `line ${line}, column ${column}: ${w.message}`;
  });
  return { ok: true, config: result.config, warnings: [...yamlWarnings, ...result.warnings] };
}

/**
 * Renders issues for people, one per line, each starting with `file:line:column` when the
 * position is known: `switchboard.yaml:12:5 upstreams.remote.url: found "ftp://x", expected an
 * absolute http:// or https:// URL`. `file` is shown as given. No trailing newline.
 */
export function formatConfigIssues(issues: readonly ConfigIssue[], file: string): string {
  return issues
    .map((issue) => {
      const where = issue.line === undefined ? `${file}:` : `${file}:${issue.line}:${issue.column ?? 1}`;
      if (issue.message !== undefined) return `${where} ${issue.message}`;
      const key = issue.path === '' ? '(top level)' : issue.path;
      return `${where} ${key}: found ${issue.found}, expected ${issue.expected}`;
    })
    .join('\n');
}

function syntaxIssue(message: string, position: SourcePosition): ConfigIssue {
  return {
    path: '',
    found: 'invalid YAML',
    expected: 'valid YAML',
    line: position.line,
    column: position.column,
    message: `YAML syntax error: ${message}`,
  };
}

/**
 * Finds a path in the document: the key or value node when it exists, else the key of the
 * deepest parent that does (where a missing key belongs), else the start of the document.
 */
function locator(
  doc: Document,
  at: (offset: number) => SourcePosition,
): (path: ConfigPath, target: 'key' | 'value') => SourcePosition | undefined {
  const start = (node: unknown): number | undefined => {
    const range = (node as { range?: unknown } | null)?.range;
    return Array.isArray(range) && typeof range[0] === 'number' ? range[0] : undefined;
  };
  return (path, target) => {
    let node: unknown = doc.contents;
    let found = start(node) ?? 0;
    let parentKey: number | undefined;
    for (const [i, segment] of path.entries()) {
      if (isAlias(node)) node = node.resolve(doc);
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
        const keyStart = pair === undefined ? undefined : start(pair.key);
        if (pair === undefined || keyStart === undefined) return at(parentKey ?? found);
        if (last && target === 'key') return at(keyStart);
        parentKey = keyStart;
        found = start(pair.value) ?? keyStart;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && node.items[segment] !== undefined) {
        node = node.items[segment];
        found = start(node) ?? found;
      } else {
        return at(parentKey ?? found);
      }
    }
    return at(found);
  };
}

function sortByPosition(issues: ConfigIssue[]): ConfigIssue[] {
  const key = (i: ConfigIssue) =>
    i.line === undefined ? Number.POSITIVE_INFINITY : i.line * 1e6 + (i.column ?? 0);
  return [...issues].sort((a, b) => key(a) - key(b));
}
