/**
 * `context`: an optional path string `root/child/grandchild` grouping envelopes into nested
 * sub-contexts (seed 004, ADR-p4m). An absent context is the main context. Valid paths have no
 * leading or trailing `/`, no empty segment, segments of `[A-Za-z0-9_-]+`, and by default at most 5
 * segments and 255 characters (bounds that keep a hostile peer from making paths expensive).
 *
 * Validation never throws and reports every distinct violation with its own code. The helpers
 * below it assume a valid path (validate first); the filters work over anything that has an
 * optional `context`, envelopes included.
 */

/** One code per way a context can be invalid (a subset of the codec's `MeupErrorCode`). */
export const ContextIssueCode = {
  NotString: 'context_not_string',
  LeadingSlash: 'context_leading_slash',
  TrailingSlash: 'context_trailing_slash',
  EmptySegment: 'context_empty_segment',
  InvalidSegment: 'context_invalid_segment',
  TooDeep: 'context_too_deep',
  TooLong: 'context_too_long',
} as const;

/** One of the `ContextIssueCode` values. */
export type ContextIssueCode = (typeof ContextIssueCode)[keyof typeof ContextIssueCode];

/** One violation of the path rules. */
export interface ContextIssue {
  readonly code: ContextIssueCode;
  readonly message: string;
}

/** The configurable bounds of a context path. */
export interface ContextLimits {
  /** Most segments allowed (ADR-p4m suggests 5). */
  readonly maxDepth: number;
  /** Most characters allowed (ADR-p4m suggests 255). */
  readonly maxLength: number;
}

/** ADR-p4m's suggested bounds: depth 5, length 255. */
export const DEFAULT_CONTEXT_LIMITS: ContextLimits = { maxDepth: 5, maxLength: 255 };

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** Whether `segment` can be one segment of a context path (`[A-Za-z0-9_-]+`, so no `/` or `:`). */
export function isValidContextSegment(segment: string): boolean {
  return SEGMENT.test(segment);
}

/**
 * Every rule `path` breaks, in a fixed order (type, leading slash, trailing slash, empty segment,
 * invalid segment, depth, length), each code at most once; `[]` means the path is valid. Depth
 * counts non-empty segments, so a stray slash is reported as a slash problem and not also as depth.
 */
export function validateContext(
  path: unknown,
  limits: ContextLimits = DEFAULT_CONTEXT_LIMITS,
): readonly ContextIssue[] {
  if (typeof path !== 'string') {
    const got =
      path === null || path === undefined
        ? String(path)
        : Array.isArray(path)
          ? 'an array'
          : typeof path === 'object'
            ? 'an object'
            : `a ${typeof path}`;
    return [{ code: ContextIssueCode.NotString, message: `context must be a string path, got ${got}` }];
  }
  const issues: ContextIssue[] = [];
  const segments = path.split('/');
  if (path.length > 0 && path.startsWith('/')) {
    issues.push({ code: ContextIssueCode.LeadingSlash, message: 'context must not start with "/"' });
  }
  if (path.length > 0 && path.endsWith('/')) {
    issues.push({ code: ContextIssueCode.TrailingSlash, message: 'context must not end with "/"' });
  }
  const filled = segments.filter((s) => s.length > 0);
  if (filled.length === 0) {
    issues.push({
      code: ContextIssueCode.EmptySegment,
      message: 'context has no segment (omit the field for the main context)',
    });
  } else if (segments.slice(1, -1).includes('')) {
    issues.push({ code: ContextIssueCode.EmptySegment, message: 'context has an empty segment ("//")' });
  }
  const bad = filled.findIndex((s) => !SEGMENT.test(s));
  if (bad >= 0) {
    issues.push({
      code: ContextIssueCode.InvalidSegment,
      message: `context segment ${bad + 1} has characters outside [A-Za-z0-9_-]`,
    });
  }
  if (filled.length > limits.maxDepth) {
    issues.push({
      code: ContextIssueCode.TooDeep,
      message: `context is ${filled.length} segments deep; at most ${limits.maxDepth} are allowed`,
    });
  }
  if (path.length > limits.maxLength) {
    issues.push({
      code: ContextIssueCode.TooLong,
      message: `context is ${path.length} characters long; at most ${limits.maxLength} are allowed`,
    });
  }
  return issues;
}

