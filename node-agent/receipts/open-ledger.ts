// Where the node's receipts live in its store, and opening the ledger there: <store>/receipts/ledger.jsonl
// (the record), signed with the key in <store>/keys, each receipt also a row of the store database's
// `receipts` table, and mirrored to an export path when one is configured (--receipts-export).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../store/open-store.js';
import { ReceiptLedger } from './ledger.js';
import { PUBLIC_PEM_FILE } from './signing-key.js';

export interface ReceiptPaths {
  /** The receipts directory, <store>/receipts (0700). */
  readonly dir: string;
  /** The ledger file. */
  readonly ledger: string;
  /** The signing key's directory, <store>/keys (0700). */
  readonly keyDir: string;
  /** The public key (SPKI PEM) written next to the signing key. */
  readonly publicKeyPem: string;
}

export function receiptPaths(store: Pick<Store, 'dir'>): ReceiptPaths {
  const dir = join(store.dir, 'receipts');
  const keyDir = join(store.dir, 'keys');
  return { dir, ledger: join(dir, 'ledger.jsonl'), keyDir, publicKeyPem: join(keyDir, PUBLIC_PEM_FILE) };
}

export interface OpenCollapseLedgerOptions {
  /** An absolute path the ledger is mirrored to, line for line (its directory must exist). */
  readonly exportPath?: string;
}

/** Opens the node's receipt ledger (see the header); its refusals are ReceiptLedgerErrors. */
export function openCollapseLedger(store: Store, options: OpenCollapseLedgerOptions = {}): { ledger: ReceiptLedger; path: string; publicKeyPath: string } {
  const paths = receiptPaths(store);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const ledger = ReceiptLedger.open({
    path: paths.ledger,
    keyDir: paths.keyDir,
    db: store.db,
    now: store.now,
    ...(options.exportPath !== undefined ? { exportPath: options.exportPath } : {}),
  });
  return { ledger, path: paths.ledger, publicKeyPath: paths.publicKeyPem };
}
