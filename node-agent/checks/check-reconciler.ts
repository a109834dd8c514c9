// Runs the Checks of Worlds bound to this node. A Check runs once, only on the World bound in its
// spec.worldUID (another World of that name refuses it, WORLD_REPLACED): its World must be Captured (until then
// it waits, Pending with CANDIDATE_MISSING), its definition comes from the Policy governing the World's
// Roots, and its verifiers are bound from the World's base generation (the current PRIME for
// spec.revalidate). A Check with spec.subject runs instead on a rebased candidate of the World (formed for a
// Collapse with spec.rebase): it must carry exactly the change of the World's captured candidate, and its
// verifiers and base come from the generations it was rebased onto. It is admitted as stage 'check', run on exactly the candidate's bytes with the bound
// verifiers staged on top (checks/run-check.ts), recorded in the store's evaluations table and written
// to the Check's status under the node-agent's field manager.
import { lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { classifyError, describeError, Refusal } from '../../core/errors.js';
import type { CheckDefinition } from '../../core/evidence/requirement.js';
import { governingPolicy } from '../../core/policy/governing.js';
import { privateRunId } from '../../core/private-evaluator/report-admission.js';
import { agentGate } from '../../core/world-binding.js';
import { parseDuration } from '../../crds/common.js';
import type { Check, CheckStatus, Policy, World } from '../../crds/index.js';
import type { Clock } from '../../kube/clock.js';
import type { EventRecorder } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { kindParsers } from '../../kube/kind-parsers.js';
import type { Logger } from '../../kube/logger.js';
import { ControllerRunner, type ReconcileMetrics, type ReconcileResult } from '../../kube/reconcile.js';
import { objectKey } from '../../kube/resource-ref.js';
import type { RefusalWriter } from '../../kube/refusal-writer.js';
import type { StatusWriter } from '../../kube/status-writer.js';
import type { NsName } from '../../native/index.js';
import type { CheckRoot } from './materialize.js';
import { readCandidate } from '../store/candidates.js';
import { rebaseOnto } from '../store/rebased-candidate.js';
import { hasEvaluation, recordEvaluation } from '../store/evaluation-records.js';
import { checkDefinitions, resolveRequirement } from '../evidence/policy-requirement.js';
import { CHECK_ENV_BASE, runCheck, type CheckResult } from './run-check.js';
import { runPrivateCheck, type PrivateCheckResult } from './run-private-check.js';
import type { AgentConfig } from '../config.js';
import { checkGate, privateCheckGate } from './check-gate.js';
import type { AgentMetrics } from '../metrics.js';
import { refs } from '../api-refs.js';
import type { CgroupLayout } from '../sandbox/cgroup.js';
import type { Store } from '../store/open-store.js';
import { checkRoutingSettled } from '../store/routing.js';
import { holdPayload } from '../store/payload-holds.js';
import { payloadLayers } from '../store/generation-stack.js';
import { getGeneration, getRoot } from '../store/store-records.js';
import type { RunAdmission } from '../admission/admission-authority.js';
import { releaseRun, reserveRun, type ReservationDeps } from '../sandbox/run-reservation.js';
import type { WorldResources } from '../admission/admission-policy.js';
import { generationManifest } from '../store/world-records.js';
import { readFileSync } from 'node:fs';
import { candidateSubject, type CheckExecution } from '../../core/evidence/check-execution.js';
import { PREDICATE_TYPES } from '../../core/evidence/statement.js';
import type { StatementSigner } from '../evidence/statement-signer.js';

const HOME = '/home/check';
const WAIT_MS = 5_000;
const FINAL = new Set(['Passed', 'Failed', 'Refused']);
/** Check.status fields the node-agent owns (the controller owns nodeName and the WorldFound condition). */
const OWNED_KEYS = ['phase', 'verdict', 'subject', 'requirementHash', 'verifierIdentity', 'executedVerifierIdentity', 'exit', 'reason', 'message', 'startedAt', 'finishedAt', 'attestation'] as const;

/** The node-agent's part of a Check's status (undefined clears a field it wrote before). */
type AgentCheckStatus = { [K in (typeof OWNED_KEYS)[number]]?: CheckStatus[K] };

export interface NodeChecksDeps {
  kubeConfig: KubeConfig;
  nodeName: string;
  worlds: Informer<World>;
  policies: Informer<Policy>;
  rootPath: (name: string) => string | undefined;
  store: Store;
  config: AgentConfig;
  cgroups: CgroupLayout;
  agentNs: Record<NsName, string>;
  admission: RunAdmission;
  status: StatusWriter;
  /** Writes OBJECT_SCHEMA_INVALID on a Check bound to this node that its schema refuses. */
  refusals: RefusalWriter;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
  metrics: ReconcileMetrics;
  agentMetrics?: AgentMetrics;
  /** Called after a run's evaluation is recorded (a Collapse may be waiting for it). */
  onEvaluated?: () => void;
  /** Signs each finished run as a check execution statement (none without it). */
  statements?: StatementSigner;
}

/** The Checks of this node: an informer on status.nodeName, a runner, and re-enqueueing on World changes. */
export class NodeChecks {
  readonly informer: Informer<Check>;
  readonly runner: ControllerRunner;
  private readonly inflight = new Set<string>();

  constructor(private readonly d: NodeChecksDeps) {
    this.informer = new Informer<Check>({ kubeConfig: d.kubeConfig, resource: refs.Check, parse: kindParsers.Check, fieldSelector: `status.nodeName=${d.nodeName}`, logger: d.logger, clock: d.clock });
    this.runner = new ControllerRunner({ kind: 'NodeCheck', reconcile: (k) => this.reconcile(k), workers: 2, metrics: d.metrics, logger: d.logger });
    this.informer.onAdd((o) => this.runner.enqueue(objectKey(o)));
    this.informer.onUpdate((o) => this.runner.enqueue(objectKey(o)));
    this.informer.onRefuse((r) => this.runner.enqueue(r.key));
    const onWorld = (w: World): void => {
      for (const c of this.informer.list()) {
        if (c.metadata.namespace === w.metadata.namespace && c.spec.worldRef === w.metadata.name) this.runner.enqueue(objectKey(c));
      }
    };
    d.worlds.onAdd(onWorld);
    d.worlds.onUpdate((o) => onWorld(o));
  }

  async start(): Promise<void> {
    await this.informer.start();
    this.runner.start();
  }

  async stop(): Promise<void> {
    this.informer.stop();
    await this.runner.stop();
  }

  private async apply(c: Check, s: AgentCheckStatus): Promise<void> {
    // Into the informer at once (as the World reconciler's writes): no reconcile re-applies it before the echo.
    this.informer.observeWrite(await this.d.status.applyOwnedStatus<Check>(refs.Check, c, s, { keys: OWNED_KEYS }));
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const refused = this.informer.refusal(key);
    if (refused) {
      // Not run: refused by name (phase Refused, OBJECT_SCHEMA_INVALID naming the field paths).
      await this.d.refusals.refuse(refs.Check, refused, { phase: 'Refused' }, this.d.clock.now());
      return;
    }
    const c = this.informer.get(key);
    const uid = c?.metadata.uid;
    if (!c || !uid || c.metadata.deletionTimestamp) return;
    if (FINAL.has(c.status?.phase ?? '') || this.inflight.has(uid) || hasEvaluation(this.d.store.db, uid)) return;
    const world = this.d.worlds.get(`${c.metadata.namespace ?? ''}/${c.spec.worldRef}`);
    // Only the World bound in spec.worldUID is checked: unbound, it waits for the controller; another World of that name refuses it.
    const gate = agentGate('Check', c.spec.worldRef, c.spec.worldUID, world);
    if (gate.act === 'wait') return;
    if (gate.act === 'refuse') {
      await this.apply(c, { phase: 'Refused', verdict: 'REFUSED', reason: gate.code, message: gate.message, finishedAt: this.d.clock.now().toISOString() });
      this.d.events.warning(c, 'CheckRefused', `${gate.code}: ${gate.message}`);
      return;
    }
    const captured = world?.status?.candidate;
    if (world?.status?.phase === 'Collapsed') {
      // Its candidate is PRIME's history now: nothing left to check (a Check never runs twice anyway).
      await this.apply(c, { phase: 'Refused', verdict: 'REFUSED', reason: 'WORLD_ALREADY_COLLAPSED', message: `World ${c.spec.worldRef} was already collapsed; its candidate is not checked any more` });
      return;
    }
    if (!world || world.status?.phase !== 'Captured' || !captured?.digest) {
      await this.apply(c, { phase: 'Pending', reason: 'CANDIDATE_MISSING', message: `World ${c.spec.worldRef} has no captured candidate on this node (yet)` });
      return { requeueAfterMs: WAIT_MS };
    }
    this.inflight.add(uid);
    try {
      return await this.run(c, world, c.spec.subject ?? captured.digest);
    } finally {
      this.inflight.delete(uid);
    }
  }

  private async run(c: Check, world: World, subject: string): Promise<ReconcileResult> {
    const d = this.d;
    const uid = c.metadata.uid ?? '';
    const holder = `check-${uid}`;
    let status: AgentCheckStatus = { subject };
    let reserved = false;
    // The payloads the check reads (its bases; PRIME for a revalidation), held mounted until it is done.
    const held: (() => void)[] = [];
    try {
      const view = await this.checkView(c, world, subject, held);
      status = { ...status, requirementHash: view.resolved.requirementHash, verifierIdentity: view.resolved.declaredVerifier };
      // Admission by the node's one authority, then an id range: the same step a World takes.
      const reservation = reserveRun(this.reservations(), holder, 'check', {}, d.clock.now());
      if (!reservation.ok) {
        // A Check waits for room whatever the answer (a node policy being fixed is room too).
        await this.apply(c, { ...status, phase: 'Pending', reason: reservation.code, message: reservation.message });
        return { requeueAfterMs: WAIT_MS };
      }
      reserved = true;
      status = { ...status, phase: 'Running', reason: undefined, message: undefined, startedAt: d.clock.now().toISOString() };
      await this.apply(c, status);
      d.events.normal(c, 'CheckStarted', `running check ${c.spec.name} on candidate ${subject}`);
      const { result, isolation } = view.definition.profile === 'private-evaluator-v1' ? await this.executePrivate(c, view, subject, reservation) : await this.execute(c, world, subject, view, reservation);
      if (result.verdict === 'REFUSED') throw new Refusal(result.code, isolation && result.code === 'ISOLATION_INSUFFICIENT' ? `${result.message}; ${isolation}` : result.message);
      await this.record(c, world, status, result);
      return;
    } catch (err) {
      // Only a Refusal is final. Anything else (an errno such as EBUSY, an API error) is transient: the
      // Check shows it, Pending, and the runner retries it with backoff.
      const failure = classifyError(err);
      if (failure.terminal) {
        await this.refuse(c, world, status, failure.code, failure.message);
        return;
      }
      await this.apply(c, { ...status, phase: 'Pending', reason: 'CHECK_RETRYING', message: `retrying after a transient failure: ${failure.message}` }).catch((writeErr: unknown) =>
        d.logger.warn('could not show a Check as retrying', { check: objectKey(c), error: describeError(writeErr) }),
      );
      throw err;
    } finally {
      if (reserved) releaseRun(this.reservations(), holder);
      for (const release of held) release();
    }
  }

  /**
   * The finished run as a signed check execution statement about its candidate, kept in the evidence store;
   * none when the candidate's identity document is not there to bind (logged: the run stands as recorded).
   */
  private attest(c: Check, world: World, subject: string, s: AgentCheckStatus): { digest: string; envelope: string } | undefined {
    const d = this.d;
    if (!d.statements || !s.requirementHash || !s.verifierIdentity || !s.executedVerifierIdentity || !s.verdict || !s.exit || !s.startedAt || !s.finishedAt) return undefined;
    try {
      const identity: unknown = JSON.parse(readFileSync(join(d.store.layout.candidates, subject.slice('sha256:'.length), 'candidate.json'), 'utf8'));
      const about = candidateSubject(identity);
      if (about.digest !== subject) throw new Error(`the candidate document hashes to ${about.digest}, not ${subject}`);
      const record: CheckExecution = {
        check: { namespace: c.metadata.namespace ?? '', name: c.metadata.name ?? '', uid: c.metadata.uid ?? '' },
        world: { uid: world.metadata.uid ?? '' },
        checkName: c.spec.name,
        subject,
        requirementHash: s.requirementHash,
        verifierIdentity: s.verifierIdentity,
        executedVerifierIdentity: s.executedVerifierIdentity,
        verdict: s.verdict,
        ...(s.reason ? { reason: s.reason } : {}),
        exit: { code: s.exit.code ?? null, signal: s.exit.signal ?? null, reason: s.exit.reason ?? '' },
        startedAt: s.startedAt,
        finishedAt: s.finishedAt,
      };
      return d.statements.sign(about, PREDICATE_TYPES.checkExecution, record);
    } catch (e) {
      d.logger.warn('could not sign the check execution record', { check: objectKey(c), error: describeError(e) });
      return undefined;
    }
  }

  private reservations(): ReservationDeps {
    return { admission: this.d.admission, db: this.d.store.db, idBase: this.d.config.idBase, idSlots: this.d.config.idSlots };
  }

  /** Ends the Check REFUSED by name, recorded as an evaluation like any other run. */
  private async refuse(c: Check, world: World, base: AgentCheckStatus, code: string, message: string): Promise<void> {
    const d = this.d;
    const status: AgentCheckStatus = { ...base, phase: 'Refused', verdict: 'REFUSED', reason: code, message, finishedAt: d.clock.now().toISOString() };
    recordEvaluation(d.store.db, { checkUid: c.metadata.uid ?? '', worldUid: world.metadata.uid ?? '', checkName: c.spec.name, verdict: 'REFUSED', reason: code, subject: base.subject ?? '', ...ids(status) }, d.clock.now());
    d.onEvaluated?.();
    d.agentMetrics?.checkVerdict('REFUSED', code);
    await this.apply(c, status);
    d.events.warning(c, 'CheckRefused', `${code}: ${message}`);
  }

  /**
   * What the check runs on: the governing Policy's definition of it, the requirement resolved against the
   * generation verifiers come from (the World's base, or PRIME now to revalidate), and per Root the base
   * payload, the verifiers it binds and the candidate's delta.
   */
  private async checkView(c: Check, world: World, subject: string, held: (() => void)[]): Promise<CheckView> {
    const d = this.d;
    const roots = world.spec.roots;
    const checkName = c.spec.name;
    const policy = governingPolicy(d.policies.list(), roots);
    const definition = checkDefinitions(policy).find((x) => x.name === checkName);
    if (!policy || !definition) throw new Refusal('CHECK_NOT_IN_POLICY', `no Policy governing Roots ${roots.join(', ')} defines check "${checkName}"`);

    // A spec.subject is checked to be a rebase of the World's candidate before anything of it is read.
    const base = c.spec.subject === undefined ? (world.status?.base ?? []) : rebasedBase(d.store.layout.candidates, c, world);
    const candidateDir = join(d.store.layout.candidates, subject.replace(/^sha256:/, ''));
    const { deltas } = readCandidate(candidateDir);
    // Per Root: the base payload (the candidate's lower layer) and the generation verifiers come from.
    const sources = new Map<string, { rootKey: string; path: string; basePayload: string; baseLayers: string[]; primePayload: string; primeGeneration: number }>();
    for (const name of roots) {
      const rec = getRoot(d.store.db, name);
      const b = base.find((x) => x.root === name);
      const gen = rec && b ? getGeneration(d.store.db, rec.rootKey, b.generation) : undefined;
      if (!rec || !b || !gen) throw new Refusal('EVIDENCE_CONTEXT_MISSING', `the base generation of Root ${name} is not recorded in this node's store`);
      const baseHeld = holdPayload(d.store, gen.id);
      held.push(baseHeld.release);
      const basePayload = baseHeld.path;
      // Verifiers are bound from the generation the World forked (or the current PRIME to revalidate).
      let primePayload = basePayload;
      let primeGeneration = b.generation;
      if (c.spec.revalidate) {
        const routing = await checkRoutingSettled(d.store, name);
        const prime = holdPayload(d.store, routing.generationId); // PRIME now; it may move on while the check runs
        held.push(prime.release);
        primePayload = prime.path;
        primeGeneration = routing.root.generation;
      }
      sources.set(name, { rootKey: rec.rootKey, path: d.rootPath(name) ?? rec.nodePath, basePayload, baseLayers: payloadLayers(d.store.layout, gen.id), primePayload, primeGeneration });
    }
    // The resources every check runs with on this node are part of what its evidence is about.
    const resolved = resolveRequirement(policy, roots, (name) => {
      const src = sources.get(name);
      return src && generationManifest(d.store.db, src.rootKey, src.primeGeneration);
    }, d.admission.checkResources());
    if (!resolved) throw new Refusal('EVIDENCE_CONTEXT_MISSING', `a generation of Roots ${roots.join(', ')} has no manifest in this node's store`);
    const checkRoots: CheckRoot[] = roots.map((name) => {
      const src = sources.get(name)!;
      return { name, rootKey: src.rootKey, path: src.path, basePayload: src.basePayload, baseLayers: src.baseLayers, primePayload: src.primePayload, bound: resolved.bound.get(name) ?? [], delta: deltas.get(src.rootKey) ?? null };
    });
    const first = checkRoots[0];
    if (!first) throw new Refusal('ROOT_NOT_FOUND', 'the World names no Root');
    return { policy, definition, candidateDir, checkRoots, first, resolved };
  }

  /** Runs the check in its sandbox behind the check stage's isolation gate; `isolation` says what the gate decided. */
  private async execute(c: Check, world: World, subject: string, view: CheckView, r: { reserve: WorldResources; idBase: number; idCount: number }): Promise<{ result: CheckResult; isolation: string | undefined }> {
    const d = this.d;
    const owner = lstatSync(view.first.basePayload);
    const checksDir = join(d.store.dir, 'checks');
    mkdirSync(checksDir, { recursive: true, mode: 0o711 });
    const runId = (c.metadata.uid ?? '').replace(/[^A-Za-z0-9-]/g, '');
    const env = [...CHECK_ENV_BASE, `HOME=${HOME}`, ...(view.definition.env ?? []).flatMap((n) => (process.env[n] !== undefined ? [`${n}=${process.env[n]}`] : []))];
    let isolation: string | undefined;
    const gate = checkGate({ policy: view.policy, subject, runId, rootPaths: view.checkRoots.map((x) => x.path), env, agentNs: d.agentNs, logger: d.logger, metrics: d.agentMetrics }, (decided) => (isolation = decided));
    const result = await runCheck({
      runId,
      checksDir,
      checkName: c.spec.name,
      argv: [...view.definition.command],
      env,
      gate,
      cwd: view.first.path,
      runAsUid: world.spec.agent.runAsUser ?? owner.uid,
      runAsGid: world.spec.agent.runAsUser ?? owner.gid,
      home: HOME,
      roots: view.checkRoots,
      candidateDir: view.candidateDir,
      subject,
      requirementHash: view.resolved.requirementHash,
      verifierIdentity: view.resolved.declaredVerifier,
      idBase: r.idBase,
      idCount: r.idCount,
      limits: { cpuMillis: r.reserve.cpuMillis, memoryBytes: r.reserve.memoryBytes, pids: r.reserve.pids },
      wallTimeMs: Math.round((parseDuration(view.definition.timeout) ?? 600) * 1000),
      newNetwork: true,
      outputLimitBytes: r.reserve.outputBytes,
      ephemeralStorageBytes: r.reserve.ephemeralStorageBytes,
      outputFile: join(checksDir, `${runId}.output.log`),
      cgroups: d.cgroups,
      agentNs: d.agentNs,
      now: () => d.clock.now(),
    });
    return { result, isolation };
  }

  /**
   * Runs a private-evaluator-v1 check (run-private-check.ts): its verdict is its admitted report's. Every
   * role is gated on its own start; `isolation` says what the gate decided for each.
   */
  private async executePrivate(c: Check, view: CheckView, subject: string, r: { reserve: WorldResources; idBase: number; idCount: number }): Promise<{ result: PrivateCheckResult; isolation: string | undefined }> {
    const d = this.d;
    const checksDir = join(d.store.dir, 'checks');
    mkdirSync(checksDir, { recursive: true, mode: 0o711 });
    const runId = privateRunId(c.metadata.uid ?? '');
    const gate = privateCheckGate({ policy: view.policy, subject, runId, agentNs: d.agentNs, logger: d.logger, metrics: d.agentMetrics });
    const result = await runPrivateCheck({
      gate,
      runId,
      checksDir,
      checkName: c.spec.name,
      roots: view.checkRoots,
      candidateDir: view.candidateDir,
      subject,
      requirementHash: view.resolved.requirementHash,
      verifierIdentity: view.resolved.declaredVerifier,
      argv: [...view.definition.command],
      env: [...CHECK_ENV_BASE],
      reportFormat: view.definition.reportFormat ?? '',
      idBase: r.idBase,
      idCount: r.idCount,
      limits: { cpuMillis: r.reserve.cpuMillis, memoryBytes: r.reserve.memoryBytes, pids: r.reserve.pids },
      wallTimeMs: Math.round((parseDuration(view.definition.timeout) ?? 600) * 1000),
      outputLimitBytes: r.reserve.outputBytes,
      ephemeralStorageBytes: r.reserve.ephemeralStorageBytes,
      cgroups: d.cgroups,
      agentNs: d.agentNs,
      outputFile: join(checksDir, `${runId}.output.log`),
      now: () => d.clock.now(),
    });
    return { result, isolation: gate.summary() };
  }

  /** A run that ended: its verdict (REFUSED when the verifiers executed are not the ones bound), recorded, shown, announced. */
  private async record(c: Check, world: World, before: AgentCheckStatus, result: Extract<PrivateCheckResult, { record: unknown }>): Promise<void> {
    const d = this.d;
    const r = result.record;
    const mismatch = r.executedVerifierIdentity !== r.verifierIdentity;
    // A private-evaluator report that is not admissible cannot make the Check pass: FAIL, with its reasons.
    const untrusted = result.admission?.classification === 'UNTRUSTED' ? result.admission : undefined;
    const verdict = mismatch ? 'REFUSED' : result.verdict;
    const status: AgentCheckStatus = {
      ...before,
      phase: verdict === 'PASS' ? 'Passed' : verdict === 'FAIL' ? 'Failed' : 'Refused',
      verdict,
      executedVerifierIdentity: r.executedVerifierIdentity,
      exit: { ...(r.exit.code !== null ? { code: r.exit.code } : {}), ...(r.exit.signal !== null ? { signal: r.exit.signal } : {}), reason: r.exit.reason },
      ...(untrusted && !mismatch ? { reason: 'REPORT_UNTRUSTED', message: `the report is UNTRUSTED: ${untrusted.reasons.join(', ')} (${untrusted.details.join('; ')})` } : {}),
      ...(mismatch ? { reason: 'VERIFIER_EXECUTION_IDENTITY_MISMATCH', message: 'the verifiers executed are not the ones the requirement binds' } : {}),
      startedAt: r.startedAt,
      finishedAt: r.finishedAt,
    };
    recordEvaluation(d.store.db, {
      checkUid: c.metadata.uid ?? '', worldUid: world.metadata.uid ?? '', checkName: c.spec.name, verdict, subject: r.subject, ...ids(status),
      ...(mismatch ? { reason: 'VERIFIER_EXECUTION_IDENTITY_MISMATCH' } : {}),
      // A private run's raw record and report: a Collapse re-admits them (decision-evaluations.ts).
      ...(result.privateRun ? { privateRun: result.privateRun } : {}),
    }, d.clock.now());
    const attestation = this.attest(c, world, r.subject, status);
    if (attestation) status.attestation = attestation;
    d.onEvaluated?.();
    d.agentMetrics?.checkVerdict(verdict, mismatch ? 'VERIFIER_EXECUTION_IDENTITY_MISMATCH' : undefined);
    await this.apply(c, status);
    const msg = `check ${c.spec.name} on ${r.subject}: ${verdict} (exit ${r.exit.code ?? r.exit.signal ?? r.exit.reason})`;
    if (verdict === 'PASS') d.events.normal(c, 'CheckPassed', msg);
    else d.events.warning(c, verdict === 'FAIL' ? 'CheckFailed' : 'CheckRefused', msg);
  }
}

/** The bases of a Check's spec.subject: the generations it was rebased onto, when it carries exactly the World's captured change. */
function rebasedBase(candidatesDir: string, c: Check, world: World): { root: string; generation: number; digest: string }[] {
  const captured = world.status?.candidate?.digest ?? '';
  const onto = c.spec.subject ? rebaseOnto(candidatesDir, c.spec.subject, captured) : undefined;
  if (!onto) throw new Refusal('CHECK_SUBJECT_INVALID', `${c.spec.subject ?? ''} is not the captured candidate of World ${c.spec.worldRef} (${captured}) rebased onto a newer PRIME on this node`);
  return [...onto.values()];
}

interface CheckView {
  policy: Policy;
  definition: CheckDefinition;
  candidateDir: string;
  checkRoots: CheckRoot[];
  first: CheckRoot;
  resolved: NonNullable<ReturnType<typeof resolveRequirement>>;
}

function ids(s: AgentCheckStatus): { requirementHash?: string; verifierIdentity?: string; executedIdentity?: string } {
  return {
    ...(typeof s.requirementHash === 'string' ? { requirementHash: s.requirementHash } : {}),
    ...(typeof s.verifierIdentity === 'string' ? { verifierIdentity: s.verifierIdentity } : {}),
    ...(typeof s.executedVerifierIdentity === 'string' ? { executedIdentity: s.executedVerifierIdentity } : {}),
  };
}
