/**
 * The layer rules of `docs/architecture.md` ("Layers and folders"), as data that
 * `src/architecture.test.ts` holds every import of the sources to.
 *
 * A folder belongs to the longest `folder` that prefixes it. A file may import anything in its own
 * layer (its folder and the folders below it that are not layers of their own), and from other
 * layers only what its layer's `imports` allow. The table's "imports" column is rendered from
 * these rules (`renderImports`), and the test checks that the table says exactly that, so the
 * document and the check cannot drift apart.
 */

/** One layer a layer may import from. */
export interface Allowed {
  /** The layer's `folder`. */
  readonly layer: string;
  /** Only `import type` / `export type` (the layer's values would be a real dependency). */
  readonly typesOnly?: boolean;
  /** Only these files of the layer (relative to its folder). */
  readonly files?: readonly string[];
  /** Any file of the layer but these. */
  readonly except?: readonly string[];
  /**
   * Why an import that goes against the grain of the layers is allowed. Every such exception is
   * listed below the table with its reason; an allowance without one is ordinary layering.
   */
  readonly why?: string;
}

export interface Layer {
  /** The folder (or single file) under the repository root, without a trailing slash. */
  readonly folder: string;
  /** The short name the table's "imports" column uses for this layer. */
  readonly name: string;
  /** `'*'`: every layer but the CLI (compositions). */
  readonly imports: readonly Allowed[] | '*';
}

const types = { typesOnly: true } as const;

/** The transports reach the core through its ports (`SessionHost`, `LinkHost`), never the router class. */
const CORE_PORTS = { layer: 'src/core', except: ['router.ts'] } as const;

const REQUEST_SCOPE =
  'a request runs in the per-request scope (`AsyncLocalStorage`, keyed with the ledger’s bounded ids) that the ledger and the logs read its ids from; the endpoint where a request begins opens it';

