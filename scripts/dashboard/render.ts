// Renders the Grafana dashboard (charts/worldline/files/dashboard.json) without Grafana: every panel's
// PromQL is run against a Prometheus (query_range for time series, an instant query at the end for bar
// gauges and stats) and drawn as inline SVG on one self-contained HTML page laid out by the panels'
// gridPos. A headless browser turns the page into the docs' screenshot (screenshot.sh).
//   node dist/scripts/dashboard/render.js --prometheus http://127.0.0.1:9090 --minutes 15 --out page.html
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadDashboard, substitute, type DashboardPanel, type TimeRange } from './dashboard-queries.js';
import { legendOf, queryInstant, queryRange } from './prometheus-api.js';

export const PAGE_WIDTH = 1600;
const GAP = 8;
const UNIT_H = 30;
const PAD = 16;
const COLORS = ['#73BF69', '#F2CC0C', '#8AB8FF', '#FF780A', '#F2495C', '#5794F2', '#B877D9', '#FADE2A', '#37872D', '#C4162A'];

interface Line {
  /** The target (query) of the panel the series came from. */
  refId: string;
  name: string;
  points: [number, number][];
  last: number;
}

export interface RenderedPanel {
  panel: DashboardPanel;
  /** The series drawn: a time series' lines, or one point per series of a bar gauge or stat. */
  series: Line[];
}

