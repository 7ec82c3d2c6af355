export * from './codes.js';
export * from './errors.js';
export * from './parse.js';
export * from './types.js';
