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
