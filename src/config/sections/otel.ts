/**
 * `observe.otel`: OpenTelemetry (OTLP/HTTP traces and metrics, docs/observability.md "Traces"). Off
 * by default; what the file leaves out stays undefined so that the standard `OTEL_*` environment
 * variables can supply it when the gateway starts (`src/observe/otel/otel-settings.ts`), as every
 * OpenTelemetry SDK reads them: the file wins over the environment, `OTEL_SDK_DISABLED=true` over both.
 */
import {
  type Checker,
  type ConfigPath,
  describeValue,
  HEADER_NAME,
  hasControlCharacter,
} from '../checker.js';
import type { OtelConfig, OtlpProtocol } from '../types.js';

export const OTEL_KEYS = [
  'enabled',
  'endpoint',
  'protocol',
  'headers',
  'sampleRatio',
  'serviceName',
  'resourceAttributes',
  'forwardBaggage',
] as const;
export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];

export const OTEL_DEFAULTS: OtelConfig = Object.freeze({
  headers: Object.freeze({}),
  resourceAttributes: Object.freeze({}),
  forwardBaggage: false,
});

const ENDPOINT_EXPECTED =
  'the OTLP/HTTP base URL of a collector, http:// or https:// (e.g. http://localhost:4318; /v1/traces and /v1/metrics are appended)';
const RATIO_EXPECTED = 'a number from 0 to 1 (the share of new traces recorded; 1 records all)';
/** An OpenTelemetry attribute key: printable ASCII without spaces, at most 255 characters. */
const ATTRIBUTE_KEY = /^[\x21-\x7e]{1,255}$/;

export function readOtel(c: Checker, raw: unknown, p: ConfigPath): OtelConfig {
  const f = c.section(raw, p, OTEL_KEYS);
  const enabled = f.has('enabled') ? c.boolean(f, p, 'enabled', false) : undefined;
  const endpoint = readEndpoint(c, f.get('endpoint'), [...p, 'endpoint']);
  const protocol = c.choice(f, p, 'protocol', OTLP_PROTOCOLS, undefined);
  const sampleRatio = readRatio(c, f.get('sampleRatio'), [...p, 'sampleRatio']);
  const serviceName = f.has('serviceName')
    ? c.requiredText(f, p, 'serviceName', 'the service.name the spans and metrics carry')
    : undefined;
  const headers = c.record(
    f,
    p,
    'headers',
    (name) => (HEADER_NAME.test(name) ? undefined : 'a header name (an HTTP token, e.g. Authorization)'),
    (value, path) => {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
      const text = c.text(value, path, 'a string; use ${env:NAME} for credentials');
      if (text !== undefined && hasControlCharacter(text)) {
        c.issue(
          path,
          'a string with a line break or control character (value not shown)',
          'a header value on one line, without control characters',
        );
        return undefined;
      }
      return text;
    },
  );
  const resourceAttributes = c.record(
    f,
    p,
    'resourceAttributes',
    (name) =>
      ATTRIBUTE_KEY.test(name) ? undefined : 'an attribute key of printable characters without spaces',
    (value, path) => {
      const v = c.scalar(value, path);
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
      if (v !== undefined) c.issue(path, describeValue(value), 'a string, number or boolean');
      return undefined;
    },
  );
  return {
    ...(enabled === undefined ? {} : { enabled }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(protocol === undefined ? {} : { protocol }),
    headers,
    ...(sampleRatio === undefined ? {} : { sampleRatio }),
    ...(serviceName === undefined ? {} : { serviceName }),
    resourceAttributes,
    forwardBaggage: c.boolean(f, p, 'forwardBaggage', false),
  };
}

function readEndpoint(c: Checker, raw: unknown, path: ConfigPath): string | undefined {
  if (raw === undefined) return undefined;
  const text = c.text(raw, path, ENDPOINT_EXPECTED);
  if (text === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = /^https?:\/\/[^/?#]/i.test(text) ? new URL(text) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined) {
    c.issue(path, describeValue(text), ENDPOINT_EXPECTED);
    return undefined;
  }
  if (url.username !== '' || url.password !== '') {
    c.issue(
      path,
      'a URL with user:password@ (value not shown)',
      `${ENDPOINT_EXPECTED}, credentials in headers`,
    );
    return undefined;
  }
  return text;
}

function readRatio(c: Checker, raw: unknown, path: ConfigPath): number | undefined {
  if (raw === undefined) return undefined;
  const value = c.scalar(raw, path);
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= 1) return n;
  if (value !== undefined) c.issue(path, describeValue(raw), RATIO_EXPECTED);
  return undefined;
}
