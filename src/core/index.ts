/** The routing core: correlation table, router, ports and taps. No sockets, no files. */
export * from './correlation-table.js';
export * from './inbound.js';
export * from './observations.js';
export * from './passthrough-resolver.js';
export * from './ports.js';
export * from './router.js';
export * from './session-key.js';
export * from './taps.js';
export * from './trace-mapping.js';
