/**
 * The values of `trace.payloads` (what the trace writes of each message; see `payload-guard.ts`).
 * Apart from the guard so that the configuration can name them without loading the redactor.
 */
export const TRACE_PAYLOAD_MODES = ['redacted', 'full'] as const;
export type TracePayloadMode = (typeof TRACE_PAYLOAD_MODES)[number];
