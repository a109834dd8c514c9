// The node-agent's record of each World it serves (the worlds table): its state on this node and
// the full status document the agent applies, so a restarted agent re-applies exactly what it owns.
import type { Database } from 'better-sqlite3';
import type { Manifest } from '../../core/manifest.js';
import { getGeneration } from './store-records.js';
import { storedManifest } from './base-index.js';
import { statement } from './statements.js';

export type WorldState = 'running' | 'captured' | 'collapsed' | 'failed' | 'refused';

export interface WorldRecord {
  uid: string;
  namespace: string;
  name: string;
  state: WorldState;
  /** The node-agent's part of World.status, applied whole under its field manager. */
  status: Record<string, unknown>;
  updatedAt: string;
}

export function getWorldRecord(db: Database, uid: string): WorldRecord | undefined {
  const row = statement(db, 'SELECT uid, namespace, name, state, data_json, updated_at FROM worlds WHERE uid = ?').get(uid) as
    | { uid: string; namespace: string; name: string; state: WorldState; data_json: string; updated_at: string }
    | undefined;
  if (!row) return undefined;
  return { uid: row.uid, namespace: row.namespace, name: row.name, state: row.state, status: JSON.parse(row.data_json) as Record<string, unknown>, updatedAt: row.updated_at };
}

export function listWorldRecords(db: Database): WorldRecord[] {
  return (statement(db, 'SELECT uid FROM worlds ORDER BY uid').all() as { uid: string }[]).map((r) => getWorldRecord(db, r.uid)!);
}

export function putWorldRecord(db: Database, r: Omit<WorldRecord, 'updatedAt'>, now: Date): void {
  statement(
    db,
    `INSERT INTO worlds (uid, namespace, name, state, data_json, updated_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (uid) DO UPDATE SET state = excluded.state, data_json = excluded.data_json, updated_at = excluded.updated_at`,
  ).run(r.uid, r.namespace, r.name, r.state, JSON.stringify(r.status), now.toISOString());
}

export function deleteWorldRecord(db: Database, uid: string): void {
  statement(db, 'DELETE FROM worlds WHERE uid = ?').run(uid);
}

/** What a new agent needs to find a running world's supervisor again and finish the world (run-world.ts resumeWorldRun). */
export interface WorldSupervisor {
  pid: number;
  /** /proc/<pid>/stat field 22 of the supervisor when it was recorded. */
  startTime: string;
  /** When the workload was let go (ISO). */
  startedAt: string;
  wallTimeMs: number;
  idBase: number;
  idCount: number;
  ephemeralStorageBytes?: number;
  /** The roots the world forked, at the generations it forked. */
  roots: { name: string; rootKey: string; path: string; generation: number; digest: string }[];
  /**
   * An Allowlist World's network (absent for None and Shared, and in records of agents before it): what a
   * new agent re-opens the proxy with (network/resume-allowlist.ts) — the allowlist, the world's network
   * namespace id ("net:[…]") and its pid 1 (pid and /proc/<pid>/stat field 22) to reach it through.
   */
  network?: { allow: string[]; netns: string; pid: number; startTime: string };
  /**
   * The World's pid 1 and what `kubectl worldline exec` starts beside it as (view/world-exec.ts): its
   * identity inside the World, working directory, environment and the World's cgroup.procs files. Absent
   * in records of agents before it: such a World cannot be entered.
   */
  workload?: { pid: number; startTime: string; uid: number; gid: number; cwd: string; env: string[]; cgroupProcs: string[] };
}

/** Records the world's supervisor (kept by putWorldRecord, which never touches it). */
export function setWorldSupervisor(db: Database, uid: string, s: WorldSupervisor): void {
  statement(db, 'UPDATE worlds SET supervisor_json = ? WHERE uid = ?').run(JSON.stringify(s), uid);
}

export function getWorldSupervisor(db: Database, uid: string): WorldSupervisor | undefined {
  const row = statement(db, 'SELECT supervisor_json FROM worlds WHERE uid = ?').get(uid) as { supervisor_json: string | null } | undefined;
  return row?.supervisor_json ? (JSON.parse(row.supervisor_json) as WorldSupervisor) : undefined;
}

/**
 * Uids of worlds recorded running: a new agent keeps what they hold. Each is either re-attached to its supervisor or (started by no supervisor
 * yet) cleaned up by the world reconciler, which then releases what it holds.
 */
export function runningWorlds(db: Database): string[] {
  return (statement(db, "SELECT uid FROM worlds WHERE state = 'running' ORDER BY uid").all() as { uid: string }[]).map((r) => r.uid);
}

/**
 * The manifest of a recorded generation, read lazily (see storedManifest): O(log N) to get, its entries
 * parsed only if something reads them; capture reads it through baseIndexOf, an index over its rows.
 */
export function generationManifest(db: Database, rootKey: string, number: number): Manifest | undefined {
  const g = getGeneration(db, rootKey, number);
  return g ? storedManifest(db, g.id) : undefined;
}
