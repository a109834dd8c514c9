// Helpers for integration tests that run real Worlds on a startStack() stack: Root and World manifests,
// running a World to an end and reading what it printed, hashing host trees, listing host processes and
// reading a world's cgroup from the host side.
import { createHash } from 'node:crypto';
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Stack } from './stack.js';

export const FINAL_PHASES = ['Captured', 'Failed', 'Refused'];

export interface WorldSpec {
  roots: string[];
  agent: {
    command: string[];
    env?: { name: string; value: string }[];
    workingDir?: string;
    runAsUser?: number;
    credentials?: { secretName: string; key: string; path: string };
  };
  network?: { policy: 'None' | 'Shared' | 'Allowlist'; allow?: string[] };
  isolation?: { minimumLevel?: string; controls?: string[]; acknowledgeHostYolo?: boolean; waiver?: string };
  resources?: { cpu?: string; memory?: string; pids?: number; wallTime?: string; outputBytes?: string; ephemeralStorage?: string };
}

export function rootManifest(name: string, nodeName: string, path: string): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'Root', metadata: { name }, spec: { nodeName, path } });
}

export function worldManifest(name: string, spec: WorldSpec, namespace = 'default'): string {
  return JSON.stringify({ apiVersion: 'worldline.dev/v1alpha1', kind: 'World', metadata: { name, namespace }, spec });
}

/** A World whose agent is `sh -c <script>`. */
export function shWorld(roots: string[], script: string, extra: Omit<WorldSpec, 'roots' | 'agent'> & { agent?: Omit<WorldSpec['agent'], 'command'> } = {}): WorldSpec {
  return { ...extra, roots, agent: { ...(extra.agent ?? {}), command: ['/bin/sh', '-c', script] } };
}

/** Applies a Root and waits until the node-agent has adopted it (Ready) or refused it (Broken). */
export async function applyRoot(s: Stack, name: string, path: string, timeoutMs = 60_000): Promise<Record<string, any>> {
  await s.apply(rootManifest(name, s.nodeName, path));
  let seen: Record<string, any> | undefined;
  try {
    return await s.waitFor(`Root ${name} Ready or Broken`, async () => {
      seen = await s.get('root', name);
      return seen?.status?.phase === 'Ready' || seen?.status?.phase === 'Broken' ? seen : undefined;
    }, timeoutMs);
  } catch (err) {
    // Say where it stood: its status, and what the node-agent logged about it (a CI run once saw only "last: undefined").
    const agentSaid = s.agent.logs.filter((r) => JSON.stringify(r).includes(name) || r['level'] === 'warn' || r['level'] === 'error').slice(-15);
    throw new Error(`${(err as Error).message}\nRoot ${name} status: ${JSON.stringify(seen?.status ?? null)}\nnode-agent log lines naming it, and its warnings and errors: ${JSON.stringify(agentSaid)}`);
  }
}

/** Writes a host file owned by uid:uid with `mode` (a Root's content, before adoption). */
export function ownedFile(path: string, content: string, uid = 1000, mode = 0o644): void {
  writeFileSync(path, content, { mode });
  chownSync(path, uid, uid);
}

/** Makes a host directory (0755) owned by uid:uid. */
export function ownedDir(path: string, uid = 1000): void {
  mkdirSync(path, { mode: 0o755 });
  chownSync(path, uid, uid);
}

/**
 * The checked project most check tests use: <scratch>/proj (owned by uid 1000) with checks/verify.sh
 * (`grep -q ok README.md`), README.md "not yet" and `files` under checks/, adopted as Root proj (Ready),
 * then `policy` applied.
 */
