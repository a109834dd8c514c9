// The totals of a JUnit XML report, read strictly enough to be a verdict's input: the report is the
// examiner's, but it may quote candidate output, so comments and CDATA sections (where quoted text
// usually goes) are removed before any tag is read, and every count must be a plain decimal. Totals are
// the sums over the <testsuite> elements; a report with none takes the root <testsuites> attributes.
export interface JUnitTotals {
  tests: number;
  failures: number;
  errors: number;
  skipped: number;
}

export type JUnitParse = { ok: true; totals: JUnitTotals } | { ok: false; problem: string };

const ATTRIBUTE = /([A-Za-z_:][A-Za-z0-9_.:-]*)\s*=\s*("([^"<]*)"|'([^'<]*)')/g;
const COUNT = /^(0|[1-9][0-9]{0,8})$/;

function attributes(text: string): Map<string, string> | null {
  const out = new Map<string, string>();
  const rest = text.replace(ATTRIBUTE, (_m, name: string, _q, dq: string | undefined, sq: string | undefined) => {
    if (!out.has(name)) out.set(name, dq ?? sq ?? '');
    return ' ';
  });
  return /^[\s/]*$/.test(rest) ? out : null;
}

function count(attrs: Map<string, string>, name: string, required: boolean): number | string {
  const v = attrs.get(name);
  if (v === undefined) return required ? `no ${name} count` : 0;
  return COUNT.test(v) ? Number(v) : `${name}="${v.slice(0, 20)}" is not a count`;
}

function totalsOf(attrs: Map<string, string>): JUnitTotals | string {
  const t = { tests: count(attrs, 'tests', true), failures: count(attrs, 'failures', false), errors: count(attrs, 'errors', false), skipped: count(attrs, 'skipped', false) };
  for (const v of Object.values(t)) if (typeof v === 'string') return v;
  return t as JUnitTotals;
}

export function parseJUnit(text: string): JUnitParse {
  const body = text
    .replace(/^\uFEFF/, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, '')
    .replace(/^\s*<\?xml[^?]*\?>/, '')
    .trim();
  if (/<!--|<!\[CDATA\[|<!DOCTYPE|<!ENTITY/i.test(body)) return { ok: false, problem: 'an unterminated comment or CDATA section, or a DOCTYPE' };
  const root = /^<(testsuites|testsuite)([\s/>])/.exec(body);
  if (root === null) return { ok: false, problem: 'the root element is not <testsuites> or <testsuite>' };
  const sums: JUnitTotals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  let suites = 0;
  for (const m of body.matchAll(/<testsuite(?=[\s/>])([^<>]*)>/g)) {
    const attrs = attributes(m[1]!);
    if (attrs === null) return { ok: false, problem: 'a <testsuite> tag with malformed attributes' };
    const t = totalsOf(attrs);
    if (typeof t === 'string') return { ok: false, problem: `a <testsuite>: ${t}` };
    suites++;
    for (const k of ['tests', 'failures', 'errors', 'skipped'] as const) sums[k] += t[k];
  }
  if (suites > 0) return { ok: true, totals: sums };
  const top = /^<testsuites([^<>]*)>/.exec(body);
  const attrs = top === null ? null : attributes(top[1]!);
  if (attrs === null) return { ok: false, problem: 'a <testsuites> tag with malformed attributes' };
  const t = totalsOf(attrs);
  return typeof t === 'string' ? { ok: false, problem: `<testsuites>: ${t}` } : { ok: true, totals: t };
}
