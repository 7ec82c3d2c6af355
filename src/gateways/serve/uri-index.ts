/**
 * Which upstream owns a resource URI behind the aggregated endpoint, learnt from the resource and
 * template lists that pass through. URIs are not renamed (they are identifiers clients keep and
 * embed), so when several upstreams list the same URI the owner is chosen deterministically: the
 * first of the session's upstreams in configuration order. Templates (RFC 6570) are matched with
 * every expression standing for any non-empty text.
 */
interface Template {
  readonly pattern: RegExp;
  readonly upstream: string;
}

const MAX_TEMPLATES = 10_000;
const MAX_URIS = 100_000;

function templatePattern(template: string): RegExp | undefined {
  if (template.length > 2048) return undefined;
  const parts = template.split(/\{[^}]*\}/);
  if (parts.length === 1) return undefined;
  const escaped = parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.+')}$`);
}

export class UriIndex {
  readonly #owners = new Map<string, Set<string>>();
  readonly #templates: Template[] = [];

  add(uri: string, upstream: string): void {
    let owners = this.#owners.get(uri);
    if (!owners) {
      if (this.#owners.size >= MAX_URIS) return;
      owners = new Set();
      this.#owners.set(uri, owners);
    }
    owners.add(upstream);
  }

  addTemplate(template: string, upstream: string): void {
    if (this.#templates.length >= MAX_TEMPLATES) return;
    const pattern = templatePattern(template);
    if (!pattern) return;
    if (this.#templates.some((t) => t.upstream === upstream && t.pattern.source === pattern.source)) return;
    this.#templates.push({ pattern, upstream });
  }

  /** The owner of `uri` among `upstreams` (in their order), or undefined when none is known. */
  owner(uri: string, upstreams: readonly string[]): string | undefined {
    const owners = this.#owners.get(uri);
    if (owners) {
      const first = upstreams.find((u) => owners.has(u));
      if (first) return first;
    }
    const matching = new Set(this.#templates.filter((t) => t.pattern.test(uri)).map((t) => t.upstream));
    return upstreams.find((u) => matching.has(u));
  }
}
