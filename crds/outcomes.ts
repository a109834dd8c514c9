// Stable, named outcomes and the phase/enum vocabularies of the worldline API. Outcome codes are
// UPPER_SNAKE strings that appear verbatim in `status.reason` (and related fields) and as metric labels;
// they never change meaning once released. Isolation decisions use the containment contract's
// lower-kebab words.

// ---- Named outcomes (DESIGN §3; these spellings are fixed) -------------------------------------------

export const ADMITTED = 'ADMITTED';
export const RESOURCES_UNAVAILABLE = 'RESOURCES_UNAVAILABLE';
export const RESOURCE_STATE_UNKNOWN = 'RESOURCE_STATE_UNKNOWN';
export const RESOURCE_POLICY_INVALID = 'RESOURCE_POLICY_INVALID';
export const RESOURCE_LIMIT_EXCEEDED = 'RESOURCE_LIMIT_EXCEEDED';
export const EXTERNAL_SYMLINK = 'EXTERNAL_SYMLINK';
export const EXTERNAL_HARDLINK = 'EXTERNAL_HARDLINK';
export const SPECIAL_FILE = 'SPECIAL_FILE';
export const LIVE_MAPPING_BROKEN = 'LIVE_MAPPING_BROKEN';
export const STORE_LOCKED = 'STORE_LOCKED';
export const EVIDENCE_STALE = 'EVIDENCE_STALE';
export const EVIDENCE_CONTEXT_INVALID = 'EVIDENCE_CONTEXT_INVALID';
export const EVIDENCE_CONTEXT_MISSING = 'EVIDENCE_CONTEXT_MISSING';
export const VERIFIER_MODIFIED_BY_CANDIDATE = 'VERIFIER_MODIFIED_BY_CANDIDATE';
export const STAGED_UNTESTED = 'STAGED_UNTESTED';
export const EXECUTION_EVIDENCE_INCOMPLETE = 'EXECUTION_EVIDENCE_INCOMPLETE';
export const VERIFIER_EXECUTION_IDENTITY_MISMATCH = 'VERIFIER_EXECUTION_IDENTITY_MISMATCH';
export const CONFLICT = 'CONFLICT';
export const FOREIGN_WRITE = 'FOREIGN_WRITE';
export const PRIME_MOVED = 'PRIME_MOVED';

/** Every outcome DESIGN §3 names, in the order it lists them. */
export const DESIGN_OUTCOMES = [
  ADMITTED,
  RESOURCES_UNAVAILABLE,
  RESOURCE_STATE_UNKNOWN,
  RESOURCE_POLICY_INVALID,
  RESOURCE_LIMIT_EXCEEDED,
  EXTERNAL_SYMLINK,
  EXTERNAL_HARDLINK,
  SPECIAL_FILE,
  LIVE_MAPPING_BROKEN,
  STORE_LOCKED,
  EVIDENCE_STALE,
  EVIDENCE_CONTEXT_INVALID,
  EVIDENCE_CONTEXT_MISSING,
  VERIFIER_MODIFIED_BY_CANDIDATE,
  STAGED_UNTESTED,
  EXECUTION_EVIDENCE_INCOMPLETE,
  VERIFIER_EXECUTION_IDENTITY_MISMATCH,
  CONFLICT,
  FOREIGN_WRITE,
  PRIME_MOVED,
] as const;

// ---- Additional outcomes used by the API layer (cross-object references, binding) --------------------

/** A World, Policy or Check names a Root that does not exist. */
export const ROOT_NOT_FOUND = 'ROOT_NOT_FOUND';
/** A referenced Root exists but is not in phase Ready. */
export const ROOT_NOT_READY = 'ROOT_NOT_READY';
/** A World's Roots are adopted on different nodes; a World binds to exactly one node. */
export const ROOTS_ON_DIFFERENT_NODES = 'ROOTS_ON_DIFFERENT_NODES';
/** A Check or Collapse names a World that does not exist in its namespace. */
export const WORLD_NOT_FOUND = 'WORLD_NOT_FOUND';
/** A Check or Collapse waits for its World to be bound to a node. */
export const WORLD_NOT_BOUND = 'WORLD_NOT_BOUND';
/** A Check or Collapse is bound (spec.worldUID) to a World that was replaced by another of the same name. */
export const WORLD_REPLACED = 'WORLD_REPLACED';
/** A Check or Collapse is bound (spec.worldUID) to a World that was deleted. */
export const WORLD_DELETED = 'WORLD_DELETED';
/** A Check or Collapse needs a captured candidate, and the World has none yet. */
export const CANDIDATE_MISSING = 'CANDIDATE_MISSING';
/** The isolation decision for a stage was not `reported-sufficient`. */
export const ISOLATION_INSUFFICIENT = 'ISOLATION_INSUFFICIENT';
/** A private-evaluator-v1 check is ordered before an ordinary check. */
export const CHECK_PROFILE_ORDER_INVALID = 'CHECK_PROFILE_ORDER_INVALID';
/** The World's credentials Secret or key could not be read. */
export const CREDENTIALS_UNAVAILABLE = 'CREDENTIALS_UNAVAILABLE';
/**
 * The stored object does not match its kind's schema (an older version's shape, a hand edit, a field of the
 * wrong type): it is refused at the informer, never cast, and the message names the field paths.
 */
