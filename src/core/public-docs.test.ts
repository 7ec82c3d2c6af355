/**
 * Issue 20: every public member of the core and of the ports a newcomer meets first has a doc
 * comment (`/** … *\/`) saying what it does. This holds the "has one" half; what it says is for
 * review. Public means exported (functions, classes, interfaces, types, constants) and, inside an
 * exported class or interface, every member that is not `#private` or `private`/`protected`
 * (a constructor without parameters excepted).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('..', import.meta.url));

/**
 * The folders held to it, below `src/`: every `.ts` file in one but tests (`*.test.ts`), so a new
 * file is held at once (the contract suites in `test-support/` too: a new transport's author reads
 * them). `below: false` leaves out subfolders not yet held: observe's exporters (otel/, prometheus/),
 * tape's check/ and replay/.
 */
const FOLDERS: readonly { readonly folder: string; readonly below: boolean }[] = [
  { folder: 'core', below: true },
  { folder: 'observe', below: false },
  { folder: 'transports/http/events', below: true },
  { folder: 'transports/http/sse', below: true },
  { folder: 'transports/stdio', below: true },
  { folder: 'tape', below: false },
];

/** The source files in `src/<folder>` (and below it, with `below`), as paths from `src/`, sorted. */
function sourceFiles(folder: string, below: boolean): string[] {
  return readdirSync(join(SRC, folder), { recursive: below, encoding: 'utf8' })
    .map((name) => join(folder, name).split(sep).join('/'))
    .filter((path) => path.endsWith('.ts') && !path.endsWith('.test.ts'))
    .sort();
}

function hasDoc(node: ts.Node): boolean {
  return ts.getJSDocCommentsAndTags(node).length > 0;
}

function exported(node: ts.Node): boolean {
  return (ts.getCombinedModifierFlags(node as ts.Declaration) & ts.ModifierFlags.Export) !== 0;
}

/** `file:line name` of each public declaration or member of `text` without a doc comment. */
function undocumented(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
  const missing: string[] = [];
  for (const statement of sf.statements) {
    if (!exported(statement)) continue;
    if (ts.isVariableStatement(statement)) {
      const name = statement.declarationList.declarations[0]?.name.getText() ?? '?';
      if (!hasDoc(statement)) missing.push(`${file}:${line(statement)} ${name}`);
      continue;
    }
    if (
      !(
        ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)
      )
    ) {
      continue;
    }
    const owner = statement.name?.getText() ?? 'default';
    if (!hasDoc(statement)) missing.push(`${file}:${line(statement)} ${owner}`);
    if (!ts.isClassDeclaration(statement) && !ts.isInterfaceDeclaration(statement)) continue;
    for (const member of statement.members as ts.NodeArray<ts.ClassElement | ts.TypeElement>) {
      if (ts.isIndexSignatureDeclaration(member) || ts.isClassStaticBlockDeclaration(member)) continue;
      if (ts.isConstructorDeclaration(member) && member.parameters.length === 0) continue;
      const name = ts.isConstructorDeclaration(member) ? 'constructor' : (member.name?.getText() ?? '?');
      if (name.startsWith('#')) continue;
      const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
      if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
      if (!hasDoc(member)) missing.push(`${file}:${line(member)} ${owner}.${name}`);
    }
  }
  return missing;
}

for (const { folder, below } of FOLDERS) {
  describe(`doc comments on the public members of src/${folder}`, () => {
    const files = sourceFiles(folder, below);

    it('finds its source files', () => {
      expect(files.length).toBeGreaterThan(0);
    });

    it('every one has one', () => {
      const missing = files.flatMap((path) =>
        undocumented(`src/${path}`, readFileSync(join(SRC, path), 'utf8')),
      );
      expect(missing).toEqual([]);
    });
  });
}

describe('the check', () => {
  it('names what lacks one, and passes over what is not public', () => {
    const text = [
      '/** Documented. */',
      'export class A {',
      '  /** Documented. */',
      '  a = 1;',
      '  b = 2;',
      '  #c = 3;',
      '  private d = 4;',
      '  constructor(x: number) {}',
      '  get e(): number { return 1; }',
      '}',
      'export interface I {',
      '  /** Documented. */',
      '  readonly f: string;',
      '  g(): void;',
      '}',
      'export const H = 1;',
      'export function k(): void {}',
      'function internal(): void {}',
      'class Hidden { x = 1; }',
    ].join('\n');
    expect(undocumented('x.ts', text)).toEqual([
      'x.ts:5 A.b',
      'x.ts:8 A.constructor',
      'x.ts:9 A.e',
      'x.ts:11 I',
      'x.ts:14 I.g',
      'x.ts:16 H',
      'x.ts:17 k',
    ]);
  });
});
