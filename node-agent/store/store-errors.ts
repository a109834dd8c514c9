// Refusals and failures of the node store, each with a stable UPPER_SNAKE code.
import { Refusal } from '../../core/errors.js';

export const StoreErrorCodes = {
  /** Another process holds the store's lock (its SQLite database, opened exclusively). */
  STORE_LOCKED: 'STORE_LOCKED',
  /** A store directory is missing its expected shape (a link where a directory belongs, wrong owner). */
  STORE_LAYOUT_INVALID: 'STORE_LAYOUT_INVALID',
  /** The database's schema is newer than this agent understands. */
  STORE_SCHEMA_UNSUPPORTED: 'STORE_SCHEMA_UNSUPPORTED',
  ROOT_NAME_INVALID: 'ROOT_NAME_INVALID',
  ROOT_NOT_FOUND: 'ROOT_NOT_FOUND',
  /** The name is already adopted from another path, or the path is already adopted under another name. */
  ROOT_ALREADY_ADOPTED: 'ROOT_ALREADY_ADOPTED',
  ROOT_PATH_INVALID: 'ROOT_PATH_INVALID',
  ROOT_PATH_MISSING: 'ROOT_PATH_MISSING',
  ROOT_PATH_NOT_DIRECTORY: 'ROOT_PATH_NOT_DIRECTORY',
  /** The path is a symlink that does not route to this root's live mapping. */
  ROOT_PATH_IS_LINK: 'ROOT_PATH_IS_LINK',
  /** The path is a mount point, or the store lies inside it, or it inside the store. */
  ROOT_PATH_UNSUPPORTED: 'ROOT_PATH_UNSUPPORTED',
  /** The tree changed between the walk before the move and the walk after it; it was moved back. */
  ROOT_CHANGED_DURING_ADOPTION: 'ROOT_CHANGED_DURING_ADOPTION',
  EXTERNAL_SYMLINK: 'EXTERNAL_SYMLINK',
  EXTERNAL_HARDLINK: 'EXTERNAL_HARDLINK',
  SPECIAL_FILE: 'SPECIAL_FILE',
  /** A file name that is not valid UTF-8 and so cannot be named in a manifest. */
  UNSUPPORTED_NAME: 'UNSUPPORTED_NAME',
  /** An entry changed while it was being read. */
  CHANGED_DURING_WALK: 'CHANGED_DURING_WALK',
  /** The host path, the live mapping or the generation it names do not route to the recorded PRIME. */
  LIVE_MAPPING_BROKEN: 'LIVE_MAPPING_BROKEN',
  /** The Root is being released (its object deleted with spec.onDelete Release): nothing forks or commits into it. */
  ROOT_RELEASING: 'ROOT_RELEASING',
  /** The Root was released: PRIME is a plain directory at its host path again; only its history is in the store. */
  ROOT_RELEASED: 'ROOT_RELEASED',
  /** A release cannot go on: the host path holds something other than the live link, or the copy did not verify. */
  ROOT_RELEASE_BLOCKED: 'ROOT_RELEASE_BLOCKED',
  /** An owner's edit in their view cannot become a generation (a special file, a link leaving the Root, ...). */
  OWNER_EDIT_UNPUBLISHABLE: 'OWNER_EDIT_UNPUBLISHABLE',
  /** A generation's recorded entries do not digest to its recorded digest: the store's rows are not that generation. */
  GENERATION_ENTRIES_MISMATCH: 'GENERATION_ENTRIES_MISMATCH',
} as const;

export type StoreErrorCode = (typeof StoreErrorCodes)[keyof typeof StoreErrorCodes];

export class StoreError extends Refusal {
  constructor(
    override readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, `${code}: ${message}`, options);
    this.name = 'StoreError';
  }
}

export function isStoreError(e: unknown, code?: StoreErrorCode): e is StoreError {
  return e instanceof StoreError && (code === undefined || e.code === code);
}

/** The errno code of a Node system error, or undefined. */
export function errnoCode(e: unknown): string | undefined {
  if (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string') return e.code;
  return undefined;
}
