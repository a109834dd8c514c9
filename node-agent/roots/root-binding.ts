// The binding of a store root to one Root object: the rule the node-agent applies on every reconcile before
// it serves a Root. The store's record of a root names the object it was adopted for (its uid) and the
// host path it came from. A Root object of that name with another path, or with another uid, is not the
// Root the store holds: it is refused by name and never reported Ready over the old directory. Pure.

/** What the rule reads of the store's record of the root of that name. */
export interface BindingRecordView {
  nodePath: string;
  /** null: recorded before the store kept uids (schema 10). */
  objectUid: string | null;
  /** The store's state of the root; Released: only its history is in the store (store/release-root.ts). */
  state?: string;
}

/** What the rule reads of the Root object. */
export interface BindingRootView {
  name: string;
  uid: string;
  path: string;
}

export type RootRecordBinding =
  /** No record of that name: adopt the directory for this object. */
  | { act: 'adopt' }
  /** The record is this object's. */
  | { act: 'serve' }
  /** A record from before uids were kept, at this object's path: record this object's uid once, then serve. */
  | { act: 'bind'; objectUid: string }
  /** The record is another Root's: refuse by name, touch nothing. */
  | { act: 'refuse'; code: 'ROOT_PATH_MISMATCH' | 'ROOT_REPLACED'; message: string };

/** Judges the store's record of `root.name` (undefined: none) against the Root object now reconciled. */
export function rootRecordBinding(record: BindingRecordView | undefined, root: BindingRootView): RootRecordBinding {
  // A released root is history: its directory is plain again, and any Root of the name adopts afresh.
  if (!record || record.state === 'Released') return { act: 'adopt' };
  const adoptedFor = record.objectUid ? `Root object uid ${record.objectUid}` : 'an earlier Root object';
  if (record.nodePath !== root.path) {
    return {
      act: 'refuse',
      code: 'ROOT_PATH_MISMATCH',
      message:
        `the node store holds root ${root.name} adopted from ${record.nodePath} (for ${adoptedFor}), but this Root (uid ${root.uid}) names ${root.path}; ` +
        `it is neither adopted nor served over ${record.nodePath}, which still routes through the store to its last PRIME: ` +
        `to manage ${root.path}, create the Root under another name`,
    };
  }
  if (record.objectUid === null) return { act: 'bind', objectUid: root.uid };
  if (record.objectUid !== root.uid) {
    return {
      act: 'refuse',
      code: 'ROOT_REPLACED',
      message:
        `the node store holds root ${root.name} at ${record.nodePath} adopted for Root object uid ${record.objectUid}, which was deleted or replaced; ` +
        `this Root is uid ${root.uid}, another object, and is not served over that directory or its history: ` +
        `${record.nodePath} still routes through the store with its last PRIME; to manage another directory create the Root under another name`,
    };
  }
  return { act: 'serve' };
}
