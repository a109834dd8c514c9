// The PromQL of the Grafana dashboard (charts/worldline/files/dashboard.json): its panels and their queries
// read with clear errors for a malformed file, and Grafana's template variables ($__rate_interval,
// $__range, $__interval) substituted the way Grafana would for one time range, so Prometheus itself can run
// them (the dashboard test and the renderer both use this).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const DASHBOARD_PATH = resolve(import.meta.dirname, '..', '..', '..', 'charts', 'worldline', 'files', 'dashboard.json');

export interface DashboardTarget {
  refId: string;
  expr: string;
  legendFormat: string;
  /** Bar gauges and stats ask for one value per series at the end of the range. */
  instant: boolean;
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  description: string;
  unit: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: DashboardTarget[];
}

export interface Dashboard {
  title: string;
  /** Every panel in order, rows included (a row has no targets). */
  panels: DashboardPanel[];
  /** Names of the dashboard's template variables. */
  variables: string[];
}

function fail(where: string, problem: string): never {
  throw new Error(`dashboard ${where}: ${problem}`);
}

function str(v: unknown, where: string): string {
  if (typeof v !== 'string') fail(where, `is ${JSON.stringify(v) ?? typeof v}, not a string`);
  return v;
}

function num(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(where, `is ${JSON.stringify(v) ?? typeof v}, not a number`);
  return v;
}

interface RawPanel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  description?: unknown;
  gridPos?: Record<string, unknown> | null;
  targets?: unknown;
  fieldConfig?: { defaults?: { unit?: unknown } };
}

function parsePanel(raw: unknown, i: number): DashboardPanel {
  const p = raw as RawPanel | null;
  const where = `panels[${i}]`;
  if (typeof p !== 'object' || p === null) fail(where, 'is not an object');
  const g = p.gridPos;
  if (typeof g !== 'object' || g === null) fail(`${where}.gridPos`, 'is missing');
  const targets = (p.targets ?? []) as unknown[];
  if (!Array.isArray(targets)) fail(`${where}.targets`, 'is not a list');
  return {
    id: num(p.id, `${where}.id`),
    type: str(p.type, `${where}.type`),
    title: str(p.title, `${where}.title`),
    description: typeof p.description === 'string' ? p.description : '',
    unit: typeof p.fieldConfig?.defaults?.unit === 'string' ? p.fieldConfig.defaults.unit : 'short',
    gridPos: { x: num(g.x, `${where}.gridPos.x`), y: num(g.y, `${where}.gridPos.y`), w: num(g.w, `${where}.gridPos.w`), h: num(g.h, `${where}.gridPos.h`) },
    targets: targets.map((t, j) => {
      const x = t as Record<string, unknown>;
      return { refId: str(x.refId, `${where}.targets[${j}].refId`), expr: str(x.expr, `${where}.targets[${j}].expr`), legendFormat: typeof x.legendFormat === 'string' ? x.legendFormat : '', instant: x.instant === true };
    }),
  };
}

/** Reads and checks the dashboard JSON; throws naming the first field that is wrong. */
export function loadDashboard(path = DASHBOARD_PATH): Dashboard {
  let doc: { title?: unknown; panels?: unknown; templating?: { list?: { name?: unknown }[] } };
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as typeof doc;
  } catch (e) {
    throw new Error(`dashboard ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (!Array.isArray(doc.panels)) fail('panels', 'is not a list');
  const vars = doc.templating?.list ?? [];
  return { title: str(doc.title, 'title'), panels: (doc.panels as unknown[]).map(parsePanel), variables: vars.map((v, i) => str(v.name, `templating.list[${i}].name`)) };
}

export interface TimeRange {
  /** Seconds since the epoch. */
  start: number;
  end: number;
  /** The Prometheus scrape interval, in seconds (Grafana's "scrape interval" of the data source). */
  scrapeSeconds: number;
  /** The query step, in seconds ($__interval). */
  stepSeconds: number;
}

/** Grafana's $__rate_interval: max($__interval + scrape interval, 4 × scrape interval). */
export function rateIntervalSeconds(r: TimeRange): number {
  return Math.max(r.stepSeconds + r.scrapeSeconds, 4 * r.scrapeSeconds);
}

/** The expression with Grafana's time variables replaced; any other `$variable` left in it is an error. */
export function substitute(expr: string, r: TimeRange): string {
  const out = expr
    .replaceAll('$__rate_interval', `${rateIntervalSeconds(r)}s`)
    .replaceAll('$__range', `${Math.max(1, Math.ceil(r.end - r.start))}s`)
    .replaceAll('$__interval', `${r.stepSeconds}s`);
  const left = /\$\{?[A-Za-z_][A-Za-z0-9_]*/.exec(out);
  if (left) throw new Error(`dashboard query uses ${left[0]}, which is not substituted: ${expr}`);
  return out;
}
