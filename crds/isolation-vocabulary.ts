// The isolation vocabulary now lives with the containment contract in core/isolation/; the API re-exports
// the names it has always exported from here so that CRD schemas and their users see one vocabulary.
export {
  ISOLATION_LEVELS,
  ISOLATION_CONTROLS,
  INTRINSIC_CONTROLS,
  levelRank,
  levelAtLeast,
  maxLevel,
  canonicalControls,
  isIsolationLevel,
  isIsolationControl,
  type IsolationLevel,
  type IsolationControl,
} from '../core/isolation/vocabulary.js';