export async function checkedProject(s: Stack, policy: unknown, files: Record<string, string> = {}): Promise<string> {
  const proj = join(s.scratch, 'proj');
  ownedDir(proj);
  ownedDir(join(proj, 'checks'));
  ownedFile(join(proj, 'checks', 'verify.sh'), 'grep -q ok README.md\n');
  for (const [name, text] of Object.entries(files)) ownedFile(join(proj, 'checks', name), text);
  ownedFile(join(proj, 'README.md'), 'not yet\n');
  const root = await applyRoot(s, 'proj', proj);
  if (root.status?.phase !== 'Ready') throw new Error(`Root proj is not Ready: ${JSON.stringify(root.status)}`);
  await s.apply(JSON.stringify(policy));
  return proj;
}

/** Runs World `world` (a shell script over Root proj) to Captured, then waits for its Check `<world>-<check>` to finish. */
export async function capturedCheck(s: Stack, world: string, script: string, check: string, timeoutMs = 60_000): Promise<{ run: WorldResult; check: Record<string, any> }> {
  const run = await runWorld(s, world, shWorld(['proj'], script));
  if (run.status.phase !== 'Captured') throw new Error(`World ${world} is not Captured: ${describeRun(run)}`);
  return { run, check: await checkFinished(s, `${world}-${check}`, timeoutMs) };
}

/** Waits until Check `name` (namespace default) is Passed, Failed or Refused; returns it. */
export function checkFinished(s: Stack, name: string, timeoutMs = 60_000): Promise<Record<string, any>> {
  return s.waitFor(`Check ${name} finished`, async () => {
    const c = await s.get('check', name, 'default');
    return ['Passed', 'Failed', 'Refused'].includes(c?.status?.phase) ? c : undefined;
  }, timeoutMs);
}

/** Creates <scratch>/<name> with one file, both owned by `owner`, and adopts it as a Ready Root. */
export async function adoptSmallRoot(s: Stack, name: string, owner: number): Promise<Record<string, any>> {
  const path = join(s.scratch, name);
  mkdirSync(path, { mode: 0o755 });
  writeFileSync(join(path, 'a.txt'), 'alpha\n');
  chownSync(path, owner, owner);
  chownSync(join(path, 'a.txt'), owner, owner);
  const root = await applyRoot(s, name, path);
  if (root.status?.phase !== 'Ready') throw new Error(`Root ${name} is not Ready: ${JSON.stringify(root.status)}`);
  return root;
}

export function outputLogPath(s: Stack, worldUid: string): string {
  return join(s.storeDir, 'worlds', `${worldUid}.output.log`);
}

/** What the World's agent printed (stdout and stderr), or '' when no log exists. */
export function outputOf(s: Stack, worldUid: string): string {
  const p = outputLogPath(s, worldUid);
  return existsSync(p) ? readFileSync(p, 'utf8') : '';
}

export interface WorldResult {
  world: Record<string, any>;
  status: Record<string, any>;
  uid: string;
  output: string;
}

/** Applies a World and waits for it to reach one of `phases` (default: any final phase). */
export async function runWorld(s: Stack, name: string, spec: WorldSpec, opts: { phases?: string[]; timeoutMs?: number } = {}): Promise<WorldResult> {
  await s.apply(worldManifest(name, spec));
  const world = await s.waitWorld(name, opts.phases ?? FINAL_PHASES, 'default', opts.timeoutMs ?? 60_000);
  const uid = world.metadata.uid as string;
  return { world, status: world.status, uid, output: outputOf(s, uid) };
}

/** Renders a failed expectation with what the World printed, so a failure explains itself. */
export function describeRun(r: WorldResult): string {
  return `phase=${r.status.phase} reason=${r.status.reason} message=${r.status.message}\n--- output ---\n${r.output}`;
}

/**
 * A digest of a host tree: every entry's relative path, type, mode, owner, size, mtime and ctime, file
 * content and link target. The top path is followed if it is a link (a Root's host path is one); links
 * below it are never followed.
 */
