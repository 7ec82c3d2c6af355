/**
 * The trace worker for unit tests. Vitest runs the TypeScript sources, but a worker thread is
 * plain Node, which cannot load them: this compiles `trace-worker.ts` and everything it imports
 * (transpile only, no type check) into a scratch directory under the repository's `.tmp/`, where
 * `better-sqlite3` still resolves from `node_modules`, once per test process.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import type { TraceWorkerModule } from '../worker-trace-store.js';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ROOT = resolve(SRC, '..');

let built: TraceWorkerModule | undefined;

/** The compiled worker module (built on first use). */
export function testTraceWorker(): TraceWorkerModule {
  if (built) return built;
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const out = mkdtempSync(join(ROOT, '.tmp', 'trace-worker-'));
  process.once('exit', () => rmSync(out, { recursive: true, force: true }));
  const pending = [join(SRC, 'trace', 'trace-worker.ts')];
  const done = new Set<string>();
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (done.has(file)) continue;
    done.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/from '(\.[^']+)\.js'/g))
      pending.push(resolve(dirname(file), `${match[1]}.ts`));
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
      fileName: file,
    });
    const target = join(out, relative(SRC, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  built = { url: pathToFileURL(join(out, 'trace', 'trace-worker.js')) };
  return built;
}
