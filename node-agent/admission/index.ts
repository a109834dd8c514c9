// The node's admission authority: policy (admission-policy, admission-host), the pure decision
// (admission-decide), measurement (observe-node) and the durable, locked authority (admission-authority).
export * from './admission-policy.js';
export * from './admission-host.js';
export * from './admission-decide.js';
export * from './observe-node.js';
export * from './admission-authority.js';
