// Identities of isolation records: `sha256:` of the record's canonical JSON. Records are closed and their
// lists canonical, so equal records have equal identities and any changed field changes the identity.
import { digestOf } from '../digest.js';
import type { IsolationRecord } from './records.js';

export function identityOf(record: IsolationRecord): string {
  return digestOf(record);
}
