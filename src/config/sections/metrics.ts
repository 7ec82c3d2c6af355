/**
 * `observe.metrics`: the Prometheus endpoint of `switchboard serve` (`GET /metrics`,
 * docs/observability.md "Metrics"). On by default on the gateway's own port, where it is guarded
 * like everything else: with authentication, only principals holding `role`; without it, loopback
 * only. `listen` moves it to a listener of its own (so that it can stay off the public port), which
 * without authentication must be a loopback address too.
 */
import { type Checker, type ConfigPath, isLoopback } from '../checker.js';

export interface MetricsListen {
  readonly host: string;
  readonly port: number;
}

export interface MetricsConfig {
  /** Whether `/metrics` is served at all (default true). */
  readonly enabled: boolean;
  /** With authentication: the role a principal needs to read `/metrics` (default `metrics`). */
  readonly role: string;
  /** A listener of its own for `/metrics` (then the gateway's port does not serve it). */
  readonly listen?: MetricsListen;
  /** Whether calls are counted by principal (`principal` label); default false. */
  readonly principalLabel: boolean;
  /** With `principalLabel`: principals counted by name, in order of first call; later ones are `other`. */
  readonly maxPrincipals: number;
}

export const METRICS_KEYS = ['enabled', 'role', 'listen', 'principalLabel', 'maxPrincipals'] as const;

export const METRICS_DEFAULTS: MetricsConfig = Object.freeze({
  enabled: true,
  role: 'metrics',
  principalLabel: false,
  maxPrincipals: 100,
});

const ROLE = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const LISTEN_EXPECTED =
  'host:port to listen on, e.g. 127.0.0.1:9464 or [::1]:9464 (a loopback address unless auth is configured)';

/** Reads `observe.metrics`; `authConfigured` decides whether `listen` may leave loopback. */
export function readMetrics(c: Checker, raw: unknown, p: ConfigPath, authConfigured: boolean): MetricsConfig {
  const f = c.section(raw, p, METRICS_KEYS);
  const d = METRICS_DEFAULTS;
  let role = d.role;
  if (f.has('role')) {
    const text = c.text(f.get('role'), [...p, 'role'], 'a role name');
    if (text !== undefined && ROLE.test(text)) role = text;
    else if (text !== undefined)
      c.issue([...p, 'role'], JSON.stringify(text), 'a role name (letters, digits, . _ : -)');
  }
  const listen = readListen(c, f.get('listen'), [...p, 'listen'], authConfigured);
  return {
    enabled: c.boolean(f, p, 'enabled', d.enabled),
    role,
    ...(listen === undefined ? {} : { listen }),
    principalLabel: c.boolean(f, p, 'principalLabel', d.principalLabel),
    maxPrincipals: c.integer(f, p, 'maxPrincipals', { min: 1, max: 10_000, fallback: d.maxPrincipals }),
  };
}

function readListen(
  c: Checker,
  raw: unknown,
  path: ConfigPath,
  authConfigured: boolean,
): MetricsListen | undefined {
  if (raw === undefined || raw === null) return undefined;
  const text = c.text(raw, path, LISTEN_EXPECTED);
  if (text === undefined) return undefined;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65_535) {
    c.issue(path, JSON.stringify(text), LISTEN_EXPECTED);
    return undefined;
  }
  if (!authConfigured && !isLoopback(host)) {
    c.issue(
      path,
      JSON.stringify(text),
      'a loopback address (127.0.0.1, ::1 or localhost): without authentication /metrics is for this machine only (configure auth to listen elsewhere)',
    );
    return undefined;
  }
  return { host, port };
}
