/**
 * A conservative check that a redaction pattern an operator writes (`audit.redact.patterns`) cannot
 * make JavaScript's backtracking engine run away on text a client sends. It refuses the shapes that
 * make a failing match try exponentially many or polynomially many ways of sharing out the text:
 *
 * - a backreference (`\1`, `\k<name>`);
 * - a loop (`*`, `+`, `{n,}`) over a group that itself holds a choice: a quantifier that may
 *   repeat a varying number of times, an alternation, or a lookaround (`(a+)+`, `(a|ab)*`);
 * - a group repeated a bounded number of times, above {@link MAX_UNROLLED}, that holds a choice
 *   (`(?:\w+\.){1,50}`); up to that bound the repetition is written out and checked as below;
 * - two varying quantifiers that can follow one another on some path through the pattern and
 *   match a common character, when everything that must match between them can match that
 *   character too (`\s*\s*`, `\w+_?\w+`, `[ab]*b[ab]*`): each way of splitting a run of that
 *   character between them is one more way for a failing match to fail.
 *
 * What is left fails each start position in time proportional to the text it scans; the redactor
 * bounds that text by matching long strings piece by piece (see `redaction.ts`). The check is
 * conservative: it reasons about the sets of characters each part can match (computed by the
 * engine itself, one UTF-16 unit at a time, as patterns compiled without the `u` flag read text),
 * and it may refuse a harmless pattern (`.*=.*` cannot fail once it has found `=`, but is
 * refused). It never throws.
 */

/** A bounded repetition of a group holding a choice is written out up to this many times. */
export const MAX_UNROLLED = 8;

/**
 * A quantifier choosing among at most this many counts plus one (`x?`, `\d{1,3}`) is short: next
 * to a long one (`*`, `+`, `{20,}`) it multiplies the work by a constant, so only two short ones
 * or two long ones that can share characters are refused.
 */
export const MAX_SHORT_RANGE = 16;

const UNITS = 0x1_0000;
type CharSet = Uint32Array;

/** One part of a parsed pattern. */
type Node =
  | { readonly t: 'char'; readonly src: string }
  | { readonly t: 'assert' }
  | { readonly t: 'backref'; readonly src: string }
  | { readonly t: 'group'; readonly look: boolean; readonly alts: Node[][]; readonly src: string }
  | {
      readonly t: 'quant';
      readonly min: number;
      readonly max: number;
      readonly body: Node;
      readonly src: string;
    };

class Unsupported extends Error {}

class Parser {
  i = 0;
  constructor(readonly src: string) {}

  alternatives(): Node[][] {
    const alts: Node[][] = [[]];
    while (this.i < this.src.length && this.src[this.i] !== ')') {
      if (this.src[this.i] === '|') {
        this.i++;
        alts.push([]);
        continue;
      }
      const start = this.i;
      const term = this.term();
      alts[alts.length - 1]!.push(this.quantified(term, start));
    }
    return alts;
  }

  term(): Node {
    const { src } = this;
    const start = this.i;
    const c = src[this.i]!;
    if (c === '^' || c === '$') {
      this.i++;
      return { t: 'assert' };
    }
    if (c === '(') {
      let look = false;
      if (src.startsWith('(?:', this.i)) this.i += 3;
      else if (src.startsWith('(?=', this.i) || src.startsWith('(?!', this.i)) {
        this.i += 3;
        look = true;
      } else if (src.startsWith('(?<=', this.i) || src.startsWith('(?<!', this.i)) {
        this.i += 4;
        look = true;
      } else if (src.startsWith('(?<', this.i)) {
        const end = src.indexOf('>', this.i);
        if (end < 0) throw new Unsupported('a group name');
        this.i = end + 1;
      } else if (src.startsWith('(?', this.i)) {
        throw new Unsupported(`the group ${JSON.stringify(src.slice(this.i, this.i + 4))}`);
      } else this.i++;
      const alts = this.alternatives();
      if (src[this.i] !== ')') throw new Unsupported('an unclosed group');
      this.i++;
      return { t: 'group', look, alts, src: src.slice(start, this.i) };
    }
    if (c === '[') {
      let j = this.i + 1;
      if (src[j] === '^') j++;
      while (j < src.length && src[j] !== ']') j += src[j] === '\\' ? 2 : 1;
      this.i = j + 1;
      return { t: 'char', src: src.slice(start, this.i) };
    }
    if (c === '\\') {
      const next = src[this.i + 1] ?? '';
      if (next === 'b' || next === 'B') {
        this.i += 2;
        return { t: 'assert' };
      }
      if (/[1-9]/.test(next) || (next === 'k' && src[this.i + 2] === '<')) {
        this.i += 2;
        return { t: 'backref', src: src.slice(start, this.i) };
      }
      let length = 2;
      if (next === 'x' && /^[0-9A-Fa-f]{2}/.test(src.slice(this.i + 2))) length = 4;
      else if (next === 'u' && /^[0-9A-Fa-f]{4}/.test(src.slice(this.i + 2))) length = 6;
      else if (next === 'c') length = /[A-Za-z]/.test(src[this.i + 2] ?? '') ? 3 : 1;
      else if (next === '0') length = 2 + (/^[0-7]{0,2}/.exec(src.slice(this.i + 2))?.[0].length ?? 0);
      this.i += length;
      return { t: 'char', src: length === 1 ? '\\\\' : src.slice(start, this.i) };
    }
    this.i++;
    return { t: 'char', src: c };
  }

