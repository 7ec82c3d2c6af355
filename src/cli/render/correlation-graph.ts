/**
 * The correlation graph around one envelope, as text: the root, then what it answers (walking
 * `correlation_id` outward, "answers ↑") and what answers it ("answered by ↓"), each entry indented
 * by its distance from the root so that a request chain reads as a ladder.
 */
import type { CorrelationGraph, TraceRecord } from '../../trace/types.js';
import { indexById, summaryLine } from './record-fields.js';
import { createStyle, type Style } from './style.js';

/**
 * Renders `graph`. Distances are recomputed from `graph.edges` (breadth-first from the root:
 * along edges for "answers", against them for "answered by"); entries keep the graph's order
 * (by distance, then as recorded), so a fan-in shows as siblings at the same depth.
 */
export function renderCorrelationGraph(
  graph: CorrelationGraph,
  options: { readonly color: boolean },
): string {
  const style = createStyle(options.color);
  const rootId = graph.root.envelope.id;
  const up = distances(rootId, graph.edges, 'out');
  const down = distances(rootId, graph.edges, 'in');
  const known = indexById([graph.root, ...graph.answers, ...graph.answeredBy]);
  const lines = [`${summaryLine(graph.root, style, known)}  ${style.dim('(root)')}`];
  section(lines, 'answers ↑', graph.answers, up, style, known);
  section(lines, 'answered by ↓', graph.answeredBy, down, style, known);
  return `${lines.join('\n')}\n`;
}

function section(
  lines: string[],
  title: string,
  records: readonly TraceRecord[],
  distance: ReadonlyMap<string, number>,
  style: Style,
  known: ReadonlyMap<string, TraceRecord>,
): void {
  lines.push(style.bold(title));
  if (records.length === 0) {
    lines.push(`  ${style.dim('(none)')}`);
    return;
  }
  for (const record of records) {
    const d = distance.get(record.envelope.id) ?? 1;
    lines.push(`${'  '.repeat(d)}${summaryLine(record, style, known)}`);
  }
}

function distances(
  rootId: string,
  edges: readonly { readonly from: string; readonly to: string }[],
  direction: 'out' | 'in',
): Map<string, number> {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    const [a, b] = direction === 'out' ? [edge.from, edge.to] : [edge.to, edge.from];
    const list = next.get(a);
    if (list) list.push(b);
    else next.set(a, [b]);
  }
  const found = new Map<string, number>([[rootId, 0]]);
  let frontier = [rootId];
  for (let d = 1; frontier.length > 0; d++) {
    const following: string[] = [];
    for (const id of frontier) {
      for (const other of next.get(id) ?? []) {
        if (found.has(other)) continue;
        found.set(other, d);
        following.push(other);
      }
    }
    frontier = following;
  }
  return found;
}
