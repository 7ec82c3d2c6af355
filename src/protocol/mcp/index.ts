export * from './header-value.js';
export * from './modern-meta.js';
export * from './progress.js';
export * from './reserved-meta.js';
export * from './revisions.js';
export * from './x-mcp-header.js';
