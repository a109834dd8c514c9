// The controller's part of a World's status, computed as a pure function of the World, the Roots it
// names and whether a node-agent serves the node. The node-agent owns the rest of the status (phase
// after it picks the World up, admission, isolation, candidate, exit) under its own field manager.
import type { ObjectMeta, RootSpec, RootStatus, WorldSpec, WorldStatus } from '../crds/index.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

/** What binding reads of a Root (a Pick of the parsed Root). */
export interface RootView {
  metadata: Pick<ObjectMeta, 'name'>;
  spec: Pick<RootSpec, 'nodeName' | 'path'>;
  status?: Pick<RootStatus, 'phase'>;
}

/** What the controller's World status reads of a World (a Pick of the parsed World). */
export interface WorldView {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'generation' | 'deletionTimestamp'>;
  spec: Pick<WorldSpec, 'roots'>;
  /** `admission` is the node-agent's: present once the agent has answered for the World (even Pending or Refused). */
  status?: Pick<WorldStatus, 'phase' | 'nodeName' | 'conditions' | 'admission'>;
}

/** The fields of World.status the controller applies (field manager `worldline-controller`). */
export interface WorldControllerStatus {
  nodeName?: string;
  phase?: 'Pending' | 'Refused';
  reason?: string;
  message?: string;
  conditions: Condition[];
}

export interface WorldInputs {
  world: WorldView;
  roots: ReadonlyMap<string, RootView>;
  nodeAgentPresent: (nodeName: string) => boolean;
  now: Date;
}

const WORLD_OWNED_CONDITIONS = new Set<string>([ControllerConditions.Accepted, 'Ready']);

/**
 * Phases the controller sets. Any other phase means the node-agent has taken the World over; so does an
 * admission answer on status, since the node-agent also writes Pending (waiting for room) and Refused.
 */
const CONTROLLER_PHASES = new Set<WorldStatus['phase']>([undefined, 'Pending', 'Refused']);

type Verdict =
  | { bound: true; nodeName: string }
  | { bound: false; refuse: boolean; reason: (typeof Reasons)[keyof typeof Reasons]; message: string; nodeName?: string };

/** Checks the Roots named by a World: all exist, all Ready, all on one node. */
export function bindWorld(world: WorldView, roots: ReadonlyMap<string, RootView>): Verdict {
  const names = world.spec.roots;
  if (names.length === 0) {
    return { bound: false, refuse: true, reason: Reasons.RootNotFound, message: 'spec.roots names no Root' };
  }
  const missing = names.filter((n) => !roots.has(n));
  if (missing.length > 0) {
    return {
      bound: false,
      refuse: false,
      reason: Reasons.RootNotFound,
      message: `Root ${missing.map((m) => `"${m}"`).join(', ')} does not exist; create it or fix spec.roots`,
    };
  }
  const nodes = new Map<string, string[]>();
  for (const n of names) {
    const node = roots.get(n)?.spec.nodeName ?? '';
    nodes.set(node, [...(nodes.get(node) ?? []), n]);
  }
  if (nodes.size > 1) {
    const detail = [...nodes].map(([node, rs]) => `${rs.join(', ')} on node "${node}"`).join('; ');
    return {
      bound: false,
      refuse: true,
      reason: Reasons.RootsOnDifferentNodes,
      message: `a World's Roots must all be on one node, but ${detail}`,
    };
  }
  const nodeName = [...nodes.keys()][0] ?? '';
  const notReady = names.filter((n) => roots.get(n)?.status?.phase !== 'Ready');
  if (notReady.length > 0) {
    const detail = notReady.map((n) => `"${n}" (${roots.get(n)?.status?.phase ?? 'no phase yet'})`).join(', ');
    return {
      bound: false,
      refuse: false,
      reason: Reasons.RootNotReady,
      message: `waiting for Root ${detail} to become Ready on node "${nodeName}"`,
      nodeName,
    };
  }
  return { bound: true, nodeName };
}

/**
 * Ready while a node-agent serves the World. It changes only where a reader learns something: the run is
 * over with a candidate (True, whether Captured or later Collapsed), or it stopped short (the agent's
 * Pending with an admission answer, Refused, Failed: False, reason Phase<phase>). Before pick-up and while
 * Admitted or Running it stays one value, so the agent's steps cost no write of the controller's
 * (status.phase shows them).
 */
function readyWithAgent(node: string, agentPhase: string | undefined): { status: 'True' | 'False'; reason: string; message: string } {
  if (agentPhase === 'Captured' || agentPhase === 'Collapsed') return { status: 'True', reason: Reasons.CandidateCaptured.reason, message: 'the agent\'s run ended and its candidate was captured' };
  if (agentPhase === undefined || agentPhase === 'Admitted' || agentPhase === 'Running') return { status: 'False', reason: Reasons.NodeAgentPresent.reason, message: `served by the node-agent on "${node}"; status.phase shows how far its run is` };
  return { status: 'False', reason: `Phase${agentPhase}`, message: `node-agent reports phase ${agentPhase}` };
}

/** Desired controller-owned status for a World. Never throws for any World the schema admits. */
export function computeWorldStatus(inp: WorldInputs): WorldControllerStatus {
  const { world, now } = inp;
  const gen = world.metadata.generation;
  // Only the condition types this controller owns are applied; the node-agent's stay its own.
  const prev = world.status?.conditions?.filter((c) => WORLD_OWNED_CONDITIONS.has(c.type));
  const boundBefore = world.status?.nodeName;
  const agentOwnsPhase = world.status?.admission !== undefined || !CONTROLLER_PHASES.has(world.status?.phase);
  const verdict = bindWorld(world, inp.roots);

  // A binding is permanent: once bound, a World keeps its node even if a Root later disappears.
  const nodeName = boundBefore && boundBefore.length > 0 ? boundBefore : verdict.bound ? verdict.nodeName : undefined;

  let conditions: Condition[];
  let phase: 'Pending' | 'Refused';
  let reason: string;
  let message: string;
  if (!verdict.bound) {
    conditions = setCondition(prev, { type: ControllerConditions.Accepted, status: 'False', reason: verdict.reason.reason, message: verdict.message }, gen, now);
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: verdict.reason.reason, message: verdict.message }, gen, now);
    phase = verdict.refuse ? 'Refused' : 'Pending';
    reason = verdict.reason.code;
    message = verdict.message;
  } else {
    const node = nodeName ?? verdict.nodeName;
    const acceptedMsg = `bound to node "${node}"`;
    conditions = setCondition(prev, { type: ControllerConditions.Accepted, status: 'True', reason: Reasons.Bound.reason, message: acceptedMsg }, gen, now);
    if (!inp.nodeAgentPresent(node)) {
      const msg = `no worldline node-agent is serving node "${node}"; the World runs once one is`;
      conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: Reasons.WaitingForNodeAgent.reason, message: msg }, gen, now);
      phase = 'Pending';
      reason = Reasons.WaitingForNodeAgent.code;
      message = msg;
    } else {
      conditions = setCondition(conditions, { type: 'Ready', ...readyWithAgent(node, agentOwnsPhase ? world.status?.phase : undefined) }, gen, now);
      phase = 'Pending';
      reason = Reasons.NodeAgentPresent.code;
      message = `node-agent on "${node}" has not picked the World up yet`;
    }
  }
  const out: WorldControllerStatus = { conditions };
  if (nodeName !== undefined) out.nodeName = nodeName;
  if (!agentOwnsPhase) {
    out.phase = phase;
    out.reason = reason;
    out.message = message;
  }
  return out;
}
