// What the fault campaign asserts once the last fault is over, each as a list of problems (empty when it
// holds) so one run reports every broken property at once:
//   namedStates  every World, Collapse and Root in a final phase with a reason documented in docs/codes.md;
//   leftovers    nothing of an ended World left on the host (no mount under the store but exactly the
//                published generations' payloads, each a stack or a seal, no loop device
//                backed by a store file, no cgroup, no
//                process in a world's cgroup or naming the store other than the agent, no descriptor of
//                the agent on another network namespace, no nsfs mount) or in the store (read once the
//                agent is stopped: no id slot, reservation, intent, collapse staging or prepared live link);
//   ledger       `worldline receipts verify` accepts the ledger, and it holds exactly one line per Collapse
//                transaction, with that Collapse's final state, and no other line;
//   prime        each Root's PRIME (its host path, walked through its link) digests to one of the Root's
//                recorded generations — the one the store and the Root object name — which has moved one
//                generation per Committed Collapse on that Root.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { MAX_DISK_TEMPLATES } from '../../node-agent/sandbox/disk-image.js';
import { collapseWalk } from '../../node-agent/store/store-walk.js';
import type { ControllerProcess } from '../support/controller-process.js';
import type { FaultStack } from '../support/fault-stack.js';
import { mountsBelow } from '../support/worlds.js';
import { COLLAPSE_FINAL, WORLD_FINAL } from './workload.js';

const CLI = fileURLToPath(new URL('../../cli/worldline.js', import.meta.url));
const CODES_MD = fileURLToPath(new URL('../../../docs/codes.md', import.meta.url));

