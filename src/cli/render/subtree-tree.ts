/**
 * A context subtree as an indented tree, like `tree(1)` for contexts: each context is a branch
 * (written `segment/`), its envelopes and child contexts are the entries beneath it, siblings in
 * time order. A request's sub-context therefore reads as "everything this call caused", with a
 * nested server->client request as a branch inside it.
 */
import type { TraceRecord } from '../../trace/types.js';
import { hopTime, indexById, summaryLine } from './record-fields.js';
import { createStyle, type Style } from './style.js';

interface Branch {
  readonly segment: string;
  readonly records: { readonly record: TraceRecord; readonly index: number }[];
  readonly children: Map<string, Branch>;
  /** Earliest hop time (`hopTime`) and insertion index anywhere below, to place the branch among siblings. */
  time: number;
  index: number;
}

function branch(segment: string): Branch {
  return {
    segment,
    records: [],
    children: new Map(),
    time: Number.POSITIVE_INFINITY,
    index: Number.POSITIVE_INFINITY,
  };
}

type Item =
  | { kind: 'record'; record: TraceRecord; time: number; index: number }
  | { kind: 'branch'; branch: Branch; time: number; index: number };

/**
 * Renders the envelopes of `records` that lie in `context`'s subtree (others are ignored) under a
 * root line naming `context`. Entries are ordered by their hop time (`hopTime`: when the gateway wrote or read them), ties by their order in
 * `records`; a branch sits where its earliest envelope would.
 */
export function renderSubtree(
  context: string,
  records: readonly TraceRecord[],
  options: { readonly color: boolean },
): string {
  const style = createStyle(options.color);
  const root = branch(context);
  const prefix = `${context}/`;
  records.forEach((record, index) => {
    const c = record.envelope.context;
    if (c === undefined || (c !== context && !c.startsWith(prefix))) return;
    let node = root;
    const visit = (n: Branch): void => {
      n.time = Math.min(n.time, hopTime(record));
      n.index = Math.min(n.index, index);
    };
    visit(node);
    if (c !== context) {
      for (const segment of c.slice(prefix.length).split('/')) {
        let child = node.children.get(segment);
        if (!child) {
          child = branch(segment);
          node.children.set(segment, child);
        }
        node = child;
        visit(node);
      }
    }
    node.records.push({ record, index });
  });
  const lines = [style.bold(context)];
  writeBranch(root, '', lines, style, indexById(records));
  return `${lines.join('\n')}\n`;
}

function writeBranch(
  node: Branch,
  indent: string,
  lines: string[],
  style: Style,
  known: ReadonlyMap<string, TraceRecord>,
): void {
  const items: Item[] = [
    ...node.records.map(
      ({ record, index }): Item => ({ kind: 'record', record, time: hopTime(record), index }),
    ),
    ...[...node.children.values()].map(
      (b): Item => ({ kind: 'branch', branch: b, time: b.time, index: b.index }),
    ),
  ].sort((a, b) => a.time - b.time || a.index - b.index);
  items.forEach((item, i) => {
    const last = i === items.length - 1;
    const elbow = last ? '└─ ' : '├─ ';
    if (item.kind === 'record') {
      lines.push(`${indent}${style.dim(elbow)}${summaryLine(item.record, style, known)}`);
    } else {
      lines.push(`${indent}${style.dim(elbow)}${style.bold(`${item.branch.segment}/`)}`);
      writeBranch(item.branch, `${indent}${style.dim(last ? '   ' : '│  ')}`, lines, style, known);
    }
  });
}
