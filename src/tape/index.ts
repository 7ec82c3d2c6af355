export * from './tape-calls.js';
export * from './tape-format.js';
export * from './tape-reader.js';
export * from './tape-writer.js';