export interface RenderedPage {
  html: string;
  width: number;
  height: number;
  panels: RenderedPanel[];
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A value in the panel's Grafana unit, short. */
export function formatValue(v: number, unit: string): string {
  if (!Number.isFinite(v)) return '–';
  const short = (x: number): string => {
    const a = Math.abs(x);
    if (a >= 1e6) return `${(x / 1e6).toFixed(1)}M`;
    if (a >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
    if (a === 0 || a >= 100) return x.toFixed(0);
    if (a >= 1) return x.toFixed(a >= 10 ? 1 : 2).replace(/\.?0+$/, '');
    return x.toPrecision(2);
  };
  switch (unit) {
    case 's':
      return Math.abs(v) < 1 ? `${short(v * 1000)} ms` : `${short(v)} s`;
    case 'ops':
      return `${short(v)}/s`;
    case 'percentunit':
      return `${short(v * 100)}%`;
    default:
      return short(v);
  }
}

function cellBox(p: DashboardPanel, colW: number): { left: number; top: number; width: number; height: number } {
  return { left: PAD + p.gridPos.x * (colW + GAP), top: PAD + p.gridPos.y * (UNIT_H + GAP), width: p.gridPos.w * colW + (p.gridPos.w - 1) * GAP, height: p.gridPos.h * UNIT_H + (p.gridPos.h - 1) * GAP };
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const clock = (t: number): string => new Date(t * 1000).toISOString().slice(11, 19);

function timeSeriesSvg(lines: Line[], unit: string, range: TimeRange, w: number, h: number): string {
  const left = 58;
  const bottom = 18;
  const plotW = w - left - 8;
  const plotH = h - bottom - 6;
  const max = niceMax(Math.max(0, ...lines.flatMap((l) => l.points.map((p) => p[1])).filter(Number.isFinite)));
  const x = (t: number): number => left + ((t - range.start) / Math.max(1, range.end - range.start)) * plotW;
  const y = (v: number): number => 6 + plotH - (v / max) * plotH;
  const out: string[] = [];
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(v)}" y2="${y(v)}" class="grid"/><text x="${left - 6}" y="${y(v) + 4}" class="tick" text-anchor="end">${esc(formatValue(v, unit))}</text>`);
  }
  for (let i = 0; i <= 4; i++) {
    const t = range.start + ((range.end - range.start) * i) / 4;
    out.push(`<text x="${x(t)}" y="${h - 4}" class="tick" text-anchor="${i === 0 ? 'start' : i === 4 ? 'end' : 'middle'}">${clock(t)}</text>`);
  }
  lines.forEach((l, i) => {
    // A NaN or missing step breaks the line, as Grafana draws it.
    // A value with no finite neighbour is drawn as a dot, or it would not show at all.
    const color = COLORS[i % COLORS.length]!;
    let d = '';
    l.points.forEach(([t, v], j) => {
      if (!Number.isFinite(v)) return;
      const before = Number.isFinite(l.points[j - 1]?.[1] ?? NaN);
      const next = Number.isFinite(l.points[j + 1]?.[1] ?? NaN);
      if (!before && !next) out.push(`<circle cx="${x(t).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${color}"/>`);
      d += `${before ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
    });
    if (d !== '') out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
  });
  return `<svg width="${w}" height="${h}" xmlns="http://www.w3.org/2000/svg">${out.join('')}</svg>`;
}

function legendHtml(lines: Line[], unit: string): string {
  return `<div class="legend">${lines.map((l, i) => `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(l.name)} <b>${esc(formatValue(l.last, unit))}</b></span>`).join('')}</div>`;
}

function barsHtml(lines: Line[], unit: string): string {
  const max = Math.max(0, ...lines.map((l) => l.last).filter(Number.isFinite));
  return lines
    .map((l, i) => `<div class="bar"><div class="bar-name">${esc(l.name)}</div><div class="bar-track"><div style="width:${max > 0 ? (Math.max(0, l.last) / max) * 100 : 0}%;background:${COLORS[i % COLORS.length]}"></div></div><div class="bar-value">${esc(formatValue(l.last, unit))}</div></div>`)
    .join('');
}

function statHtml(lines: Line[], unit: string): string {
  return `<div class="stats">${lines.map((l) => `<div class="stat"><div class="stat-value">${esc(formatValue(l.last, unit))}</div><div class="stat-name">${esc(l.name)}</div></div>`).join('')}</div>`;
}

async function panelSeries(prometheus: string, p: DashboardPanel, range: TimeRange): Promise<Line[]> {
  const lines: Line[] = [];
  for (const t of p.targets) {
    const expr = substitute(t.expr, range);
    if (t.instant || p.type === 'bargauge' || p.type === 'stat') {
      for (const s of await queryInstant(prometheus, expr, range.end)) {
        const v = Number(s.value[1]);
        lines.push({ refId: t.refId, name: legendOf(t.legendFormat, s.metric), points: [[range.end, v]], last: v });
      }
    } else {
      for (const s of await queryRange(prometheus, expr, range.start, range.end, range.stepSeconds)) {
        const points = s.values.map(([ts, v]) => [ts, Number(v)] as [number, number]);
        const finite = points.filter((q) => Number.isFinite(q[1]));
        lines.push({ refId: t.refId, name: legendOf(t.legendFormat, s.metric), points, last: finite.length > 0 ? finite[finite.length - 1]![1] : NaN });
      }
    }
  }
  return lines.sort((a, b) => a.name.localeCompare(b.name));
}

const CSS = `
body{margin:0;background:#111217;color:#ccccdc;font:13px/1.3 "DejaVu Sans",Arial,sans-serif}
.page{position:relative}
.head{position:absolute;left:${PAD}px;top:0;font-size:15px}
.panel{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:3px;box-sizing:border-box;padding:6px 8px;overflow:hidden}
.row{position:absolute;font-size:16px;font-weight:600;color:#d8d9da;border-bottom:1px solid #2c3235;box-sizing:border-box;padding-top:4px}
.title{font-weight:600;color:#d8d9da;margin-bottom:4px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.grid{stroke:#2c3235;stroke-width:1}.tick{fill:#8e8e8e;font-size:11px}
.legend{font-size:11px;display:flex;flex-wrap:wrap;gap:2px 12px}.legend i{display:inline-block;width:10px;height:4px;margin-right:4px;vertical-align:middle}.legend b{color:#8e8e8e;font-weight:400}
.bar{display:flex;align-items:center;gap:6px;margin:3px 0;font-size:11px}.bar-name{width:58%;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.bar-track{flex:1;background:#22252b;height:14px}.bar-track div{height:14px}.bar-value{width:44px;text-align:right}
.stats{display:flex;gap:8px;height:calc(100% - 24px)}.stat{flex:1;background:#1f60c4;border-radius:3px;display:flex;flex-direction:column;justify-content:center;align-items:center}.stat-value{font-size:30px;font-weight:600;color:#fff}.stat-name{color:#e0e0ff}
.empty{color:#8e8e8e;padding-top:20px;text-align:center}`;

/** Runs every panel's queries over `range` and lays the page out; `note` is shown in the header. */
export async function renderDashboardPage(prometheus: string, range: TimeRange, note = '', dashboardPath?: string): Promise<RenderedPage> {
  const dash = loadDashboard(dashboardPath);
  const colW = (PAGE_WIDTH - 2 * PAD - 23 * GAP) / 24;
  const headH = 24;
  const parts: string[] = [];
  const rendered: RenderedPanel[] = [];
  let bottom = 0;
  for (const p of dash.panels) {
    const box = cellBox(p, colW);
    box.top += headH;
    bottom = Math.max(bottom, box.top + box.height);
    const style = `left:${box.left}px;top:${box.top}px;width:${box.width}px;height:${box.height}px`;
    if (p.type === 'row') {
      parts.push(`<div class="row" style="${style}">${esc(p.title)}</div>`);
      continue;
    }
    const series = await panelSeries(prometheus, p, range);
    rendered.push({ panel: p, series });
    let body: string;
    if (series.length === 0) body = '<div class="empty">No data</div>';
    else if (p.type === 'bargauge') body = barsHtml(series, p.unit);
    else if (p.type === 'stat') body = statHtml(series, p.unit);
    else {
      const legendRows = Math.ceil(series.length / Math.max(1, Math.floor(box.width / 190)));
      body = timeSeriesSvg(series, p.unit, range, box.width - 18, box.height - 34 - legendRows * 16) + legendHtml(series, p.unit);
    }
    parts.push(`<div class="panel" style="${style}"><div class="title">${esc(p.title)}</div>${body}</div>`);
  }
  const height = Math.ceil(bottom + PAD);
  const header = `${esc(dash.title)} · ${new Date(range.start * 1000).toISOString().slice(0, 19)}Z – ${clock(range.end)}Z${note ? ` · ${esc(note)}` : ''}`;
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${esc(dash.title)}</title><style>${CSS}</style></head><body><div class="page" style="width:${PAGE_WIDTH}px;height:${height}px"><div class="head">${header}</div>${parts.join('')}</div></body></html>`;
  return { html, width: PAGE_WIDTH, height, panels: rendered };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { prometheus: { type: 'string' }, minutes: { type: 'string' }, step: { type: 'string' }, scrape: { type: 'string' }, out: { type: 'string' } }, strict: true });
  const usage = 'usage: render.js --prometheus URL --out PAGE.html [--minutes 15] [--step SECONDS] [--scrape SECONDS]';
  if (!values.prometheus || !values.out) throw new Error(usage);
  const minutes = Number(values.minutes ?? '15');
  const step = Number(values.step ?? '5');
  const scrape = Number(values.scrape ?? '15');
  if (![minutes, step, scrape].every((n) => Number.isFinite(n) && n > 0)) throw new Error(`--minutes, --step and --scrape must be positive numbers\n${usage}`);
  const end = Math.floor(Date.now() / 1000);
  const page = await renderDashboardPage(values.prometheus, { start: end - minutes * 60, end, stepSeconds: step, scrapeSeconds: scrape });
  writeFileSync(values.out, page.html);
  process.stderr.write(`wrote ${values.out} (${page.width}x${page.height}); screenshot: bash scripts/dashboard/screenshot.sh ${values.out} OUT.png ${page.width},${page.height}\n`);
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  main().catch((e: unknown) => {
    process.stderr.write(`render: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
