/**
 * OpenTelemetry for `serve` and `stdio`: decides from the configuration and the `OTEL_*`
 * environment whether export is on, and only then loads the runtime (and with it the
 * `@opentelemetry/*` packages) with a dynamic `import()`. Off, nothing of it is loaded and the
 * gateway is built without a trace-context writer or an OpenTelemetry tap.
 */
import { currentRequestScope } from '../audit/request-scope.js';
import type { OtelConfig } from '../config/types.js';
import type { Logger } from '../observe/logger.js';
import type { OtelRuntime } from '../observe/otel/otel-runtime.js';
import { otelSettings } from '../observe/otel/otel-settings.js';
import type { TraceSessionInfo } from '../trace/types.js';

export type { OtelRuntime };

/**
 * The runtime when export is on, else undefined; throws with a sentence when the `OTEL_*`
 * environment is invalid (the gateway then refuses to start rather than run without what was asked).
 */
export async function openOtel(
  config: OtelConfig,
  env: NodeJS.ProcessEnv,
  options: {
    readonly logger: Logger;
    readonly version: string;
    readonly upstreamUrls?: Readonly<Record<string, string>>;
  },
): Promise<OtelRuntime | undefined> {
  const decision = otelSettings(config, env);
  if ('error' in decision) throw new Error(decision.error);
  if (!decision.on) return undefined;
  const { startOtel } = await import('../observe/otel/otel-runtime.js');
  const runtime = startOtel({
    settings: decision.settings,
    logger: options.logger,
    version: options.version,
    ...(options.upstreamUrls ? { upstreamUrls: options.upstreamUrls } : {}),
    clientAddress: () => currentRequestScope()?.clientAddress,
  });
  options.logger.info(
    {
      traces: decision.settings.tracesUrl,
      metrics: decision.settings.metricsUrl,
      protocol: decision.settings.protocol,
      sampler: decision.settings.sampler,
    },
    'exporting OpenTelemetry traces and metrics',
  );
  return runtime;
}

/**
 * `onSession` for a gateway: hands every report to `next` (the trace) and records
 * `mcp.server.session.duration` for a session that ended.
 */
export function sessionReporter(
  otel: OtelRuntime | undefined,
  next: ((info: TraceSessionInfo) => void) | undefined,
): ((info: TraceSessionInfo) => void) | undefined {
  if (otel === undefined) return next;
  return (info) => {
    next?.(info);
    if (info.endedAt === undefined) return;
    const attributes: Record<string, string> = {
      'network.transport': info.transport === 'stdio' ? 'pipe' : 'tcp',
    };
    if (info.protocolVersion !== undefined) attributes['mcp.protocol.version'] = info.protocolVersion;
    otel.serverSessionEnded(Math.max(0, info.endedAt - info.startedAt) / 1000, attributes);
  };
}
