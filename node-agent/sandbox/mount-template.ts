// The agent's mount template (native createMountTemplate): a mount namespace of three mounts that every
// sandboxed child's namespace is copied from, instead of from the agent's whole mount table (every
// running World's tree and every generation the store keeps mounted). Made on the first launch and kept
// for the agent's life; a failure to make it fails that launch, and the next one tries again.
import * as native from '../../native/index.js';

let template: number | undefined;

/** The template's fd. `base` is any existing directory (the template is built over it in a private copy of the agent's namespace). */
export function agentMountTemplate(base: string): number {
  template ??= native.createMountTemplate(base);
  return template;
}
