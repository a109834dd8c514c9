// Where a world's supervisor (the shim, native/src/shim/shim.c) lives: worldline/supervisors on every
// cgroup hierarchy of the node, so that nothing that empties or kills the node-agent's own cgroups (a
// container runtime stopping the agent's container) reaches it. Created once per agent, with cpuset's
// cpus and mems copied from the parent (an empty cpuset cgroup takes no process).
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupLayout } from './cgroup.js';

const REL = ['worldline', 'supervisors'];
let cached: { mount: string; procs: string[] } | undefined;

/** Hierarchy roots: v2 the unified mount; v1 each mounted controller directory (symlinks such as cpu -> cpu,cpuacct skipped). */
function hierarchies(layout: CgroupLayout): string[] {
  if (layout.version === 'v2') return [layout.mount];
  const out: string[] = [];
  for (const name of readdirSync(layout.mount)) {
    const dir = join(layout.mount, name);
    if (!lstatSync(dir).isDirectory() || !existsSync(join(dir, 'cgroup.procs'))) continue;
    out.push(dir);
  }
  return out;
}

/** The cgroup.procs files a supervisor joins, its directories created. */
export function supervisorCgroupProcs(layout: CgroupLayout): string[] {
  if (cached?.mount === layout.mount) return cached.procs;
  const procs: string[] = [];
  for (const root of hierarchies(layout)) {
    let parent = root;
    for (const part of REL) {
      const dir = join(parent, part);
      mkdirSync(dir, { recursive: true });
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const mine = join(dir, f);
        if (existsSync(mine) && readFileSync(mine, 'utf8').trim() === '') writeFileSync(mine, readFileSync(join(parent, f), 'utf8').trim());
      }
      parent = dir;
    }
    procs.push(join(parent, 'cgroup.procs'));
  }
  cached = { mount: layout.mount, procs };
  return procs;
}