export const LAYERS: readonly Layer[] = [
  { folder: 'src/protocol/jsonrpc', name: 'jsonrpc', imports: [] },
  { folder: 'src/protocol/mcp', name: 'mcp', imports: [{ layer: 'src/protocol/jsonrpc' }] },
  {
    folder: 'src/envelope',
    name: 'envelope',
    imports: [{ layer: 'src/protocol/jsonrpc' }, { layer: 'src/protocol/mcp' }],
  },
  { folder: 'src/observe', name: 'observe', imports: [] },
  {
    folder: 'src/observe/prometheus',
    name: 'prometheus',
    imports: [
      { layer: 'src/protocol/jsonrpc', ...types },
      { layer: 'src/protocol/mcp', files: ['revisions.ts'] },
      { layer: 'src/observe' },
      { layer: 'src/core', files: ['observations.ts', 'correlation-table.ts'] },
    ],
  },
  { folder: 'src/meup', name: 'meup', imports: [{ layer: 'src/observe', ...types }] },
  { folder: 'src/errors', name: 'errors', imports: [{ layer: 'src/protocol/jsonrpc' }] },
  {
    folder: 'src/core',
    name: 'core',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/meup' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
    ],
  },
  {
    folder: 'src/transports/http/server',
    name: 'http server',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      CORE_PORTS,
      { layer: 'src/transports' },
      { layer: 'src/transports/http/events' },
      { layer: 'src/transports/http/sse' },
      { layer: 'src/auth', ...types, files: ['auth-outcome.ts'] },
      {
        layer: 'src/config',
        ...types,
        files: ['types.ts'],
        why: 'the server takes the validated `server`, `sessions` and `resumability` sections as its options, rather than a copy of each',
      },
      { layer: 'src/audit', files: ['request-scope.ts'], why: REQUEST_SCOPE },
    ],
  },
  {
    folder: 'src/transports/http/upstream',
    name: 'http upstream',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      CORE_PORTS,
      { layer: 'src/transports' },
      { layer: 'src/transports/http/sse' },
    ],
  },
  { folder: 'src/transports/http/sse', name: 'sse', imports: [] },
  { folder: 'src/transports/http/events', name: 'events', imports: [] },
  {
    folder: 'src/transports/stdio',
    name: 'stdio',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      CORE_PORTS,
      { layer: 'src/transports' },
    ],
  },
  {
    folder: 'src/transports',
    name: 'transports',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/observe' },
      CORE_PORTS,
    ],
  },
  { folder: 'src/audit', name: 'audit', imports: [{ layer: 'src/errors' }] },
  {
    folder: 'src/audit/ledger',
    name: 'ledger',
    imports: [
      { layer: 'src/audit' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      { layer: 'src/meup' },
      { layer: 'src/config', ...types, files: ['types.ts'] },
    ],
  },
  {
    folder: 'src/policy',
    name: 'policy',
    imports: [{ layer: 'src/meup' }, { layer: 'src/config', ...types, files: ['types.ts'] }],
  },
  {
    folder: 'src/auth',
    name: 'auth',
    imports: [
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      { layer: 'src/config', ...types, files: ['types.ts'] },
    ],
  },
  {
    folder: 'src/trace',
    name: 'trace',
    imports: [
      { layer: 'src/envelope' },
      { layer: 'src/meup' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      { layer: 'src/core' },
      { layer: 'src/audit' },
    ],
  },
  {
    folder: 'src/config',
    name: 'config',
    imports: [
      { layer: 'src/errors' },
      { layer: 'src/protocol/jsonrpc' },
      {
        layer: 'src/meup',
        files: ['types.ts'],
        why: 'the space section names participant kinds as the MEUP codec spells them',
      },
      {
        layer: 'src/space',
        files: ['capability-pattern.ts', 'participant-id.ts'],
        why: 'the space section is validated by the space’s own pure parsers, so that `config check` and the space agree',
      },
      {
        layer: 'src/policy',
        files: ['glob.ts'],
        why: 'policy globs are checked by the policy engine’s own compiler',
      },
      {
        layer: 'src/audit',
        files: ['pattern-safety.ts'],
        why: 'redaction patterns are checked by the redactor’s own safety rules',
      },
      {
        layer: 'src/trace',
        files: ['payload-mode.ts'],
        why: 'the trace section’s payload modes are the trace’s own list',
      },
    ],
  },
  {
    folder: 'src/space',
    name: 'space',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/meup' },
      { layer: 'src/observe' },
      { layer: 'src/core' },
      { layer: 'src/policy' },
      { layer: 'src/auth' },
      { layer: 'src/transports' },
      { layer: 'src/transports/http/server' },
      { layer: 'src/config', ...types, files: ['types.ts', 'sections/space.ts'] },
      { layer: 'src/trace', ...types },
      { layer: 'src/audit', files: ['request-scope.ts'], why: REQUEST_SCOPE },
    ],
  },
  {
    folder: 'src/gateways/governance',
    name: 'governance',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      { layer: 'src/core' },
      { layer: 'src/policy' },
      { layer: 'src/audit' },
      { layer: 'src/audit/ledger' },
      { layer: 'src/transports/http/server' },
      { layer: 'src/config', ...types, files: ['types.ts'] },
    ],
  },
  {
    folder: 'src/tape',
    name: 'tape',
    imports: [
      { layer: 'src/protocol/jsonrpc' },
      { layer: 'src/protocol/mcp' },
      { layer: 'src/envelope' },
      { layer: 'src/meup' },
      { layer: 'src/errors' },
      { layer: 'src/observe' },
      { layer: 'src/core' },
      { layer: 'src/audit' },
      { layer: 'src/trace' },
    ],
  },
  {
    folder: 'src/observe/otel',
    name: 'otel',
    imports: [
      { layer: 'src/protocol/jsonrpc', ...types },
      { layer: 'src/observe' },
      { layer: 'src/core', ...types },
      { layer: 'src/config', ...types, files: ['types.ts'] },
      { layer: 'src/policy', ...types, files: ['approvals.ts'] },
      { layer: 'src/gateways/governance', ...types, files: ['audit-sink.ts'] },
    ],
  },
  { folder: 'src/gateways', name: 'gateways', imports: '*' },
  { folder: 'src/index.ts', name: 'the package entry', imports: '*' },
  { folder: 'src/cli', name: 'cli', imports: '*' },
  // Test helpers shared across folders: excluded from the build; only tests import them.
  { folder: 'src/test-support', name: 'test support', imports: '*' },
];

/** The layer a repository-relative path belongs to: the longest folder that prefixes it. */
export function layerOf(path: string): Layer | undefined {
  let best: Layer | undefined;
  for (const layer of LAYERS) {
    if (path !== layer.folder && !path.startsWith(`${layer.folder}/`)) continue;
    if (best === undefined || layer.folder.length > best.folder.length) best = layer;
  }
  return best;
}

function byFolder(folder: string): Layer {
  const layer = LAYERS.find((l) => l.folder === folder);
  if (layer === undefined) throw new Error(`layer-rules: no layer ${folder}`);
  return layer;
}

/** The table's "imports" cell for a layer, e.g. "jsonrpc, mcp; config (types, `types.ts`)". */
export function renderImports(layer: Layer): string {
  if (layer.imports === '*') return layer.folder === 'src/cli' ? 'everything' : 'everything but cli';
  if (layer.imports.length === 0) return 'nothing of ours';
  return layer.imports
    .map((allowed) => {
      const name = byFolder(allowed.layer).name;
      const what = [
        ...(allowed.typesOnly === true ? ['types'] : []),
        ...(allowed.files ?? []).map((f) => `\`${f}\``),
        ...(allowed.except ?? []).map((f) => `not \`${f}\``),
      ];
      return `${name}${what.length > 0 ? ` (${what.join(', ')})` : ''}${allowed.why !== undefined ? ' †' : ''}`;
    })
    .join(', ');
}
