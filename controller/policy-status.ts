// The controller's part of a Policy's status: checks that need more than the schema can say
// (Roots exist, one Policy per Root, private-evaluator ordering, verifiers and a report format the
// node-agent reads to a verdict) and warnings for
// checks that bind no verifier file.
import { governsAny, olderPolicyFirst } from '../core/policy/governing.js';
import { examinerCommandProblem } from '../core/private-evaluator/examiner-command.js';
import { READABLE_REPORT_FORMATS } from '../core/private-evaluator/report-admission.js';
import type { ObjectMeta, PolicyCheck, PolicySpec, PolicyStatus } from '../crds/index.js';
import { setCondition, type Condition } from '../kube/conditions.js';
import { ControllerConditions, Reasons } from './reasons.js';

/** What the status reads of one of a Policy's checks (a Pick of the parsed check). */
export type PolicyCheckView = Pick<PolicyCheck, 'name' | 'command' | 'verifiers' | 'profile' | 'reportFormat'>;

/** What the Policy's controller status reads (a Pick of the parsed Policy). */
export interface PolicyObj {
  metadata: Pick<ObjectMeta, 'name' | 'generation' | 'creationTimestamp'>;
  spec: Pick<PolicySpec, 'roots'> & { checks?: readonly PolicyCheckView[] };
  status?: Pick<PolicyStatus, 'conditions'>;
}

export interface PolicyControllerStatus {
  conditions: Condition[];
  warnings: string[];
}

/** An argv element that names a file inside a Root: relative, not an option, contains a path separator or an extension. */
export function namesRelativeFile(arg: string): boolean {
  if (arg.length === 0 || arg.startsWith('-') || arg.startsWith('/')) return false;
  if (/\s/.test(arg)) return false;
  return arg.includes('/') || /\.[A-Za-z0-9]{1,8}$/.test(arg);
}

export function checkWarnings(checks: readonly PolicyCheckView[]): string[] {
  const out: string[] = [];
  for (const c of checks) {
    const argv = c.command;
    const bindsFile = argv.slice(1).some(namesRelativeFile) || (argv[0] !== undefined && namesRelativeFile(argv[0]));
    if ((c.verifiers ?? []).length === 0 && !bindsFile) {
      out.push(`check "${c.name}" names no verifier file and declares no verifiers; its evidence binds no verifier bytes — declare spec.checks[].verifiers`);
    }
  }
  return out;
}

export function computePolicyStatus(policy: PolicyObj, policies: readonly PolicyObj[], rootExists: (name: string) => boolean, now: Date): PolicyControllerStatus {
  const prev = policy.status?.conditions?.filter((c) => c.type === ControllerConditions.Accepted);
  const checks = policy.spec.checks ?? [];
  const roots = policy.spec.roots;
  let verdict: { ok: boolean; r: (typeof Reasons)[keyof typeof Reasons]; message: string } = {
    ok: true,
    r: Reasons.PolicyAccepted,
    message: `${checks.length} check(s) required for ${roots.length} Root(s)`,
  };
  const missing = roots.filter((r) => !rootExists(r));
  const firstPrivate = checks.findIndex((c) => c.profile === 'private-evaluator-v1');
  const lateLegacy = firstPrivate >= 0 ? checks.slice(firstPrivate).find((c) => c.profile !== 'private-evaluator-v1') : undefined;
  const unverified = checks.find((c) => c.profile === 'private-evaluator-v1' && (c.verifiers ?? []).length === 0);
  const badExaminer = checks.find((c) => c.profile === 'private-evaluator-v1' && examinerCommandProblem(c.command) !== undefined);
  const unreadable = checks.find((c) => c.profile === 'private-evaluator-v1' && c.reportFormat !== undefined && !READABLE_REPORT_FORMATS.includes(c.reportFormat));
  const rival = policies
    .filter((p) => p.metadata.name !== policy.metadata.name && governsAny(p, roots))
    .sort(olderPolicyFirst)[0];
  if (missing.length > 0) {
    verdict = { ok: false, r: Reasons.PolicyRootNotFound, message: `Root ${missing.map((m) => `"${m}"`).join(', ')} does not exist` };
  } else if (lateLegacy) {
    verdict = { ok: false, r: Reasons.CheckProfileOrderInvalid, message: `check "${lateLegacy.name}" (legacy) follows a private-evaluator-v1 check; private checks must come after every legacy check` };
  } else if (unverified) {
    verdict = { ok: false, r: Reasons.PrivateCheckWithoutVerifiers, message: `private-evaluator-v1 check "${unverified.name}" must declare spec.checks[].verifiers` };
  } else if (badExaminer) {
    verdict = { ok: false, r: Reasons.PrivateExaminerInvalid, message: `private-evaluator-v1 check "${badExaminer.name}": ${String(examinerCommandProblem(badExaminer.command))}` };
  } else if (unreadable) {
    verdict = {
      ok: false,
      r: Reasons.ReportFormatUnsupported,
      message: `private-evaluator-v1 check "${unreadable.name}" asks for reportFormat ${String(unreadable.reportFormat)}, which no node-agent reads to a verdict (read: ${READABLE_REPORT_FORMATS.join(', ')}); its reports could never be admitted`,
    };
  } else if (rival && olderPolicyFirst(rival, policy) < 0) {
    const shared = rival.spec.roots.filter((r) => roots.includes(r));
    verdict = { ok: false, r: Reasons.PolicyRootConflict, message: `Policy "${rival.metadata.name ?? ''}" already governs Root ${shared.map((s) => `"${s}"`).join(', ')}` };
  }
  const conditions = setCondition(prev, { type: ControllerConditions.Accepted, status: verdict.ok ? 'True' : 'False', reason: verdict.r.reason, message: verdict.message }, policy.metadata.generation, now);
  return { conditions, warnings: checkWarnings(checks) };
}
