// The gate a world passes between "sandbox ready" and "workload runs": the Allowlist proxy is
// attached inside the world's network namespace, the isolation observation is built from measured
// facts and evaluated against the Policy and the World's request; only `reported-sufficient` opens
// the gate, or else an isolation waiver the World carries, verified and spent once here (its missing
// controls only, each named by the waiver; recorded on status). The environment is the one the sandbox
// reports handing to execve, checked against the plan before the workload runs.
import { evaluate } from '../../core/isolation/evaluate.js';
import type { IsolationDecision, IsolationObservation, IsolationPolicy, IsolationRequest } from '../../core/isolation/records.js';
import { identityOf } from '../../core/isolation/identity.js';
import type { Logger } from '../../kube/logger.js';
import type { NsName } from '../../native/index.js';
import { measureWorld, type WorldFacts } from './measure-world.js';
import type { ObservationProducers } from './world-producers.js';
import { observationHooks } from '../sandbox/observation-hooks.js';
import { buildObservation, type RoleMounts } from './world-observation.js';
import type { AgentMetrics } from '../metrics.js';
import { attachAllowlist } from '../network/world-network.js';
import type { CgroupReadback } from '../sandbox/cgroup.js';
import { StartRefused, type StartHooks } from '../sandbox/supervise.js';
import { WaiverRefused, type SpentWaiver } from '../evidence/waiver-spender.js';
import type { SignedStatement } from '../evidence/statement-signer.js';

/** The signed observation and decision of a run's gate. */
export interface Attestations {
  observation: SignedStatement;
  decision: SignedStatement;
}

const envName = (kv: string): string => kv.slice(0, kv.indexOf('='));

export interface NetworkRefusal {
  host: string;
  port: number;
  time: string;
}

export interface GateEvents {
  isolation(e: { decision: IsolationDecision; observation: IsolationObservation; notes: string[]; waiver?: SpentWaiver; waiverRefused?: { code: string; message: string }; attestations?: Attestations }): Promise<void>;
  networkRefusal(r: NetworkRefusal): void;
}

export interface GatePlan {
  worldUid: string;
  network: { policy: 'None' | 'Allowlist' | 'Shared'; allow: string[] };
  /**
   * Spends the World's isolation waiver for a decision that is not reported-sufficient (throws
   * WaiverRefused); absent when the World carries none.
   */
  waiver?: (decision: IsolationDecision) => SpentWaiver;
  /**
   * Where the observation's request and subject come from (world-producers.ts). Without them (a check's
   * stage) the plan's own request binds the observation.
   */
  producers?: ObservationProducers;
  /** Signs the observation and the decision as statements (statement-signer.ts); absent: none are made. */
  attest?: (observation: IsolationObservation, decision: IsolationDecision) => Attestations | undefined;
  policy: IsolationPolicy;
  request: IsolationRequest;
  rootPaths: string[];
  /** A private-evaluator role's outputs and inputs, measured in place of Roots (world-observation.ts). */
  roleMounts?: RoleMounts;
  credentialPaths: string[];
  envNames: string[];
  agentNs: Record<NsName, string>;
  wallTimeArmed: boolean;
  outputLimitArmed: boolean;
  backendVersion: string;
}