  quantified(node: Node, start: number): Node {
    const { src } = this;
    let min: number;
    let max: number;
    const c = src[this.i];
    const counted = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(this.i));
    if (c === '*' || c === '+' || c === '?') {
      [min, max] = c === '*' ? [0, Infinity] : c === '+' ? [1, Infinity] : [0, 1];
      this.i++;
    } else if (counted) {
      min = Number(counted[1]);
      max = counted[2] === undefined ? min : counted[3] === '' ? Infinity : Number(counted[3]);
      this.i += counted[0].length;
    } else return node;
    if (src[this.i] === '?') this.i++;
    return { t: 'quant', min, max, body: node, src: src.slice(start, this.i) };
  }
}

const setCache = new Map<string, CharSet>();

/** The UTF-16 units a one-character atom matches, asked of the engine itself. */
function charSet(src: string, flags: string): CharSet {
  const key = `${flags}/${src}`;
  let set = setCache.get(key);
  if (set) return set;
  set = new Uint32Array(UNITS / 32);
  if (src.length === 1 && src !== '.') {
    const code = src.charCodeAt(0);
    set[code >>> 5]! |= 1 << (code & 31);
  } else {
    let any = false;
    try {
      const re = new RegExp(`^(?:${src})$`, flags);
      for (let code = 0; code < UNITS; code++) {
        if (re.test(String.fromCharCode(code))) {
          set[code >>> 5]! |= 1 << (code & 31);
          any = true;
        }
      }
    } catch {
      // Cannot happen for a part of a pattern that compiled; fall through to "anything".
    }
    // An atom read wrongly would match nothing here: assume it matches anything instead.
    if (!any && src !== '[]') set.fill(0xffff_ffff);
  }
  if (setCache.size < 4096) setCache.set(key, set);
  return set;
}

function intersect(a: CharSet, b: CharSet): CharSet {
  const out = new Uint32Array(a.length);
  for (let k = 0; k < a.length; k++) out[k] = a[k]! & b[k]!;
  return out;
}

function union(a: CharSet, b: CharSet): CharSet {
  const out = new Uint32Array(a.length);
  for (let k = 0; k < a.length; k++) out[k] = a[k]! | b[k]!;
  return out;
}

function isEmpty(set: CharSet): boolean {
  return set.every((word) => word === 0);
}

/** Whether a node can match in more than one way: a varying quantifier, an alternation, a lookaround. */
function hasChoice(node: Node): boolean {
  if (node.t === 'quant') return node.max > node.min || hasChoice(node.body);
  if (node.t === 'group')
    return node.look || node.alts.length > 1 || node.alts.some((a) => a.some(hasChoice));
  return node.t === 'backref';
}

function findBackref(nodes: readonly Node[]): Node | undefined {
  for (const node of nodes) {
    if (node.t === 'backref') return node;
    const inner =
      node.t === 'quant'
        ? findBackref([node.body])
        : node.t === 'group'
          ? findBackref(node.alts.flat())
          : undefined;
    if (inner) return inner;
  }
  return undefined;
}

/**
 * A part of the pattern laid out in order: a varying quantifier (`var`), or a single character
 * that must match (`fixed`). `on` lists the choices it depends on (`group:branch`): two parts are
 * on a common path unless they sit in different branches of one choice.
 */
interface Part {
  readonly kind: 'var' | 'fixed';
  readonly set: CharSet;
  /** A varying quantifier that must match at least once also stands between its neighbours. */
  readonly mandatory: boolean;
  readonly on: ReadonlyMap<number, number>;
  /** How many counts a varying quantifier may choose between, less one (`max - min`). */
  readonly range: number;
  readonly src: string;
}

class Layout {
  readonly parts: Part[] = [];
  readonly problems: string[] = [];
  /** Lookaround contents, checked on their own. */
  readonly separate: Node[][][] = [];
  #choices = 0;

  constructor(readonly flags: string) {}

  choice(): number {
    return this.#choices++;
  }

  sequence(nodes: readonly Node[], on: ReadonlyMap<number, number>): void {
    for (const node of nodes) this.node(node, on);
  }

  alternatives(alts: readonly Node[][], on: ReadonlyMap<number, number>): void {
    if (alts.length === 1) {
      this.sequence(alts[0]!, on);
      return;
    }
    const id = this.choice();
    alts.forEach((alt, branch) => {
      this.sequence(alt, new Map(on).set(id, branch));
    });
  }

  node(node: Node, on: ReadonlyMap<number, number>): void {
    if (node.t === 'char')
      this.parts.push({
        kind: 'fixed',
        set: charSet(node.src, this.flags),
        mandatory: true,
        on,
        range: 0,
        src: node.src,
      });
    else if (node.t === 'group') {
      if (node.look) this.separate.push(node.alts);
      else this.alternatives(node.alts, on);
    } else if (node.t === 'quant') this.quant(node, on);
  }

