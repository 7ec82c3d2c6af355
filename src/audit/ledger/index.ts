/**
 * The audit ledger (docs/audit-ledger.md): the writer the governance layer appends to, the
 * verifier, inclusion proofs, and the readers behind `switchboard audit`.
 */
export * from './anchor-sink.js';
export * from './append-file.js';
export * from './audit-event.js';
export * from './audit-ledger.js';
export * from './checkpoint-line.js';
export * from './inclusion-proof.js';
export * from './ledger-lock.js';
export * from './ledger-paths.js';
export * from './ledger-query.js';
export * from './record-line.js';
export * from './record-schema.js';
export * from './verify.js';
