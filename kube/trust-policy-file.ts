// Reading the trust policy file (core/evidence/trust-policy.ts) that the chart mounts from ConfigMap
// <release>-trust-policy into the controller and every node-agent. Read afresh at each use, so an edited
// revocation snapshot counts as soon as the kubelet brings it; bounded, strict JSON (no duplicate keys),
// then the closed schema. Any problem is one error naming the file and what is wrong.
import { readFileSync } from 'node:fs';
import { parseStrictJson, StrictJsonError } from '../core/evidence/strict-json.js';
import { TrustPolicySchema, type TrustPolicy } from '../core/evidence/trust-policy.js';

const MAX_POLICY_BYTES = 1 << 20;

export class TrustPolicyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrustPolicyFileError';
  }
}

export function readTrustPolicyFile(path: string): TrustPolicy {
  let parsed: unknown;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_POLICY_BYTES) throw new Error(`it has ${bytes.length} bytes, more than ${MAX_POLICY_BYTES}`);
    parsed = parseStrictJson(new TextDecoder('utf-8', { fatal: true }).decode(bytes), { maxLength: MAX_POLICY_BYTES, maxDepth: 8 });
  } catch (e) {
    throw new TrustPolicyFileError(`the trust policy ${path} cannot be read: ${e instanceof StrictJsonError ? `${e.code}: ` : ''}${(e as Error).message}`);
  }
  const policy = TrustPolicySchema.safeParse(parsed);
  if (!policy.success) throw new TrustPolicyFileError(`the trust policy ${path} is not valid: ${policy.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}`);
  return policy.data;
}