/** Whether `path` is a valid context under `limits` (the default bounds when omitted). */
export function isValidContext(path: unknown, limits?: ContextLimits): path is string {
  return validateContext(path, limits).length === 0;
}

/** The first segment: `contextRoot("a/b/c") === "a"`, and a root context is its own root. */
export function contextRoot(path: string): string {
  const slash = path.indexOf('/');
  return slash < 0 ? path : path.slice(0, slash);
}

/** The path without its last segment: `"a/b/c"` → `"a/b"`; a root context has no parent (`null`). */
export function contextParent(path: string): string | null {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? null : path.slice(0, slash);
}

/** The number of segments: `contextDepth("a") === 1`, `contextDepth("a/b") === 2`. */
export function contextDepth(path: string): number {
  let depth = 1;
  for (const ch of path) if (ch === '/') depth++;
  return depth;
}

/** Whether the context has a parent (contains a `/`). */
export function isNestedContext(path: string): boolean {
  return path.includes('/');
}

/**
 * Whether `ancestor` is a strict ancestor of `descendant`: a whole-segment prefix of it. A context
 * is not its own ancestor, and `"a"` is not an ancestor of `"ab/c"` (a string prefix that stops
 * inside a segment is a sibling, not an ancestor).
 */
export function isAncestorContext(ancestor: string, descendant: string): boolean {
  return descendant.length > ancestor.length + 1 && descendant.startsWith(`${ancestor}/`);
}

/** Whether `context` is `root` itself or anywhere below it; an absent context is in no subtree. */
export function isInSubtree(context: string | undefined, root: string): boolean {
  return context !== undefined && (context === root || isAncestorContext(root, context));
}

/** The result of building a child context; the issues say why the child would be invalid. */
export type ChildContextResult =
  | { readonly ok: true; readonly context: string }
  | { readonly ok: false; readonly issues: readonly ContextIssue[] };

/**
 * `parent/segment`, validated as a whole against `limits`: a segment containing `/` or other
 * forbidden characters, or a child deeper or longer than allowed, is refused with the issues.
 * Use it to open a sub-context (e.g. under a reasoning/start id) instead of concatenating strings.
 */
export function childContext(
  parent: string,
  segment: string,
  limits: ContextLimits = DEFAULT_CONTEXT_LIMITS,
): ChildContextResult {
  if (!SEGMENT.test(segment)) {
    return {
      ok: false,
      issues: [
        {
          code: ContextIssueCode.InvalidSegment,
          message: 'a child segment must be non-empty and contain only [A-Za-z0-9_-]',
        },
      ],
    };
  }
  const context = `${parent}/${segment}`;
  const issues = validateContext(context, limits);
  return issues.length === 0 ? { ok: true, context } : { ok: false, issues };
}

/** Anything that may carry a context, such as a `MeupEnvelope`. */
export interface HasContext {
  readonly context?: string | undefined;
}

/** The items whose context is `root` or below it (`root/**`), in their original order. */
export function subtree<T extends HasContext>(items: readonly T[], root: string): T[] {
  return items.filter((item) => isInSubtree(item.context, root));
}

/** The items exactly one level below `parent` (depth + 1), in their original order. */
export function directChildren<T extends HasContext>(items: readonly T[], parent: string): T[] {
  return items.filter((item) => item.context !== undefined && contextParent(item.context) === parent);
}

/** The items in a top-level sub-context: a context with no `/` (the empty string excluded). */
export function rootContexts<T extends HasContext>(items: readonly T[]): T[] {
  return items.filter(
    (item) => item.context !== undefined && item.context.length > 0 && !isNestedContext(item.context),
  );
}

/** The items in the main context: those with no `context` at all. */
export function mainContextOnly<T extends HasContext>(items: readonly T[]): T[] {
  return items.filter((item) => item.context === undefined);
}
