/**
 * The layer table of docs/architecture.md, checked: every import of the sources keeps the rules
 * of `test-support/layer-rules.ts`, and the table and its list of exceptions say exactly what
 * those rules are.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { judgeImport, readImports } from './test-support/import-check.js';
import { LAYERS, layerOf, renderImports } from './test-support/layer-rules.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Every production source file (tests and test support are held to nothing). */
function productionFiles(): string[] {
  const entries = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((path) => !path.split('/').includes('test-support'))
    .sort();
}

/** The "Layers and folders" table: first cell's folders (backquoted) → the imports cell. */
function tableRows(): Map<string, string> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Layers and folders'));
  const rows = new Map<string, string>();
  for (const line of section.split('\n').slice(1)) {
    if (line.startsWith('## ')) break;
    const cells = line.split('|').map((c) => c.trim());
    const folder = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (folder === undefined) continue;
    rows.set(folder.replace(/\/$/, ''), cells[3] ?? '');
  }
  return rows;
}

describe('the layers of docs/architecture.md', () => {
  it('every import of the sources keeps them', () => {
    const files = productionFiles();
    expect(files.length).toBeGreaterThan(200);
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const imported of readImports(file, text)) {
        const verdict = judgeImport(file, imported);
        if (verdict !== undefined) broken.push(verdict);
      }
    }
    expect(broken).toEqual([]);
    // Parses every source file (~2.5 s on a quiet machine): a loaded CI machine took past the
    // unit tests' 10 s, so this one has a minute; it is a check of the code, not of its speed.
  }, 60_000);

  it('fails an import against the table', () => {
    // The core importing a transport, a transport importing the concrete config, the jsonrpc layer
    // importing anything of ours: each is refused, and says why.
    const check = (file: string, text: string) => readImports(file, text).map((i) => judgeImport(file, i));
    expect(
      check('src/core/x.ts', "import { StdioDownstream } from '../transports/stdio/stdio-downstream.js';"),
    ).toEqual([
      'src/core/x.ts:1 imports ../transports/stdio/stdio-downstream.js: core (src/core) may not import stdio (src/transports/stdio)',
    ]);
    expect(
      check('src/transports/http/server/x.ts', "import { loadConfig } from '../../../config/load.js';"),
    ).toEqual([
      'src/transports/http/server/x.ts:1 imports ../../../config/load.js: http server (src/transports/http/server) may import only types.ts of config (src/config)',
    ]);
    expect(check('src/auth/x.ts', "import { GatewayConfig } from '../config/types.js';")[0]).toMatch(
      /may import only types from config .*use `import type`/,
    );
    expect(
      check('src/protocol/jsonrpc/x.ts', "const m = await import('../../observe/logger.js');")[0],
    ).toMatch(/jsonrpc \(src\/protocol\/jsonrpc\) may not import observe/);
    expect(
      check('src/transports/stdio/x.ts', "import type { Router } from '../../core/router.js';")[0],
    ).toMatch(/stdio \(src\/transports\/stdio\) may not import router.ts of core/);
    expect(check('src/gateways/x.ts', "import { main } from '../cli/main.js';")[0]).toMatch(
      /nothing imports from the CLI/,
    );
    expect(check('src/space/x.ts', "import { f } from './test-support/fixtures.js';")[0]).toMatch(
      /production code may not import test support/,
    );
    // Type-only forms are recognised: `import type`, every binding marked `type`, `import('…').T`.
    expect(
      check(
        'src/auth/x.ts',
        [
          "import type { A } from '../config/types.js';",
          "import { type B, type C } from '../config/types.js';",
          "let d: import('../config/types.js').GatewayConfig;",
        ].join('\n'),
      ),
    ).toEqual([undefined, undefined, undefined]);
  });

  it('every file is in a layer, and every layer has its row with its imports', () => {
    expect(productionFiles().filter((f) => layerOf(f) === undefined)).toEqual([]);
    const rows = tableRows();
    for (const layer of LAYERS) {
      expect(rows.has(layer.folder), `docs/architecture.md has no row for ${layer.folder}`).toBe(true);
      expect(rows.get(layer.folder), `the imports of ${layer.folder}`).toBe(renderImports(layer));
    }
    expect([...rows.keys()].filter((folder) => !LAYERS.some((l) => l.folder === folder))).toEqual([]);
  });

  it('every exception to the layers is listed below the table with its reason', () => {
    const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    for (const layer of LAYERS) {
      if (layer.imports === '*') continue;
      for (const allowed of layer.imports) {
        if (allowed.why === undefined) continue;
        expect(doc, `the reason ${layer.folder} imports ${allowed.layer}`).toContain(allowed.why);
      }
    }
  });
});
