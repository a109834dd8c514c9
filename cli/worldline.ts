#!/usr/bin/env node
// The `worldline` command: entry point and subcommand dispatch. Each subcommand lives in its own file.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runReceiptsVerify, type Output } from './receipts-verify.js';
import { runReceiptsVerifyStatus } from './receipts-verify-status.js';

export const USAGE = `usage: worldline <command> [options]

Commands:
  receipts verify --ledger FILE --public-key KEY
                  verify a signed receipt ledger: hash chain and every Ed25519 signature
  receipts verify-status --collapse FILE --public-key KEY [--ledger FILE]
                  verify the receipt a Collapse shows in its status (kubectl get collapse -o json)
  --help          show this help

Run 'worldline <command> --help' for a command's options.
`;

export function main(args: readonly string[], io: Output): number {
  const [first, second, ...rest] = args;
  if (first === undefined) {
    io.err(USAGE);
    return 2;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    io.out(USAGE);
    return 0;
  }
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
  const io: Output = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) };
  process.exitCode = main(process.argv.slice(2), io);
}
