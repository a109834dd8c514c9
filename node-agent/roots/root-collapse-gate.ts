// Whether a Collapse may commit into a Root, judged on the Root object (limit 18 of docs/security-model.md):
// the Collapse path consults the object, not only the store. A Root that is missing, being deleted, not
// Ready, or another object than the one the store's root was adopted for is refused by name. Fail closed:
// anything not positively Ready and bound is a refusal. Pure.

export interface GateRootView {
  metadata: { uid?: string; deletionTimestamp?: string };
  status?: { phase?: string; reason?: string };
}

export interface RootRefusal {
  code: 'ROOT_NOT_FOUND' | 'ROOT_RELEASING' | 'ROOT_NOT_READY' | 'ROOT_REPLACED';
  message: string;
}

/** undefined: the Collapse may go on into `name`; otherwise why not. `recordUid`: the store's root's object uid. */
export function rootCollapseRefusal(name: string, root: GateRootView | undefined, recordUid: string | null | undefined): RootRefusal | undefined {
  if (!root) return { code: 'ROOT_NOT_FOUND', message: `Root ${name} does not exist (on this node's view); nothing is committed into it` };
  if (root.metadata.deletionTimestamp) return { code: 'ROOT_RELEASING', message: `Root ${name} is being deleted (since ${root.metadata.deletionTimestamp}); nothing is committed into it` };
  const phase = root.status?.phase;
  if (phase !== 'Ready') {
    return { code: 'ROOT_NOT_READY', message: `Root ${name} is ${phase ?? 'without a phase'}${root.status?.reason ? ` (${root.status.reason})` : ''}, not Ready; nothing is committed into it` };
  }
  if (recordUid && root.metadata.uid !== recordUid) {
    return { code: 'ROOT_REPLACED', message: `Root ${name} is object uid ${root.metadata.uid ?? 'unknown'}, but the node store's root was adopted for uid ${recordUid}; nothing is committed into it` };
  }
  return undefined;
}
