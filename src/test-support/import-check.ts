/**
 * Reads a source file's imports and judges them against the layer rules (`layer-rules.ts`).
 * Pure but for `readImports`' parse: the test feeds it real files, and a made-up one to show that
 * a wrong import fails.
 */
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';
import { type Layer, layerOf } from './layer-rules.js';

/** One relative import of a file: static, re-export or dynamic. */
export interface SourceImport {
  /** As written, e.g. `../core/router.js`. */
  readonly specifier: string;
  /** `import type` / `export type`, or every named binding marked `type`. */
  readonly typeOnly: boolean;
  readonly line: number;
}

/** The relative imports of one TypeScript file's text. Package imports are not layers. */
export function readImports(fileName: string, text: string): SourceImport[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: SourceImport[] = [];
  const add = (node: ts.Node, specifier: ts.Expression | undefined, typeOnly: boolean): void => {
    if (specifier === undefined || !ts.isStringLiteral(specifier)) return;
    if (!specifier.text.startsWith('.')) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    found.push({ specifier: specifier.text, typeOnly, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const allNamedTypes =
        clause !== undefined &&
        clause.name === undefined &&
        bindings !== undefined &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((e) => e.isTypeOnly);
      add(node, node.moduleSpecifier, clause?.isTypeOnly === true || allNamedTypes);
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], false);
    } else if (ts.isImportTypeNode(node)) {
      // `import('../x.js').Type` in a type position.
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument)) add(node, argument.literal as ts.Expression, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The repository-relative `.ts` path an import names. */
export function resolveImport(fromFile: string, specifier: string): string {
  return normalize(join(dirname(fromFile), specifier)).replace(/\.js$/, '.ts');
}

/** Why an import breaks the rules, or undefined when it keeps them. */
export function judgeImport(fromFile: string, imported: SourceImport): string | undefined {
  const target = resolveImport(fromFile, imported.specifier);
  const from = layerOf(fromFile);
  const to = layerOf(target);
  const where = `${fromFile}:${imported.line} imports ${imported.specifier}`;
  if (from === undefined) return `${fromFile} is in no layer of docs/architecture.md`;
  if (to === undefined) return `${where}: ${target} is in no layer`;
  if (isTestSupport(target) && !isTestSupport(fromFile)) {
    return `${where}: production code may not import test support`;
  }
  if (from === to) return undefined;
  if (to.folder === 'src/cli') return `${where}: nothing imports from the CLI`;
  if (from.imports === '*') return undefined;
  const allowed = from.imports.find((a) => a.layer === to.folder);
  if (allowed === undefined) return `${where}: ${describe(from)} may not import ${describe(to)}`;
  const file = target.slice(to.folder.length + 1);
  if (allowed.files !== undefined && !allowed.files.includes(file)) {
    return `${where}: ${describe(from)} may import only ${allowed.files.join(', ')} of ${describe(to)}`;
  }
  if (allowed.except?.includes(file) === true) {
    return `${where}: ${describe(from)} may not import ${file} of ${describe(to)}`;
  }
  if (allowed.typesOnly === true && !imported.typeOnly) {
    return `${where}: ${describe(from)} may import only types from ${describe(to)} (use \`import type\`)`;
  }
  return undefined;
}

function isTestSupport(path: string): boolean {
  return path.split('/').includes('test-support') || path.endsWith('.test.ts');
}

function describe(layer: Layer): string {
  return `${layer.name} (${layer.folder})`;
}
