// Collapse execution on the node: staging the next generation of a root and committing it atomically.
export { CollapseError, CollapseErrorCodes, isCollapseError, type CollapseErrorCode } from './collapse-errors.js';
export { COLLAPSE_INTENT_KIND, COLLAPSE_STEPS, type CollapseHooks, type CollapseIntent, type CollapseSetIntent, type CollapseStep } from './collapse-intent.js';
export { stageGeneration, readStoredDelta, type StagedGeneration, type StageOptions } from './stage-generation.js';
export { commitGeneration, commitGenerations, type BoundaryHashes, type CommitItem, type CommitOptions, type CommitResult, type ExpectedBase } from './commit-generation.js';
export { recoverCollapses, recoverCollapseIntent, type CollapseRecoveryOutcome } from './recover-collapses.js';
export { collapseRoot, collapseRoots, type CollapseRootRequest } from './collapse-root.js';