/** Every UPPER_SNAKE code docs/codes.md names. */
export function documentedCodes(): Set<string> {
  return new Set([...readFileSync(CODES_MD, 'utf8').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}

type Obj = Record<string, any>;

const where = (o: Obj): string => `${String(o.kind)} ${String(o.metadata?.name)}: phase ${String(o.status?.phase)}, reason ${String(o.status?.reason)} (${String(o.status?.message ?? '').slice(0, 200)})`;

/** Objects not yet in a final phase with a reason (what the settle waits on). */
export function unsettled(worlds: Obj[], collapses: Obj[], roots: Obj[]): Obj[] {
  const named = (o: Obj): boolean => typeof o.status?.reason === 'string' && o.status.reason !== '';
  return [
    ...worlds.filter((w) => !WORLD_FINAL.includes(w.status?.phase) || !named(w)),
    ...collapses.filter((c) => !COLLAPSE_FINAL.includes(c.status?.phase) || !named(c)),
    ...roots.filter((r) => r.status?.phase !== 'Ready'),
  ];
}

export function namedStates(worlds: Obj[], collapses: Obj[], roots: Obj[], codes: Set<string>): string[] {
  const out = unsettled(worlds, collapses, roots).map((o) => `not final and named: ${where(o)}`);
  for (const o of [...worlds, ...collapses]) {
    const reason = o.status?.reason as unknown;
    if (typeof reason === 'string' && reason !== '' && !codes.has(reason)) out.push(`reason not in docs/codes.md: ${where(o)}`);
  }
  return out;
}

/**
 * The payload directories the store keeps mounted (node-agent/store/payload-holds.ts), worked out from the
 * store's files alone (the agent is running; its database is not opened here): `required` holds each
 * Root's PRIME (what its live link names: a stack's overlay, or a seal) and, under a stacked PRIME, the
 * seal of the bottom its marker names. `allowed` adds the seal of a compaction of a generation in PRIME's
 * stack (a generations/<id>.full with a marker: published, or sealed and being walked before its row).
 * Nothing else: no reader holds a payload once the agent has settled.
 */
function keptPayloads(storeDir: string): { required: Set<string>; allowed: Set<string> } {
  const payload = (id: string): string => join(storeDir, 'generations', id, 'payload');
  const required = new Set<string>();
  const allowed = new Set<string>();
  for (const name of readdirSync(join(storeDir, 'live'))) {
    if (name.endsWith('_view') || name.startsWith('.')) continue;
    const prime = join(storeDir, 'live', readlinkSync(join(storeDir, 'live', name)));
    required.add(prime);
    const layers = markerOf(storeDir, prime.split('/').at(-2)!)?.layers;
    if (layers === undefined) continue; // full, or no marker (primeProblems names a PRIME that is not a published generation)
    required.add(payload(layers[layers.length - 1]!));
    const over = layers.slice(0, -1).find((g) => !g.endsWith('.full') && markerOf(storeDir, `${g}.full`) !== undefined);
    if (over !== undefined) allowed.add(payload(`${over}.full`));
  }
  for (const p of required) allowed.add(p);
  return { required, allowed };
}

function markerOf(storeDir: string, id: string): { layers?: string[] } | undefined {
  try {
    return JSON.parse(readFileSync(join(storeDir, 'generations', id, 'marker.json'), 'utf8')) as { layers?: string[] };
  } catch {
    return undefined;
  }
}

/** The merged directories of the owners' views the live mapping names (live/<root key>_view): each a mount. */
function currentViews(storeDir: string): Set<string> {
  const out = new Set<string>();
  for (const name of readdirSync(join(storeDir, 'live'))) {
    if (!name.endsWith('_view') || name.startsWith('.')) continue;
    out.add(join(storeDir, 'live', readlinkSync(join(storeDir, 'live', name))));
  }
  return out;
}

/** Host-side leftovers of the campaign's Worlds (uids `worldUids`), with the node-agent `agentPid` running. */
export function hostLeftovers(s: FaultStack, worldUids: string[], agentPid: number): string[] {
  const out: string[] = [];
  // The store's own mounts are each Root's PRIME (a stack's overlay or a seal), the seals of the full trees
  // under it, and each Root's current owner view (owner-view.ts); nothing else: an older generation's
  // payload is unmounted once PRIME no longer reads it and no reader holds it, a replaced view in its exchange.
  const kept = keptPayloads(s.storeDir);
  const views = currentViews(s.storeDir);
  const mounted = new Set(mountsBelow(s.storeDir));
  // And the run disks the agent keeps made ahead (sandbox/disk-pool.ts): at most one per size it keeps a
  // template of, each its entry's filesystem at <store>/disk-pool/<entry>/mnt on a loop device of its image.
  const pool = join(s.storeDir, 'disk-pool');
  const poolEntries = existsSync(pool) ? readdirSync(pool) : [];
  if (poolEntries.length > MAX_DISK_TEMPLATES) out.push(`more run disks made ahead than sizes kept: ${poolEntries.join(', ')}`);
  const poolMount = (m: string): boolean => poolEntries.some((e) => m === join(pool, e, 'mnt'));
  for (const m of mounted) if (!kept.allowed.has(m) && !views.has(m) && !poolMount(m)) out.push(`mount left under the store: ${m}`);
  for (const p of kept.required) if (!mounted.has(p)) out.push(`payload the store keeps mounted is not: ${p}`);
  for (const v of views) if (!mounted.has(v)) out.push(`the owner view the live mapping names is not mounted: ${v}`);
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  for (const l of mountinfo) if (l.includes(' - nsfs ') && l.includes(s.scratch)) out.push(`nsfs mount left: ${l}`);
  const uids = new Set(worldUids);
  const mine = (name: string): boolean => [...uids].some((u) => name.includes(u));
  for (const top of ['/sys/fs/cgroup', ...readdirSync('/sys/fs/cgroup').map((c) => join('/sys/fs/cgroup', c))]) {
    const dir = join(top, 'worldline');
    if (!existsSync(dir)) continue;
    for (const n of readdirSync(dir)) if (mine(n)) out.push(`cgroup left: ${join(dir, n)}`);
  }
  for (const p of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const pid = Number(p);
    if (pid === agentPid || pid === process.pid) continue;
    try {
      const cgroup = readFileSync(`/proc/${p}/cgroup`, 'utf8');
      const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (mine(cgroup) || cmdline.includes(s.storeDir)) out.push(`process left: pid ${pid} ${cmdline.slice(0, 200)} (cgroups ${cgroup.split('\n').filter(mine).join('; ')})`);
    } catch {
      /* exited while read */
    }
  }
  // A world's disk (ephemeral storage) is a loop device backed by a file in the store.
  for (const dev of readdirSync('/sys/block').filter((d) => d.startsWith('loop'))) {
    try {
      const backing = readFileSync(join('/sys/block', dev, 'loop', 'backing_file'), 'utf8').trim();
      if (backing.startsWith(s.scratch) && !poolEntries.some((e) => backing === join(pool, e, 'disk.img'))) out.push(`loop device left: /dev/${dev} on ${backing}`);
    } catch {
      /* not attached */
    }
  }
  const ownNet = readlinkSync(`/proc/${agentPid}/ns/net`);
  for (const fd of readdirSync(`/proc/${agentPid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${agentPid}/fd/${fd}`);
      if (target.startsWith('net:[') && target !== ownNet) out.push(`the node-agent holds descriptor ${fd} on another network namespace ${target}`);
    } catch {
      /* closed while read */
    }
  }
  return out;
}

/** The directories of the published background compactions (generations/<id>.full, node-agent/collapses/background-compaction.ts). */
function publishedCompactions(db: Database.Database): string[] {
  return (db.prepare('SELECT generation_id FROM compactions').all() as { generation_id: string }[]).map((r) => `${r.generation_id}.full`);
}

/** How many background compactions the store has published. */
export function compactionCount(s: FaultStack): number {
  const db = new Database(join(s.storeDir, 'state.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM compactions').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * Whether the node-agent's background upkeep (compactions, PRIME's measurement) is idle: its
 * worldline_upkeep_backlog is 0, polled until `ms` have passed (the current agent each time; a scrape
 * that fails is tried again).
 */
export async function upkeepIdle(agent: () => ControllerProcess, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const text = await agent().metrics().catch(() => '');
    const m = /^worldline_upkeep_backlog (\S+)$/m.exec(text);
    if (m?.[1] === '0') return true;
    if (Date.now() > deadline) return false;
    await sleep(500);
  }
}

/**
 * The store's leftovers: id slots, reservations, intents, generations not recorded, collapse and compaction staging,
 * prepared live links. Read with
 * the node-agent stopped (it holds its database in EXCLUSIVE locking mode).
 */
export function storeLeftovers(s: FaultStack): string[] {
  const out: string[] = [];
  const db = new Database(join(s.storeDir, 'state.db'), { readonly: true, fileMustExist: true });
  try {
    for (const r of db.prepare('SELECT slot, world_uid FROM world_slots').all() as { slot: number; world_uid: string }[]) out.push(`id slot ${r.slot} still held by ${r.world_uid}`);
    for (const r of db.prepare('SELECT holder, stage FROM reservations').all() as { holder: string; stage: string }[]) out.push(`reservation left: ${r.stage} ${r.holder}`);
    for (const r of db.prepare('SELECT id, kind FROM intents').all() as { id: string; kind: string }[]) out.push(`intent left: ${r.kind} ${r.id}`);
    const recorded = new Set([...(db.prepare('SELECT id FROM generations').all() as { id: string }[]).map((r) => r.id), ...publishedCompactions(db)]);
    for (const id of readdirSync(join(s.storeDir, 'generations'))) if (!recorded.has(id)) out.push(`generations/${id} left: not recorded in the store`);
  } finally {
    db.close();
  }
  for (const n of readdirSync(join(s.storeDir, 'staging')).filter((x) => x.startsWith('collapse-') || x.startsWith('compact-'))) out.push(`staging/${n} left`);
  for (const n of readdirSync(join(s.storeDir, 'live')).filter((x) => x.startsWith('.next-'))) out.push(`live/${n} left`);
  return out;
}

interface LedgerLine {
  receipt: { transaction: { id: string; state: string } };
}

export interface LedgerFigures {
  lines: number;
  committed: number;
  denied: number;
}

export function ledgerProblems(s: FaultStack, collapses: Obj[]): { problems: string[]; figures: LedgerFigures } {
  const out: string[] = [];
  const ledger = join(s.storeDir, 'receipts', 'ledger.jsonl');
  try {
    execFileSync(process.execPath, [CLI, 'receipts', 'verify', '--ledger', ledger, '--public-key', join(s.storeDir, 'keys', 'receipts-ed25519.pub.pem')], { encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    out.push(`worldline receipts verify refused the ledger: ${err.stdout ?? ''}${err.stderr ?? err.message}`);
  }
  const lines = readFileSync(ledger, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as LedgerLine);
  const byTx = new Map<string, string[]>();
  for (const l of lines) byTx.set(l.receipt.transaction.id, [...(byTx.get(l.receipt.transaction.id) ?? []), l.receipt.transaction.state]);
  const expected = new Map<string, string>();
  for (const c of collapses) {
    const tx = c.status?.transaction?.id as string | undefined;
    if (!tx) continue;
    const state = c.status.phase === 'Committed' ? 'COMMITTED' : c.status.phase === 'Denied' ? 'DENIED' : `not final (${String(c.status.phase)})`;
    expected.set(tx, state);
    const seen = byTx.get(tx) ?? [];
    if (seen.length !== 1) out.push(`Collapse ${String(c.metadata.name)}: transaction ${tx} has ${seen.length} ledger lines (${seen.join(', ')})`);
    else if (seen[0] !== state) out.push(`Collapse ${String(c.metadata.name)} is ${state} but its ledger line says ${seen[0]!}`);
    if (c.status.receipt?.id === undefined) out.push(`Collapse ${String(c.metadata.name)} (${state}) shows no receipt`);
  }
  for (const tx of byTx.keys()) if (!expected.has(tx)) out.push(`ledger line for transaction ${tx}, which no Collapse names`);
  const states = lines.map((l) => l.receipt.transaction.state);
  return { problems: out, figures: { lines: lines.length, committed: states.filter((x) => x === 'COMMITTED').length, denied: states.filter((x) => x === 'DENIED').length } };
}

export async function primeProblems(s: FaultStack, rootObjs: Obj[], hostPaths: Map<string, string>, collapses: Obj[], worlds: Obj[]): Promise<string[]> {
  const out: string[] = [];
  const db = new Database(join(s.storeDir, 'state.db'), { readonly: true, fileMustExist: true });
  let rows: { name: string; root_key: string; generation: number; digest: string }[];
  let gens: { id: string; root_key: string; number: number; digest: string }[];
  let compactions: string[];
  try {
    rows = db.prepare('SELECT name, root_key, generation, digest FROM roots').all() as typeof rows;
    gens = db.prepare('SELECT id, root_key, number, digest FROM generations').all() as typeof gens;
    compactions = publishedCompactions(db);
  } finally {
    db.close();
  }
  const onDisk = readdirSync(join(s.storeDir, 'generations')).sort();
  const recorded = [...gens.map((g) => g.id), ...compactions].sort();
  if (JSON.stringify(onDisk) !== JSON.stringify(recorded)) out.push(`generations/ holds ${onDisk.length} entries, the store records ${recorded.length}: on disk only ${onDisk.filter((x) => !recorded.includes(x)).join(', ')}; recorded only ${recorded.filter((x) => !onDisk.includes(x)).join(', ')}`);
  const rootOfWorld = new Map(worlds.map((w) => [w.metadata.name as string, (w.spec.roots as string[])[0]!]));
  for (const [name, hostPath] of hostPaths) {
    const row = rows.find((r) => r.name === name);
    const obj = rootObjs.find((r) => r.metadata.name === name);
    if (!row || !obj) {
      out.push(`Root ${name}: ${row ? '' : 'no store row'} ${obj ? '' : 'no object'}`);
      continue;
    }
    // PRIME through the store's link; the host path shows the owner's view of it (owner-view.ts).
    const prime = realpathSync(join(s.storeDir, 'live', row.root_key));
    const walk = await collapseWalk(prime, s.storeDir);
    if (walk.problems.length > 0) out.push(`Root ${name}: PRIME walk problems ${JSON.stringify(walk.problems).slice(0, 300)}`);
    const mine = gens.filter((g) => g.root_key === row.root_key);
    const matching = mine.filter((g) => g.digest === walk.digest);
    const current = mine.find((g) => g.number === row.generation);
    if (matching.length !== 1) out.push(`Root ${name}: PRIME (${prime}) digests to ${walk.digest}, which ${matching.length} of its ${mine.length} recorded generations have`);
    else if (matching[0] !== current) out.push(`Root ${name}: PRIME is generation ${matching[0]!.number}, the store says ${row.generation}`);
    if (current && prime !== realpathSync(join(s.storeDir, 'generations', current.id, 'payload'))) out.push(`Root ${name}: live/ routes to ${prime}, not generation ${current.number}'s payload`);
    // Nobody edits through the host paths here: each view is the one the last commit swapped in, and shows PRIME.
    const view = realpathSync(hostPath);
    if (current && view !== realpathSync(join(s.storeDir, 'views', current.id, 'merged'))) out.push(`Root ${name}: host path routes to ${view}, not the owner's view of generation ${current.number}`);
    const shown = await collapseWalk(view, s.storeDir);
    if (shown.digest !== walk.digest) out.push(`Root ${name}: the host path shows ${shown.digest}, PRIME is ${walk.digest}`);
    if (obj.status?.generation !== row.generation || obj.status?.digest !== row.digest) out.push(`Root ${name}: object says generation ${String(obj.status?.generation)} ${String(obj.status?.digest)}, store ${row.generation} ${row.digest}`);
    const committed = collapses.filter((c) => c.status?.phase === 'Committed' && rootOfWorld.get(c.spec.worldRef as string) === name).length;
    if (row.generation !== 1 + committed) out.push(`Root ${name}: at generation ${row.generation} after ${committed} Committed Collapses (expected ${1 + committed})`);
  }
  return out;
}
