/**
 * The audit ledger's pure primitives: RFC 8785 canonical JSON, RFC 6962 Merkle trees, C2SP signed
 * notes and checkpoints, id bounding, request-scoped correlation and redaction. Nothing here does
 * I/O; the ledger writer, verifier and CLI are built on top.
 */
export * from './bound-id.js';
export * from './canonical-json.js';
export * from './checkpoint.js';
export * from './merkle.js';
export * from './redaction.js';
export * from './request-scope.js';
export * from './signed-note.js';
