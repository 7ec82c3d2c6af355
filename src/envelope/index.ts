export * from './direction.js';
export * from './message-context.js';
export * from './message-envelope.js';
