// Condition types, condition reasons (CamelCase) and status codes (UPPER_SNAKE) that the controller
// writes. One file, so dashboards and docs have a single list to follow.

/** Condition types the controller owns. The node-agent owns its own (Admitted, Isolated, Running, Captured). */
export const ControllerConditions = {
  Accepted: 'Accepted',
  WorldFound: 'WorldFound',
} as const;

/** Reasons on the controller's conditions, each paired with the code written to `status.reason`. */
export const Reasons = {
  /** A World's Roots all exist, are Ready and share one node: the World is bound to that node. */
  Bound: { reason: 'Bound', code: 'BOUND' },
  RootNotFound: { reason: 'RootNotFound', code: 'ROOT_NOT_FOUND' },
  RootNotReady: { reason: 'RootNotReady', code: 'ROOT_NOT_READY' },
  RootsOnDifferentNodes: { reason: 'RootsOnDifferentNodes', code: 'ROOTS_ON_DIFFERENT_NODES' },
  WaitingForNodeAgent: { reason: 'WaitingForNodeAgent', code: 'WAITING_FOR_NODE_AGENT' },
  NodeAgentPresent: { reason: 'NodeAgentPresent', code: 'NODE_AGENT_PRESENT' },
  /** A World's run ended with its candidate captured (phase Captured, or Collapsed afterwards): Ready is True. */
  CandidateCaptured: { reason: 'CandidateCaptured', code: 'CANDIDATE_CAPTURED' },
  WorldFound: { reason: 'WorldFound', code: 'WORLD_FOUND' },
  WorldNotFound: { reason: 'WorldNotFound', code: 'WORLD_NOT_FOUND' },
  WorldTerminating: { reason: 'WorldTerminating', code: 'WORLD_TERMINATING' },
  /** A Check or Collapse is bound (spec.worldUID) to a World that another World of the same name replaced. */
  WorldReplaced: { reason: 'WorldReplaced', code: 'WORLD_REPLACED' },
  /** A Check or Collapse is bound (spec.worldUID) to a World that was deleted. */
  WorldDeleted: { reason: 'WorldDeleted', code: 'WORLD_DELETED' },
  RootAccepted: { reason: 'RootAccepted', code: 'ROOT_ACCEPTED' },
  RootPathConflict: { reason: 'RootPathConflict', code: 'ROOT_PATH_CONFLICT' },
  PolicyAccepted: { reason: 'PolicyAccepted', code: 'POLICY_ACCEPTED' },
  PolicyRootNotFound: { reason: 'PolicyRootNotFound', code: 'POLICY_ROOT_NOT_FOUND' },
  PolicyRootConflict: { reason: 'PolicyRootConflict', code: 'POLICY_ROOT_CONFLICT' },
  CheckProfileOrderInvalid: { reason: 'CheckProfileOrderInvalid', code: 'CHECK_PROFILE_ORDER_INVALID' },
  PrivateCheckWithoutVerifiers: { reason: 'PrivateCheckWithoutVerifiers', code: 'PRIVATE_CHECK_WITHOUT_VERIFIERS' },
  PrivateExaminerInvalid: { reason: 'PrivateExaminerInvalid', code: 'PRIVATE_EXAMINER_INVALID' },
  ReportFormatUnsupported: { reason: 'ReportFormatUnsupported', code: 'REPORT_FORMAT_UNSUPPORTED' },
} as const;

export type ReasonName = keyof typeof Reasons;

export { COMPONENT_LABEL, NODE_CLEANUP_FINALIZER, NODE_LABEL } from '../crds/labels.js';
