// worldline's native addon: the syscalls Node lacks, thin and errno-faithful. Every wrapper validates its
// arguments in TypeScript; every failed syscall throws an Error with code ('ENOENT'), errno (negative, as
// Node's fs errors) and syscall. Every fd the addon opens is O_CLOEXEC.
export * from './constants.js';
export {
  fanotifyOpen, fanotifyMarkFilesystem, fanotifyRead, fanotifyQueueLimit, openByHandle, resolveHandle, handleTarget, FAN_WATCH_MASK, FAN_MODIFY, FAN_ATTRIB, FAN_CLOSE_WRITE,
  FAN_MOVED_FROM, FAN_MOVED_TO, FAN_CREATE, FAN_DELETE, FAN_DELETE_SELF, FAN_MOVE_SELF, FAN_Q_OVERFLOW, FAN_ONDIR, type FanotifyEvent, type FanotifyBatch,
} from './fanotify.js';
export { loopAttach, loopDetach, copySparse } from './loop.js';
export { openat2, openBeneath, closeFd, forceBeneathFallback, statx, renameat2, fsyncPath, fsyncFd, syncPaths, lgetxattr, llistxattr } from './files.js';
export { mount, mountInCgroupNs, umount2, bindMount, mountOverlay, mountTmpfs, createUserNamespace, createMountTemplate, mountIdmapped, openDetachedTree } from './mounts.js';
export { spawnSandbox, spawnSupervisedSandbox, shimPath, pidfdOpen, pidfdSendSignal, watchPidfd, validateSandboxOptions, SandboxChannel, MAX_PROBE_PATHS } from './sandbox.js';
export { parseObservation, parseRecord, recordLength, observationProblems, SandboxSetupError, type ObservationRecord } from './observation.js';
export { nsIds } from './ns.js';
export { enterSandbox, enterOutcome, setWindowSize, pidfdKill, type EnterHandle, type EnterOptions } from './enter.js';
export { listenInNetns, socketNetnsId, peerCredentials, type NetnsTarget } from './netns.js';
export { NS_NAMES } from './types.js';
export type {
  BindMountOptions, FileType, IdMap, IdQuad, IdmappedMountOptions, NativeError, NsName, ObservationExpectation,
  FanotifyRecord, Openat2Options, OverlayOptions, PathState, SandboxExit, SandboxHandle, SandboxObservation, SandboxSpawnOptions, Statx, SupervisorOptions,
  TmpfsOptions,
} from './types.js';
