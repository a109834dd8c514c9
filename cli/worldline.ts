#!/usr/bin/env node
// The `worldline` command: entry point and subcommand dispatch. Each subcommand lives in its own file.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runReceiptsVerify, type Output } from './receipts-verify.js';
import { runReceiptsVerifyStatus } from './receipts-verify-status.js';
import { runWorldView } from './world-view.js';
import { runWorldExec } from './world-exec.js';
import { runWaiver } from './waiver.js';
import { runEvidenceVerify } from './evidence-verify.js';

export const USAGE = `usage: worldline <command> [options]

Commands:
  logs WORLD [-n NS] [-f]
                  print what a World's agent wrote, through the Kubernetes API (-f: follow the run)
  diff WORLD [-n NS] [--stat | --name-only]
                  print a World's captured change against its base, through the Kubernetes API
  exec WORLD [-n NS] [-i] [-t] -- COMMAND [ARG...]
                  run a command inside a running World, through the Kubernetes API (recorded on the World)
  receipts verify --ledger FILE --public-key KEY
                  verify a signed receipt ledger: hash chain and every Ed25519 signature
  receipts verify-status --collapse FILE --public-key KEY [--ledger FILE]
                  verify the receipt a Collapse shows in its status (kubectl get collapse -o json)
  evidence verify --world FILE --trust-policy FILE
                  re-verify, offline, the signed isolation observation and decision on a World's status
  waiver keygen --private-key FILE
                  make an Ed25519 key pair for signing isolation waivers (prints the public key's hex)
  waiver sign --key FILE --world NS/NAME --controls C[,C...] --reason TEXT [--for 1h] [--node NODE]
                  print a signed isolation waiver for one World's spec.isolation.waiver (spent once)
  --help          show this help

Run 'worldline <command> --help' for a command's options. Installed as kubectl-worldline on the
PATH, the same commands run as 'kubectl worldline <command>'.
`;

export function main(args: readonly string[], io: Output & { write?: (chunk: Buffer) => Promise<void> }): number | Promise<number> {
  const [first, second, ...rest] = args;
  if (first === undefined) {
    io.err(USAGE);
    return 2;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    io.out(USAGE);
    return 0;
  }
  if (first === 'logs' || first === 'diff') {
    const write = io.write ?? ((chunk: Buffer) => Promise.resolve(io.out(chunk.toString('utf8'))));
    return runWorldView(first, [second, ...rest].filter((a): a is string => a !== undefined), { ...io, write });
  }
  if (first === 'exec') return runWorldExec([second, ...rest].filter((a): a is string => a !== undefined), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  if (first === 'evidence') {
    if (second === 'verify') return runEvidenceVerify(rest, io);
    io.err(`worldline evidence: unknown subcommand ${JSON.stringify(second ?? '')}\n${USAGE}`);
    return 2;
  }
  if (first === 'waiver') return runWaiver([second, ...rest].filter((a): a is string => a !== undefined), io);
  if (first === 'receipts') {
    if (second === 'verify') return runReceiptsVerify(rest, io);
    if (second === 'verify-status') return runReceiptsVerifyStatus(rest, io);
    if (second === undefined || second === '--help' || second === '-h') {
      io.out(USAGE);
      return second === undefined ? 2 : 0;
    }
    io.err(`worldline receipts: unknown subcommand ${JSON.stringify(second)}\n${USAGE}`);
    return 2;
  }
  io.err(`worldline: unknown command ${JSON.stringify(first)}\n${USAGE}`);
  return 2;
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  const io = {
    out: (t: string) => void process.stdout.write(t),
    err: (t: string) => void process.stderr.write(t),
    // Waits for stdout to drain, so a long diff piped to a pager is neither lost nor buffered whole.
    write: (chunk: Buffer) => new Promise<void>((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once('drain', resolve))),
  };
  void Promise.resolve(main(process.argv.slice(2), io)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`worldline: ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