export function worldGate(plan: GatePlan, cgroup: CgroupReadback, events: GateEvents, metrics: AgentMetrics | undefined, logger: Logger): StartHooks {
  let proxy: { close(): Promise<void> } | undefined;
  return {
    beforeGo: async ({ pid, pidfd, observation: frame, problems }) => {
      await observationHooks().beforeGate?.(plan.worldUid);
      // The World as the API server holds it, asked for first so the round trip overlaps the proxy's
      // attach and the measurements below instead of following them; settled (never left unhandled) now,
      // judged where the observation is built.
      const asked = plan.producers?.request().then(
        (request) => ({ request }),
        (error: unknown) => ({ error }),
      );
      if (plan.network.policy === 'Allowlist') {
        proxy = await attachAllowlist(pid, plan.network.allow, (r) => {
          metrics?.networkRefusals.inc();
          events.networkRefusal({ host: r.host, port: r.port, time: r.time });
        }, { pidfd, logger });
      }
      // Each binding and measurement from what produced it; one that cannot be taken leaves the
      // observation incomplete (the plan's value then fills a field of a record that authorizes nothing).
      const unmeasured: string[] = [];
      const why = (e: unknown): string => (e instanceof Error ? e.message : String(e));
      let facts: WorldFacts = { mounts: [], interfaces: [] };
      try {
        const probe = plan.roleMounts ? [...plan.roleMounts.outputs, ...plan.roleMounts.inputs].map((b) => b.path) : [];
        facts = measureWorld(pid, probe);
      } catch (e) {
        unmeasured.push(`the World's mounts and interfaces (/proc/${pid}): ${why(e)}`);
      }
      let requestIdentity = identityOf(plan.request);
      let subject = plan.request.subject;
      if (plan.producers && asked) {
        const answer = await asked;
        if ('request' in answer) requestIdentity = identityOf(answer.request);
        else unmeasured.push(`the request, from the World as the API server holds it: ${why(answer.error)}`);
        try {
          subject = plan.producers.subject();
        } catch (e) {
          unmeasured.push(`the subject, from the generations mounted as the World's lower layers: ${why(e)}`);
        }
      }
      const { observation, notes } = buildObservation(
        {
          frameProblems: problems,
          frame,
          agentNs: plan.agentNs,
          cgroup,
          facts,
          rootPaths: plan.rootPaths,
          ...(plan.roleMounts ? { roleMounts: plan.roleMounts } : {}),
          credentialPaths: plan.credentialPaths,
          network: plan.network.policy,
          proxyInWorldNetns: proxy !== undefined,
          wallTimeArmed: plan.wallTimeArmed,
          outputLimitArmed: plan.outputLimitArmed,
        },
        {
          requestIdentity,
          policyIdentity: identityOf(plan.policy),
          subject,
          requestTarget: plan.request.target,
          executionId: plan.worldUid,
          backendVersion: plan.backendVersion,
        },
        // minimal-environment: every variable the sandbox reports handing to execve is one the plan gave.
        frame.environ.every((kv) => plan.envNames.includes(envName(kv))),
        unmeasured,
      );
      const decision = evaluate(plan.policy, plan.request, observation);
      metrics?.isolation(plan.request.stage, decision.outcome, decision.reasons[0] ?? 'NONE');
      let attestations: Attestations | undefined;
      try {
        attestations = plan.attest?.(observation, decision);
      } catch (e) {
        // The run goes on as decided; it has no signed record of the decision, and its status says none.
        logger.warn('could not sign the isolation observation and decision', { world: plan.worldUid, error: why(e) });
      }
      const signed = attestations ? { attestations } : {};
      const insufficient = `isolation decision ${decision.outcome} (${decision.reasons.join(', ')})${decision.missingControls.length ? `; missing controls: ${decision.missingControls.join(', ')}` : ''}`;
      if (decision.outcome === 'reported-sufficient' || !plan.waiver) {
        await events.isolation({ decision, observation, notes, ...signed });
        if (decision.outcome !== 'reported-sufficient') throw new StartRefused('ISOLATION_INSUFFICIENT', insufficient);
        return;
      }
      let waiver: SpentWaiver;
      try {
        waiver = plan.waiver(decision);
      } catch (e) {
        if (!(e instanceof WaiverRefused)) throw e;
        metrics?.waiver(e.code);
        await events.isolation({ decision, observation, notes, waiverRefused: { code: e.code, message: e.message }, ...signed });
        throw new StartRefused(e.code, `${insufficient}; the World's waiver is refused: ${e.message}`);
      }
      metrics?.waiver('SPENT');
      await events.isolation({ decision, observation, notes, waiver, ...signed });
    },
    onEnd: async () => {
      await proxy?.close();
    },
  };
}
