// The node-agent's part of a World's status, built step by step from what happened on the node.
// Pure: every function returns a new document; the caller persists and applies it.
import type { IsolationDecisionOutcome, WorldPhase, WorldStatus } from '../../crds/index.js';
import { setCondition, type Condition } from '../../kube/conditions.js';
import type { SandboxObservation } from '../../native/index.js';
import type { CgroupReadback } from '../sandbox/cgroup.js';
import type { SpentWaiver } from '../evidence/waiver-spender.js';
import type { WorldEvent } from './run-world.js';

/** The node-agent's part of World.status (the fields it owns), as the World schema types them. */
export type AgentWorldStatus = Pick<WorldStatus, 'reason' | 'message' | 'base' | 'admission' | 'isolation' | 'candidate' | 'exit' | 'networkRefusals'> & {
  phase: WorldPhase;
  conditions: Condition[];
};

const hex = (n: bigint): string => `0x${n.toString(16).padStart(16, '0')}`;

export function observationSummary(o: SandboxObservation, newNetwork: boolean, cgroup?: CgroupReadback): Record<string, unknown> {
  return {
    uid: o.uid,
    gid: o.gid,
    groups: o.groups,
    noNewPrivs: o.noNewPrivs,
    capabilities: { inheritable: hex(o.capInh), permitted: hex(o.capPrm), effective: hex(o.capEff), bounding: hex(o.capBnd), ambient: hex(o.capAmb) },
    uidMap: o.uidMap,
    gidMap: o.gidMap,
    namespaces: o.ns,
    kernel: o.kernel,
    network: newNetwork ? 'isolated' : 'host',
    ...(cgroup ? { cgroup: { cpuMillis: String(cgroup.cpuMillis), memoryBytes: String(cgroup.memoryBytes), pids: String(cgroup.pids) } } : {}),
  };
}

/** The contract's view of the observation (level, controls, target, completeness, notes), kept when the frame summary is rewritten. */
function pickMeasured(o: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!o) return {};
  const out: Record<string, unknown> = {};
  for (const k of ['achievedLevel', 'enforcedControls', 'target', 'complete', 'notes', 'ephemeralStorage']) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

export function admittedStatus(base: AgentWorldStatus['base'], generation: number | undefined, now: Date, message: string): AgentWorldStatus {
  return {
    phase: 'Admitted',
    reason: 'ADMITTED',
    message,
    base,
    admission: { outcome: 'ADMITTED', message },
    conditions: setCondition([], { type: 'Admitted', status: 'True', reason: 'ADMITTED', message }, generation, now),
  };
}

export function refusedStatus(code: string, message: string, generation: number | undefined, now: Date, conditionType = 'Admitted'): AgentWorldStatus {
  return {
    phase: 'Refused',
    reason: code,
    message,
    admission: { outcome: code, message },
    conditions: setCondition([], { type: conditionType, status: 'False', reason: code, message }, generation, now),
  };
}

export function withEvent(s: AgentWorldStatus, e: WorldEvent, ctx: { newNetwork: boolean; cgroup?: CgroupReadback; generation?: number; now: Date }): AgentWorldStatus {
  const gen = ctx.generation;
  const set = (conds: Condition[], type: string, status: 'True' | 'False', reason: string, message: string): Condition[] =>
    setCondition(conds, { type, status, reason, message }, gen, ctx.now);
  switch (e.type) {
    case 'cgroup':
      return s;
    case 'disk': {
      // The disk's size as the kernel reads it back (statfs of the mounted run disk), beside the cgroup limits.
      const observation = { ...(s.isolation?.observation ?? {}), ephemeralStorage: { bytes: String(e.readback.bytes) } };
      return { ...s, isolation: { ...s.isolation, observation } };
    }
    case 'running': {
      const conditions = set(s.conditions, 'Running', 'True', 'Running', `agent running as pid ${e.pid}`);
      const isolation = { ...s.isolation, observation: { ...observationSummary(e.observation, ctx.newNetwork, ctx.cgroup), ...pickMeasured(s.isolation?.observation) } };
      return { ...s, phase: 'Running', reason: 'RUNNING', message: 'the agent is running in its world', isolation, conditions };
    }
    case 'exited': {
      const exit: AgentWorldStatus['exit'] = { reason: e.end.reason, ...(e.end.code !== null ? { code: e.end.code } : {}), ...(e.end.signal ? { signal: e.end.signal } : {}) };
      return { ...s, exit, conditions: set(s.conditions, 'Running', 'False', e.end.reason, `the agent ended: ${e.end.reason}`) };
    }
    case 'captured': {
      const c = e.candidate;
      const candidate = {
        digest: c.digest,
        shortDigest: c.digest.slice(7, 19),
        added: c.added,
        modified: c.modified,
        deleted: c.deleted,
        changes: e.summary.changes,
        changesTruncated: e.summary.truncated,
        capturedAt: ctx.now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      };
      const ok = e.end.code === 0;
      const msg = `${c.added} added, ${c.modified} modified, ${c.deleted} deleted`;
      // A world that filled its disk is still captured (what it wrote is its candidate); status says so by name.
      const full = e.disk?.exhausted
        ? `; EPHEMERAL_STORAGE_EXHAUSTED: the world filled its ephemeral storage of ${e.disk.bytes} bytes (${e.disk.freeBytes} bytes, ${e.disk.freeInodes} inodes left), so writes past it failed with ENOSPC and the candidate holds what fitted`
        : '';
      const conditions = set(s.conditions, 'Captured', 'True', 'Captured', msg + full);
      return {
        ...s,
        phase: ok ? 'Captured' : 'Failed',
        reason: ok ? 'CAPTURED' : 'AGENT_EXIT_NONZERO',
        message: (ok ? `candidate captured: ${msg}` : `the agent exited with status ${String(e.end.code)}; its changes were captured (${msg}) but the World failed`) + full,
        candidate,
        conditions,
      };
    }
    case 'failed': {
      let conditions = set(s.conditions, 'Running', 'False', e.code, e.message);
      conditions = set(conditions, 'Captured', 'False', e.code, e.message);
      if (e.code === 'ISOLATION_OBSERVATION_INVALID') conditions = set(conditions, 'Isolated', 'False', e.code, e.message);
      const exit: AgentWorldStatus['exit'] | undefined = e.end
        ? { reason: e.end.reason, ...(e.end.code !== null ? { code: e.end.code } : {}), ...(e.end.signal ? { signal: e.end.signal } : {}) }
        : s.exit;
      return {
        ...s,
        // The contract refused the world before anything of it ran: a refusal, not a failure of the agent.
        phase: e.code === 'ISOLATION_INSUFFICIENT' ? 'Refused' : 'Failed',
        reason: e.code,
        message: e.message,
        ...(exit ? { exit } : {}),
        ...(e.observation ? { isolation: { ...s.isolation, observation: { ...observationSummary(e.observation, ctx.newNetwork, ctx.cgroup), ...pickMeasured(s.isolation?.observation) } } } : {}),
        conditions,
      };
    }
  }
}