  quant(node: Extract<Node, { t: 'quant' }>, on: ReadonlyMap<number, number>): void {
    const { body, min, max } = node;
    if (max === 0) return;
    if (body.t === 'char') {
      const set = charSet(body.src, this.flags);
      if (max === min) this.parts.push({ kind: 'fixed', set, mandatory: true, on, range: 0, src: node.src });
      else this.parts.push({ kind: 'var', set, mandatory: min > 0, on, range: max - min, src: node.src });
      return;
    }
    if (body.t !== 'group') return;
    if (!hasChoice(body)) {
      if (max === min || body.look) {
        this.repeat(body, min, min, on);
        return;
      }
      // A loop over a fixed run of characters: one part, matching any of them.
      const set = [...chars(body)]
        .map((src) => charSet(src, this.flags))
        .reduce(union, new Uint32Array(UNITS / 32));
      this.parts.push({ kind: 'var', set, mandatory: min > 0, on, range: max - min, src: node.src });
      return;
    }
    if (max === Number.POSITIVE_INFINITY) {
      this.problems.push(
        `${node.src} repeats a group that holds a quantifier, an alternation or a lookaround: ` +
          'a failing match may try exponentially many ways to share the text between the repetitions',
      );
    } else if (max > MAX_UNROLLED) {
      this.problems.push(
        `${node.src} repeats up to ${max} times a group that holds a quantifier, an alternation or a lookaround ` +
          `(at most ${MAX_UNROLLED} are checked): write the repetitions out, or simplify the group`,
      );
    } else this.repeat(body, min, max, on);
  }

  /** `min` copies that must match, then `max - min` that may. */
  repeat(body: Node, min: number, max: number, on: ReadonlyMap<number, number>): void {
    for (let k = 0; k < max; k++) {
      this.node(body, k < min ? on : new Map(on).set(this.choice(), 0));
    }
  }
}

function* chars(node: Node): Generator<string> {
  if (node.t === 'char') yield node.src;
  else if (node.t === 'quant') yield* chars(node.body);
  else if (node.t === 'group' && !node.look) for (const n of node.alts.flat()) yield* chars(n);
}

/** A varying quantifier whose number of choices grows with the text (or could as well). */
function isLong(part: Part): boolean {
  return part.range > MAX_SHORT_RANGE;
}

/** Whether two parts can be on one path: no choice puts them in different branches. */
function compatible(a: Part, b: Part): boolean {
  for (const [id, branch] of a.on) {
    const other = b.on.get(id);
    if (other !== undefined && other !== branch) return false;
  }
  return true;
}

/** Whether `m` must match on every path through both `a` and `b`. */
function between(m: Part, a: Part, b: Part): boolean {
  if (!m.mandatory) return false;
  for (const [id, branch] of m.on) if (a.on.get(id) !== branch && b.on.get(id) !== branch) return false;
  return true;
}

function checkLayout(alts: Node[][], flags: string, problems: string[]): void {
  const layout = new Layout(flags);
  layout.alternatives(alts, new Map());
  problems.push(...layout.problems);
  const { parts } = layout;
  for (let i = 0; i < parts.length && problems.length === 0; i++) {
    const a = parts[i]!;
    if (a.kind !== 'var') continue;
    for (let j = i + 1; j < parts.length; j++) {
      const b = parts[j]!;
      // A short quantifier next to a long one only multiplies the work by its few choices.
      if (b.kind !== 'var' || isLong(a) !== isLong(b) || !compatible(a, b)) continue;
      let shared = intersect(a.set, b.set);
      for (let k = i + 1; k < j && !isEmpty(shared); k++) {
        const m = parts[k]!;
        if (compatible(m, a) && compatible(m, b) && between(m, a, b)) shared = intersect(shared, m.set);
      }
      if (!isEmpty(shared)) {
        problems.push(
          `${a.src} and ${b.src} can match the same characters one after the other: a failing match ` +
            'tries every way of splitting a run of them, in time that grows with a power of its length',
        );
        return;
      }
    }
  }
  for (const inner of layout.separate) checkLayout(inner, flags, problems);
}

/**
 * Why `source` (a regular expression compiled with `flags`, here without `u`) could backtrack out
 * of proportion to its input, or undefined when the conservative check finds nothing. Assumes the
 * pattern compiles.
 */
export function slowPatternProblem(source: string, flags = ''): string | undefined {
  let alts: Node[][];
  try {
    const parser = new Parser(source);
    alts = parser.alternatives();
    if (parser.i !== source.length) throw new Unsupported('an unbalanced )');
  } catch (error) {
    if (!(error instanceof Unsupported)) throw error;
    return `it holds ${error.message}, which this check does not read`;
  }
  const backref = findBackref(alts.flat());
  if (backref !== undefined && backref.t === 'backref') {
    return `${backref.src} is a backreference: matching one may take exponential time`;
  }
  const problems: string[] = [];
  checkLayout(alts, flags.replace(/[gy]/g, ''), problems);
  return problems[0];
}
