export * from './switchboard-error.js';
export * from './to-jsonrpc-error.js';
