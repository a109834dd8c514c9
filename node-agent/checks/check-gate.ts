// The check stage's isolation gate (docs/architecture.md, "Isolation"): what a check's sandbox shows the
// kernel, measured before its code runs and judged against the governing Policy's spec.isolation.check.
// A legacy check is one sandbox over writable overlays of its Roots. A private-evaluator run is several:
// every role — the examiner, each worker, each candidate session — is gated on its own start, its outputs
// and inputs being the binds the node-agent made for that role (run-examiner.ts) rather than Roots.
import type { Policy } from '../../crds/index.js';
import type { Logger } from '../../kube/logger.js';
import type { NsName } from '../../native/index.js';
import { worldGate, type GatePlan } from '../isolation/isolation-gate.js';
import { fileIdentity } from '../isolation/measure-world.js';
import type { PlannedBind } from '../isolation/world-observation.js';
import { checkPolicyRecord, checkRequestRecord } from '../isolation/world-request.js';
import type { AgentMetrics } from '../metrics.js';
import type { RoleGate } from '../private-evaluator/run-examiner.js';
import type { CgroupReadback } from '../sandbox/cgroup.js';
import type { StartHooks } from '../sandbox/supervise.js';
import { AGENT_VERSION } from '../version.js';

export interface CheckGateInputs {
  policy: Policy;
  subject: string;
  runId: string;
  agentNs: Record<NsName, string>;
  logger: Logger;
  metrics: AgentMetrics | undefined;
}

const envName = (kv: string): string => kv.slice(0, kv.indexOf('='));

/** The check stage's plan: no network, the Policy's check rule, the candidate as subject; what its outputs are is the caller's. */
function checkStagePlan(g: CheckGateInputs, worldUid: string, env: readonly string[], outputs: Pick<GatePlan, 'rootPaths' | 'roleMounts'>): GatePlan {
  return {
    worldUid,
    network: { policy: 'None', allow: [] },
    policy: checkPolicyRecord(g.policy),
    request: checkRequestRecord(g.subject),
    ...outputs,
    credentialPaths: [],
    envNames: env.map(envName),
    agentNs: g.agentNs,
    wallTimeArmed: true,
    outputLimitArmed: true,
    backendVersion: AGENT_VERSION,
  };
}

/** A legacy check's gate: its Roots are its outputs, as a World's are. `decided` gets the decision in one line. */
export function checkGate(g: CheckGateInputs & { rootPaths: string[]; env: string[] }, decided: (summary: string) => void): (cg: CgroupReadback) => StartHooks {
  return (cg) =>
    worldGate(
      checkStagePlan(g, `check-${g.runId}`, g.env, { rootPaths: g.rootPaths }),
      cg,
      {
        isolation: ({ decision }) => {
          decided(`isolation decision ${decision.outcome}${decision.reasons.length ? ` (${decision.reasons.join(', ')})` : ''}`);
          return Promise.resolve();
        },
        networkRefusal: () => undefined,
      },
      g.metrics,
      g.logger,
    );
}

/** One private-evaluator run's gate: asked at every role's start (run-examiner.ts's RoleGate). */
export interface PrivateCheckGate {
  gate: RoleGate;
  /** Each role the gate refused, with the decision and what the measurement showed. */
  refusals(): string[];
  /** The roles that passed so far, in one line ("isolation decision reported-sufficient for examiner, w1, c1"); none, undefined. */
  summary(): string | undefined;
}

export function privateCheckGate(g: CheckGateInputs): PrivateCheckGate {
  // The outputs of the roles that passed the gate and have not ended: identity → role id. A role's
  // directory is removed after it ends, and its inode number may be given to a later role's.
  const live = new Map<string, string>();
  const refused: string[] = [];
  const passed: string[] = [];
  const gate: RoleGate = (start) => {
    const planned = (readonly: boolean): PlannedBind[] =>
      start.binds.filter((b) => b.readonly === readonly && (readonly || b.file !== true)).map((b) => ({ path: b.target, identity: fileIdentity(b.source) }));
    // Outputs are the writable directories; a writable file bind is a broker's socket, a channel and not an output.
    const outputs = planned(false);
    const inputs = planned(true);
    const othersOutputs = new Set([...live].filter(([, id]) => id !== start.id).map(([identity]) => identity));
    const hooks = worldGate(
      checkStagePlan(g, `check-${g.runId}-${start.id}`, start.env, { rootPaths: [], roleMounts: { outputs, inputs, othersOutputs } }),
      start.cgroup,
      {
        isolation: ({ decision, notes }) => {
          if (decision.outcome === 'reported-sufficient') {
            passed.push(start.id);
            for (const o of outputs) live.set(o.identity, start.id);
          } else {
            const missing = decision.missingControls.length ? `; missing controls: ${decision.missingControls.join(', ')}` : '';
            refused.push(`${start.role} ${start.id}: isolation decision ${decision.outcome} (${decision.reasons.join(', ')})${missing}${notes.length ? ` [${notes.join('; ')}]` : ''}`);
          }
          return Promise.resolve();
        },
        networkRefusal: () => undefined,
      },
      g.metrics,
      g.logger,
    );
    return {
      ...(hooks.beforeGo ? { beforeGo: hooks.beforeGo } : {}),
      onEnd: async () => {
        for (const [identity, id] of [...live]) if (id === start.id) live.delete(identity);
        await hooks.onEnd?.();
      },
    };
  };
  return {
    gate,
    refusals: () => [...refused],
    summary: () => (passed.length > 0 ? `isolation decision reported-sufficient for ${passed.join(', ')}` : undefined),
  };
}
