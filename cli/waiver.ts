// `worldline waiver keygen|sign`: the issuer's side of isolation waivers. keygen makes an Ed25519 key
// pair (the private key in a new 0600 PEM file, the public key printed as the hex a trust policy's signer
// rule takes); sign prints the DSSE envelope of a waiver for one World, to put in its
// spec.isolation.waiver. Verification and spending happen on the node (node-agent/evidence/).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../core/evidence/dsse.js';
import { IsolationWaiverSchema, worldRefSubject } from '../core/evidence/isolation-waiver.js';
import { PREDICATE_TYPES, statementBytes } from '../core/evidence/statement.js';
import { canonicalControls, isIsolationControl } from '../core/isolation/vocabulary.js';
import type { Output } from './receipts-verify.js';

export const WAIVER_USAGE = `usage: worldline waiver keygen --private-key FILE
       worldline waiver sign --key FILE --world NS/NAME --controls C[,C...] --reason TEXT
                             [--for DURATION | --not-after TIME] [--not-before TIME] [--node NODE] [--grant-id ID]

keygen  writes a new Ed25519 private key to FILE (PEM, mode 0600; an existing file is refused) and prints
        its public key as 64 hex characters, for a signer rule of the node's trust policy.
sign    prints the signed waiver (a DSSE envelope, one line of JSON) for World NS/NAME: it waives exactly
        the controls named, is valid from --not-before (default now) for --for (default 1h; s, m, h or d)
        or until --not-after, may be spent once, on --node only when given. Put it in the World's
        spec.isolation.waiver.
Exit status: 0 done; 2 usage or read error.
`;

const DURATION = /^([1-9][0-9]*)(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

function keygen(args: readonly string[], io: Output): number {
  const { values } = parseArgs({ args: [...args], options: { 'private-key': { type: 'string' } }, strict: true });
  const path = values['private-key'];
  if (!path) throw new Error('--private-key FILE is required');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  io.out(`${raw.toString('hex')}\n`);
  return 0;
}

function sign(args: readonly string[], io: Output, now: Date): number {
  const { values } = parseArgs({
    args: [...args],
    options: {
      key: { type: 'string' },
      world: { type: 'string' },
      controls: { type: 'string' },
      reason: { type: 'string' },
      for: { type: 'string' },
      'not-before': { type: 'string' },
      'not-after': { type: 'string' },
      node: { type: 'string' },
      'grant-id': { type: 'string' },
    },
    strict: true,
  });
  if (!values.key || !values.world || !values.controls || !values.reason) throw new Error('--key, --world, --controls and --reason are required');
  const [namespace, name, ...more] = values.world.split('/');
  if (!namespace || !name || more.length > 0) throw new Error(`--world must be NS/NAME, got ${JSON.stringify(values.world)}`);
  const controls = values.controls.split(',').map((c) => c.trim());
  const unknown = controls.filter((c) => !isIsolationControl(c));
  if (unknown.length > 0) throw new Error(`unknown control(s) ${unknown.join(', ')}`);
  if (values.for !== undefined && values['not-after'] !== undefined) throw new Error('give --for or --not-after, not both');
  const notBefore = values['not-before'] !== undefined ? new Date(values['not-before']) : now;
  let notAfter: Date;
  if (values['not-after'] !== undefined) notAfter = new Date(values['not-after']);
  else {
    const m = DURATION.exec(values.for ?? '1h');
    if (!m) throw new Error(`--for must be a duration such as 30m, 1h or 2d, got ${JSON.stringify(values.for)}`);
    notAfter = new Date(notBefore.getTime() + Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
  }
  if (Number.isNaN(notBefore.getTime()) || Number.isNaN(notAfter.getTime())) throw new Error('--not-before and --not-after must be RFC 3339 times');
  const waiver = IsolationWaiverSchema.safeParse({
    grantId: values['grant-id'] ?? `waiver-${randomBytes(12).toString('hex')}`,
    world: { namespace, name },
    ...(values.node !== undefined ? { node: values.node } : {}),
    stage: 'agent',
    waivedControls: canonicalControls(controls.filter(isIsolationControl)),
    notBefore: notBefore.toISOString(),
    notAfter: notAfter.toISOString(),
    reason: values.reason,
  });
  if (!waiver.success) throw new Error(`not a valid waiver: ${waiver.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}`);
  const payload = statementBytes(worldRefSubject(waiver.data.world), PREDICATE_TYPES.isolationWaiver, waiver.data);
  const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, { keyId: 'waiver-issuer', privateKey: readFileSync(values.key, 'utf8') });
  io.out(`${JSON.stringify(envelope)}\n`);
  return 0;
}

export function runWaiver(args: readonly string[], io: Output, now: Date = new Date()): number {
  const [sub, ...rest] = args;
  if (sub === undefined) {
    io.err(WAIVER_USAGE);
    return 2;
  }
  if (sub === '--help' || sub === '-h') {
    io.out(WAIVER_USAGE);
    return 0;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(WAIVER_USAGE);
    return 0;
  }
  try {
    if (sub === 'keygen') return keygen(rest, io);
    if (sub === 'sign') return sign(rest, io, now);
    io.err(`worldline waiver: unknown subcommand ${JSON.stringify(sub)}\n${WAIVER_USAGE}`);
    return 2;
  } catch (e) {
    io.err(`worldline waiver ${sub}: ${(e as Error).message}\n`);
    return 2;
  }
}
