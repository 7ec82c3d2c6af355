/**
 * The gateway's configuration: the validated shape (`types.ts`), its defaults and the built-in
 * demo configuration, the YAML loader with located, human-readable issues, and the unit and
 * `${env:NAME}` helpers the loader is made of.
 */
export {
  DATA_DIR_ENV,
  DATA_DIR_NAME,
  defaultDataDir,
  ensureDataDir,
  type PlatformFacts,
  resolveDataDir,
} from './data-dir.js';
export {
  DEFAULTS,
  DEMO_PACKAGES,
  defaultConfig,
  defaultSessionsMode,
  type ResolvePackage,
} from './defaults.js';
export {
  escapeInterpolation,
  type InterpolationError,
  type InterpolationResult,
  interpolateEnv,
} from './env-interpolation.js';
export {
  formatConfigIssues,
  type LoadedConfig,
  type LoadOptions,
  loadConfigFile,
  parseConfigText,
} from './load.js';
export type * from './types.js';
export { formatDuration, formatSize, parseDuration, parseSize, type UnitResult } from './units.js';
export {
  CONFIG_KEYS,
  type ConfigIssue,
  type ConfigPath,
  describeValue,
  formatPath,
  isLoopback,
  MAX_UPSTREAM_NAME_LENGTH,
  NAMESPACE_SEPARATOR,
  RESERVED_HEADERS,
  type SourcePosition,
  suggest,
  type ValidateOptions,
  type ValidationResult,
  validateConfig,
} from './validate.js';
