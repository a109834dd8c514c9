// Starts the real controller or node-agent (dist/<component>/main.js) as a child process for
// integration tests, reads its JSON log to learn its metrics port, and kills it on request or when
// the test exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';

const DIST = resolve(import.meta.dirname, '..', '..');
/** How long a component may take to serve its metrics port after it was spawned. */
const START_TIMEOUT_MS = 120_000;
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export interface ControllerProcess {
  readonly pid: number;
  readonly identity: string;
  readonly metricsUrl: string;
  readonly logs: Record<string, unknown>[];
  waitForLog(pred: (rec: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  metrics(): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves once the process has exited, by itself or killed, with its exit code and the signal that ended it. */
  waitExit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether kill() was called (an exit without it is the process's own). */
  readonly killed: boolean;
}

/** When a start counts as done: its metrics port served, and each of `ready` logged (any order). */
export interface StartOptions {
  ready?: string[];
  /** Default 120 s; the fault campaign, restarting components dozens of times on a loaded host, waits longer. */
  timeoutMs?: number;
}

export async function startController(opts: { kubeconfig: string; identity: string; namespace?: string; leaseDurationSeconds?: number; extraArgs?: string[]; start?: StartOptions }): Promise<ControllerProcess> {
  return startComponent('controller', opts.identity, [
    '--kubeconfig', opts.kubeconfig,
    '--namespace', opts.namespace ?? 'worldline-system',
    '--metrics-bind', '127.0.0.1:0',
    '--identity', opts.identity,
    '--lease-duration', String(opts.leaseDurationSeconds ?? 6),
    ...(opts.extraArgs ?? []),
  ], [], {}, opts.start);
}

export async function startNodeAgent(opts: { kubeconfig: string; nodeName: string; storeDir: string; namespace?: string; extraArgs?: string[]; wrapper?: string[]; env?: Record<string, string>; start?: StartOptions }): Promise<ControllerProcess> {
  return startComponent('node-agent', opts.nodeName, [
    '--kubeconfig', opts.kubeconfig,
    '--namespace', opts.namespace ?? 'worldline-system',
    '--metrics-bind', '127.0.0.1:0',
    '--node-name', opts.nodeName,
    '--store', opts.storeDir,
    ...(opts.extraArgs ?? []),
  ], opts.wrapper, withCrashHooks(opts.env ?? {}), opts.start);
}

/** Test seams a test's environment asks for, each preloaded from its module in test/support/. */
const TEST_PRELOADS: [env: string, module: string][] = [
  ['WORLDLINE_TEST_COLLAPSE_HOOK', 'collapse-crash-hooks.js'],
  ['WORLDLINE_TEST_OBSERVATION_CORRUPT', 'observation-hooks.js'],
  ['WORLDLINE_TEST_GATE_PAUSE', 'observation-hooks.js'],
];

/** A test that asks for fault injection (collapse steps, observation frames) gets it preloaded into the agent. */
function withCrashHooks(env: Record<string, string>): Record<string, string> {
  const imports = [...new Set(TEST_PRELOADS.filter(([name]) => env[name] !== undefined).map(([, mod]) => `--import=${pathToFileURL(resolve(import.meta.dirname, mod)).href}`))];
  if (imports.length === 0) return env;
  return { ...env, NODE_OPTIONS: [process.env['NODE_OPTIONS'] ?? '', ...imports].join(' ').trim() };
}

/**
 * `wrapper`, when given, is an argv prefix that must end by exec'ing the node command appended to it (so the
 * process keeps its pid), e.g. to start the component with some process attribute set up first.
 */
export async function startComponent(component: 'controller' | 'node-agent', identity: string, componentArgs: string[], wrapper: string[] = [], env: Record<string, string> = {}, start: StartOptions = {}): Promise<ControllerProcess> {
  const opts = { identity };
  const args = [resolve(DIST, component, 'main.js'), ...componentArgs];
  const [cmd, ...argv] = [...wrapper, process.execPath, ...args] as [string, ...string[]];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  running.add(child);
  const logs: Record<string, unknown>[] = [];
  const waiters: { pred: (r: Record<string, unknown>) => boolean; resolve: (r: Record<string, unknown>) => void }[] = [];
  const rl = createInterface({ input: child.stderr });
  rl.on('line', (line) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      rec = { msg: line, unparsed: true };
    }
    logs.push(rec);
    for (const w of [...waiters]) {
      if (w.pred(rec)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(rec);
      }
    }
  });
  const exited = once(child, 'exit');
  const waitForLog = (pred: (r: Record<string, unknown>) => boolean, timeoutMs = 30_000): Promise<Record<string, unknown>> => {
    const found = logs.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((res, rej) => {
      const t = setTimeout(() => rej(new Error(`${component} ${opts.identity}: no matching log line within ${timeoutMs} ms; last lines:\n${logs.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`)), timeoutMs);
      waiters.push({ pred, resolve: (r) => { clearTimeout(t); res(r); } });
    });
  };
  // A loaded 2-core CI host has been seen to keep a starting node-agent silent for over 30 s; a start that
  // fails anyway kills the child, so a half-started process never outlives its test.
  let serving: Record<string, unknown>;
  const timeoutMs = start.timeoutMs ?? START_TIMEOUT_MS;
  try {
    [serving] = await Promise.race([
      Promise.all([waitForLog((r) => r.msg === 'serving health and metrics', timeoutMs), ...(start.ready ?? []).map((msg) => waitForLog((r) => r.msg === msg, timeoutMs))]),
      exited.then(() => { throw new Error(`${component} exited early:\n${logs.map((l) => JSON.stringify(l)).join('\n')}`); }),
    ]);
  } catch (e) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    running.delete(child);
    throw e;
  }
  const metricsUrl = `http://127.0.0.1:${String(serving.port)}`;
  let killed = false;
  return {
    pid: child.pid ?? -1,
    identity: opts.identity,
    metricsUrl,
    logs,
    waitForLog,
    async metrics() {
      const res = await fetch(`${metricsUrl}/metrics`);
      return res.text();
    },
    get killed() {
      return killed;
    },
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      killed = true;
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      running.delete(child);
      return code;
    },
    async waitExit() {
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      running.delete(child);
      return { code, signal };
    },
  };
}