export function hashTree(top: string): string {
  const h = createHash('sha256');
  const visit = (abs: string, rel: string, follow: boolean): void => {
    const st = follow ? statSync(abs, { bigint: true }) : lstatSync(abs, { bigint: true });
    const kind = st.isDirectory() ? 'd' : st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
    h.update(`${rel}\0${kind}\0${st.mode}\0${st.uid}:${st.gid}\0${st.size}\0${st.mtimeNs}\0${st.ctimeNs}\0${st.nlink}\0`);
    if (kind === 'f') h.update(readFileSync(abs));
    else if (kind === 'l') h.update(readlinkSync(abs));
    else if (kind === 'd') for (const n of readdirSync(abs).sort()) visit(join(abs, n), rel ? `${rel}/${n}` : n, false);
    h.update('\n');
  };
  visit(top, '', true);
  return h.digest('hex');
}

/** Every path below `dir` (links not followed), sorted; [] when dir does not exist. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const n of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${n}` : n;
      out.push(r);
      if (lstatSync(join(abs, n)).isDirectory()) walk(join(abs, n), r);
    }
  };
  if (existsSync(dir)) walk(dir, '');
  return out;
}

/** The parts of the store a refused adoption must leave alone. */
export function storeSnapshot(storeDir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const d of ['generations', 'live', 'staging', 'candidates']) out[d] = listTree(join(storeDir, d));
  return out;
}

/** The store key of an adopted Root, read from its host link (`<store>/live/<rootKey>_view`, the owner's view). */
export function rootKeyOf(hostPath: string): string {
  const link = basename(readlinkSync(hostPath));
  if (!link.endsWith('_view')) throw new Error(`${hostPath} links to ${link}, not to a Root's view link`);
  return link.slice(0, -'_view'.length);
}

export interface HostProcess {
  pid: number;
  /** Real, effective, saved and filesystem uid, as the host sees them. */
  uids: number[];
  cmdline: string[];
}

/** Every process on the host (as this test's PID namespace sees it). */
export function hostProcesses(): HostProcess[] {
  const out: HostProcess[] = [];
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const status = readFileSync(`/proc/${n}/status`, 'utf8');
      const uids = (/^Uid:\s+(.*)$/m.exec(status)?.[1] ?? '').split(/\s+/).map(Number);
      const cmdline = readFileSync(`/proc/${n}/cmdline`, 'latin1').split('\0').filter((a) => a !== '');
      out.push({ pid: Number(n), uids, cmdline });
    } catch {
      /* exited while we looked */
    }
  }
  return out;
}

/** The host id range a World ran in, from its isolation observation (namespace id 0 → host `outside`). */
export function worldIdRange(status: Record<string, any>): { base: number; count: number } {
  const m = status?.isolation?.observation?.uidMap?.[0];
  if (!m) throw new Error(`the World's status has no uid map: ${JSON.stringify(status?.isolation)}`);
  return { base: Number(m.outside), count: Number(m.count) };
}

/** Host processes whose uids fall in a world's id range. */
export function processesInRange(range: { base: number; count: number }): HostProcess[] {
  return hostProcesses().filter((p) => p.uids.some((u) => u >= range.base && u < range.base + range.count));
}

/** A file of a world's cgroup (pids, memory) as the host sees it, v2 or v1; undefined when absent. */
export function readWorldCgroupFile(worldUid: string, controller: 'pids' | 'memory', file: string): string | undefined {
  for (const p of [join('/sys/fs/cgroup/worldline', `world-${worldUid}`, file), join('/sys/fs/cgroup', controller, 'worldline', `world-${worldUid}`, file)]) {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      /* try the other layout */
    }
  }
  return undefined;
}

/** Whether a world's cgroup still exists in any hierarchy. */
export function worldCgroupExists(worldUid: string): boolean {
  const dirs = [join('/sys/fs/cgroup/worldline', `world-${worldUid}`), ...['cpu', 'memory', 'pids'].map((c) => join('/sys/fs/cgroup', c, 'worldline', `world-${worldUid}`))];
  return dirs.some((d) => existsSync(d));
}

/** Mount points (from this process's mount table) at or below `dir`. */
export function mountsBelow(dir: string): string[] {
  const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => unescape(l.split(' ')[4] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}
