/**
 * The MEUP envelope: its types, the codec that reads untrusted envelopes and writes valid ones,
 * the correlation set and context path rules, the kind vocabulary, and envelope ids.
 * @module
 */
export * from './codec.js';
export * from './context-path.js';
export * from './correlation.js';
export * from './ids.js';
export * from './kinds.js';
export * from './types.js';
export * from './wire.js';
