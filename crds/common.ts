// The shared building blocks of the worldline API in one import: CEL-rule helpers (cel.ts), scalar
// schemas (scalars.ts), network and isolation schemas (network-isolation.ts), conditions, ObjectMeta and
// the CRD descriptor (meta.ts), signed statements (attestation.ts). The kinds (world.ts, root.ts, ...) import from here.
export * from './cel.js';
export * from './scalars.js';
export * from './network-isolation.js';
export * from './meta.js';
export * from './attestation.js';
