// The containment contract's public surface: vocabulary, the four closed records, parsing, identities, the
// one evaluation and exact recomputation, and the records' JSON Schemas. Pure: no I/O anywhere below.
export * from './vocabulary.js';
export * from './reasons.js';
export { DIGEST_RE, TargetSchema, type IsolationTarget } from './fields.js';
export * from './records.js';
export * from './parse.js';
export * from './errors.js';
export { identityOf } from './identity.js';
export { evaluate } from './evaluate.js';
export { requireExactRecomputation } from './recompute.js';
export { isolationJsonSchemas, isolationSchemaFile, ISOLATION_SCHEMA_BASE } from './json-schema.js';
