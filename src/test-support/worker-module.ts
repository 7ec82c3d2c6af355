/**
 * Worker-thread modules for unit tests. Vitest runs the TypeScript sources, but a worker thread is
 * plain Node, which cannot load them: this compiles a worker's entry and everything it imports
 * (transpile only, no type check) into a scratch directory under the repository's `.tmp/`, where
 * packages still resolve from `node_modules`, once per entry and test process.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = resolve(SRC, '..');

const built = new Map<string, URL>();

/** The URL of the compiled `entry`, a path relative to `src/` such as `trace/trace-worker.ts`. */
export function compiledWorkerUrl(entry: string): URL {
  const known = built.get(entry);
  if (known) return known;
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const out = mkdtempSync(join(ROOT, '.tmp', 'worker-'));
  process.once('exit', () => rmSync(out, { recursive: true, force: true }));
  const pending = [join(SRC, entry)];
  const done = new Set<string>();
  while (pending.length > 0) {
    const file = pending.pop() as string;
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
  const url = pathToFileURL(join(out, entry.replace(/\.ts$/, '.js')));
  built.set(entry, url);
  return url;
}