/** A captured World whose candidate a Collapse promoted into PRIME: phase Collapsed, condition Collapsed. */
export function collapsedStatus(s: AgentWorldStatus, message: string, now: Date, generation?: number): AgentWorldStatus {
  return { ...s, phase: 'Collapsed', reason: 'COLLAPSED', message, conditions: setCondition(s.conditions, { type: 'Collapsed', status: 'True', reason: 'Collapsed', message }, generation, now) };
}

/** Newest refusals kept on status (older ones are counted in the metric only). */
export const MAX_NETWORK_REFUSALS = 64;

export function withNetworkRefusal(s: AgentWorldStatus, r: { host: string; port: number; time: string }): AgentWorldStatus {
  const list = [...(s.networkRefusals ?? []), { host: r.host.slice(0, 253), port: r.port, time: r.time.replace(/\.\d{3}Z$/, 'Z') }];
  return { ...s, networkRefusals: list.slice(-MAX_NETWORK_REFUSALS) };
}

export interface IsolationEvent {
  decision: { outcome: IsolationDecisionOutcome; reasons: string[]; missingControls: string[]; effectiveMinimum: string };
  observation: { achievedLevel: string; enforcedControls: string[]; target: { os: string; arch: string }; complete: boolean };
  notes: string[];
  /** The isolation waiver spent for this run (it runs although the decision is not reported-sufficient). */
  waiver?: SpentWaiver;
  /** Why the World's waiver was refused (the World then does not run). */
  waiverRefused?: { code: string; message: string };
  /** The signed observation and decision (DSSE envelopes, in the node's evidence store). */
  attestations?: { observation: { digest: string; envelope: string }; decision: { digest: string; envelope: string } };
}

export function isolationMessage(e: IsolationEvent): string {
  const d = e.decision;
  if (d.outcome === 'reported-sufficient') return `isolation ${d.effectiveMinimum} reported sufficient (achieved ${e.observation.achievedLevel})`;
  const base = `isolation decision ${d.outcome}: ${d.reasons.join(', ')}${d.missingControls.length ? `; missing ${d.missingControls.join(', ')}` : ''}`;
  if (e.waiver) return `${base}; the World runs under isolation waiver ${e.waiver.grantId} (signed by ${e.waiver.signers.join(', ')}), which waives ${e.waiver.waivedControls.join(', ')}: ${e.waiver.reason}`;
  if (e.waiverRefused) return `${base}; its isolation waiver is refused (${e.waiverRefused.code}): ${e.waiverRefused.message}`;
  return base;
}

/** Records the isolation decision (and the measured level and controls) on status and the Isolated condition. */
export function withIsolation(s: AgentWorldStatus, e: IsolationEvent, ctx: { generation?: number; now: Date }): AgentWorldStatus {
  const ok = e.decision.outcome === 'reported-sufficient';
  const reason = ok ? 'ReportedSufficient' : e.waiver ? 'IsolationWaived' : 'IsolationInsufficient';
  const observation = {
    ...(s.isolation?.observation ?? {}),
    achievedLevel: e.observation.achievedLevel,
    enforcedControls: e.observation.enforcedControls,
    target: e.observation.target,
    complete: e.observation.complete,
    ...(e.notes.length ? { notes: e.notes } : {}),
  };
  return {
    ...s,
    isolation: {
      observation,
      decision: { outcome: e.decision.outcome, reasons: e.decision.reasons },
      ...(e.waiver ? { waiver: { ...e.waiver } } : {}),
      ...(e.attestations ? { attestations: { observation: { ...e.attestations.observation }, decision: { ...e.attestations.decision } } } : {}),
    },
    conditions: setCondition(s.conditions, { type: 'Isolated', status: ok ? 'True' : 'False', reason, message: isolationMessage(e) }, ctx.generation, ctx.now),
  };
}
