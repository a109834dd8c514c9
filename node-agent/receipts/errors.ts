// Named failures of the receipt ledger and its signing key. Every refusal carries a stable code.

export type ReceiptLedgerCode =
  | 'KEY_DIR_UNSAFE'
  | 'KEY_NOT_REGULAR_FILE'
  | 'KEY_PERMISSIONS_TOO_OPEN'
  | 'KEY_WRONG_OWNER'
  | 'KEY_INVALID'
  | 'LEDGER_NOT_REGULAR_FILE'
  | 'LEDGER_TORN_TAIL'
  | 'LEDGER_CORRUPT'
  | 'LEDGER_KEY_MISMATCH'
  | 'LEDGER_SIGNER_DISAGREES'
  | 'LEDGER_BUSY'
  | 'LEDGER_EXPORT_DIVERGED'
  | 'LEDGER_EXPORT_FAILED'
  | 'LEDGER_BROKEN'
  | 'LEDGER_CLOSED'
  | 'RECEIPTS_DIVERGED'
  | 'RECEIPTS_ROW_FAILED';

export class ReceiptLedgerError extends Error {
  constructor(
    readonly code: ReceiptLedgerCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'ReceiptLedgerError';
  }
}
