// What the node-agent does for a Root object being deleted (metadata.deletionTimestamp set), by the rule
// below. Pure: the reconciler (root-reconciler.ts) reads the object and the store and acts on the answer.
//  - Without the release finalizer there is nothing of this agent's to do.
//  - A store record of another object (another uid), or none, is not this object's to release: let go.
//  - A record already Released: only the finalizer is left to drop.
//  - A record Releasing: a release began (the decision is recorded in the store) and is finished, whatever
//    spec.onDelete says now.
//  - spec.onDelete KeepAdopted: let go, the store and the host link untouched.
//  - Otherwise (Release, the default): release.

export type OnDelete = 'Release' | 'KeepAdopted';

export interface DeletionRecordView {
  objectUid: string | null;
  state: string;
}

export type RootDeletion = { act: 'none' } | { act: 'let-go'; why: string } | { act: 'release' };

export function rootDeletion(o: { uid: string; hasFinalizer: boolean; onDelete: OnDelete | undefined }, record: DeletionRecordView | undefined): RootDeletion {
  if (!o.hasFinalizer) return { act: 'none' };
  if (!record) return { act: 'let-go', why: 'the node store holds no root of this name; nothing to release' };
  if (record.objectUid !== null && record.objectUid !== o.uid) return { act: 'let-go', why: `the node store's root of this name was adopted for Root object uid ${record.objectUid}, not this one (${o.uid}); it is left as it is` };
  if (record.state === 'Released') return { act: 'let-go', why: 'the root was released' };
  if (record.state === 'Releasing') return { act: 'release' };
  if (o.onDelete === 'KeepAdopted') return { act: 'let-go', why: 'spec.onDelete is KeepAdopted: the directory stays adopted in the node store and its host path stays a link' };
  return { act: 'release' };
}