export const OBJECT_SCHEMA_INVALID = 'OBJECT_SCHEMA_INVALID';

export const ADDITIONAL_OUTCOMES = [
  ROOT_NOT_FOUND,
  ROOT_NOT_READY,
  ROOTS_ON_DIFFERENT_NODES,
  WORLD_NOT_FOUND,
  WORLD_NOT_BOUND,
  WORLD_REPLACED,
  WORLD_DELETED,
  CANDIDATE_MISSING,
  ISOLATION_INSUFFICIENT,
  CHECK_PROFILE_ORDER_INVALID,
  CREDENTIALS_UNAVAILABLE,
  OBJECT_SCHEMA_INVALID,
] as const;

/** Every named outcome the API knows. */
export const OUTCOMES = [...DESIGN_OUTCOMES, ...ADDITIONAL_OUTCOMES] as const;
export type Outcome = (typeof OUTCOMES)[number];

export function isOutcome(v: unknown): v is Outcome {
  return typeof v === 'string' && (OUTCOMES as readonly string[]).includes(v);
}

/** Shape every outcome code (and any future one) must have; mirrored by the CRD `status.reason` pattern. */
export const OUTCOME_CODE_PATTERN = '^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$';

// ---- Isolation decisions (containment contract) -----------------------------------------------------

export const REPORTED_SUFFICIENT = 'reported-sufficient';
export const REJECTED = 'rejected';
export const UNSUPPORTED = 'unsupported';
export const ISOLATION_DECISIONS = [REPORTED_SUFFICIENT, REJECTED, UNSUPPORTED] as const;
export type IsolationDecisionOutcome = (typeof ISOLATION_DECISIONS)[number];

// ---- Phases and other enumerations --------------------------------------------------------------------

export const ROOT_PHASES = ['Adopting', 'Ready', 'Broken', 'Releasing'] as const;
export type RootPhase = (typeof ROOT_PHASES)[number];

export const WORLD_PHASES = ['Pending', 'Admitted', 'Running', 'Captured', 'Collapsed', 'Refused', 'Failed'] as const;
export type WorldPhase = (typeof WORLD_PHASES)[number];

export const CHECK_PHASES = ['Waiting', 'Pending', 'Running', 'Passed', 'Failed', 'Refused'] as const;
export type CheckPhase = (typeof CHECK_PHASES)[number];

export const CHECK_VERDICTS = ['PASS', 'FAIL', 'REFUSED'] as const;
export type CheckVerdict = (typeof CHECK_VERDICTS)[number];

export const COLLAPSE_PHASES = ['Waiting', 'Queued', 'Rebasing', 'Preparing', 'Authorized', 'Committed', 'Denied'] as const;
export type CollapsePhase = (typeof COLLAPSE_PHASES)[number];

export const COLLAPSE_MODES = ['Candidate', 'CheckpointReturn'] as const;
export type CollapseMode = (typeof COLLAPSE_MODES)[number];

export const TRANSACTION_STATES = ['PREPARED', 'AUTHORIZED', 'COMMITTED', 'DENIED'] as const;
export type TransactionState = (typeof TRANSACTION_STATES)[number];

export const NETWORK_POLICIES = ['None', 'Allowlist', 'Shared'] as const;
export type NetworkPolicy = (typeof NETWORK_POLICIES)[number];

export const CHECK_PROFILES = ['legacy', 'private-evaluator-v1'] as const;
export type CheckProfile = (typeof CHECK_PROFILES)[number];

export const CHECK_REPORT_FORMATS = ['junit', 'gnatprove', 'worldline-benchmark-v1'] as const;
export type CheckReportFormat = (typeof CHECK_REPORT_FORMATS)[number];

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

// ---- Condition types per kind ---------------------------------------------------------------------------
// Documentation constants (the schema accepts any well-formed type). Each type is owned by exactly one
// field manager: the controller owns Accepted (World, Root, Policy) and WorldFound (Check, Collapse);
// the node-agent owns the lifecycle types of the objects bound to its node.

export const WORLD_CONDITION_TYPES = ['Accepted', 'Admitted', 'Isolated', 'Running', 'Captured', 'ChecksPassed', 'Degraded', 'Collapsed', 'Ready'] as const;
export type WorldConditionType = (typeof WORLD_CONDITION_TYPES)[number];

export const ROOT_CONDITION_TYPES = ['Accepted', 'Adopted', 'PrimeConsistent', 'Ready'] as const;
export type RootConditionType = (typeof ROOT_CONDITION_TYPES)[number];

export const POLICY_CONDITION_TYPES = ['Accepted', 'Ready'] as const;
export type PolicyConditionType = (typeof POLICY_CONDITION_TYPES)[number];

export const CHECK_CONDITION_TYPES = ['WorldFound', 'Started', 'Completed', 'Passed'] as const;
export type CheckConditionType = (typeof CHECK_CONDITION_TYPES)[number];

export const COLLAPSE_CONDITION_TYPES = ['WorldFound', 'Prepared', 'Authorized', 'Committed', 'Ready'] as const;
export type CollapseConditionType = (typeof COLLAPSE_CONDITION_TYPES)[number];
