// The field selectors this project's informers use (`status.nodeName=node-1`, terms joined by commas,
// each `=`, `==` or `!=`), evaluated on an object the way the API server filters a watch. Only what is
// understood for certain is matched: a selector with escapes, or a field that is absent or not a string,
// is "unknown", and the caller treats it as not matching.

export interface FieldTerm {
  path: readonly string[];
  op: '=' | '!=';
  value: string;
}

/** The terms of `selector`, or undefined when it uses anything beyond plain equality terms. */
export function parseFieldSelector(selector: string): FieldTerm[] | undefined {
  if (selector.includes('\\')) return undefined;
  const terms: FieldTerm[] = [];
  for (const raw of selector.split(',')) {
    const m = /^\s*([A-Za-z0-9_.-]+)\s*(==|!=|=)\s*([^=!]*?)\s*$/.exec(raw);
    if (!m) return undefined;
    const [, field = '', op = '', value = ''] = m;
    const path = field.split('.');
    if (path.some((p) => p === '')) return undefined;
    terms.push({ path, op: op === '!=' ? '!=' : '=', value });
  }
  return terms.length > 0 ? terms : undefined;
}

/** Whether `obj` is certainly selected by every term (false when a field is absent or not a string). */
export function fieldSelectorMatches(terms: readonly FieldTerm[], obj: unknown): boolean {
  for (const t of terms) {
    let at: unknown = obj;
    for (const p of t.path) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[p] : undefined;
    if (typeof at !== 'string') return false;
    if ((at === t.value) !== (t.op === '=')) return false;
  }
  return true;
}
