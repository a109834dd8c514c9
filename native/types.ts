// Types of the worldline native addon: the public shapes (Statx, IdMap, mount and sandbox options,
// observation frames) and NativeBinding, the exact surface of worldline_native.node that index.ts wraps.

/** Error thrown by a failed syscall, shaped like Node's fs errors. `errno` is negative, as Node reports it. */
export interface NativeError extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
  dest?: string;
}

export type FileType = 'file' | 'dir' | 'symlink' | 'chr' | 'blk' | 'fifo' | 'sock' | 'unknown';

export interface Statx {
  type: FileType;
  /** st_mode including the file type bits. */
  mode: number;
  uid: number;
  gid: number;
  /** A bigint only when the size exceeds Number.MAX_SAFE_INTEGER. */
  size: number | bigint;
  nlink: number;
  ino: bigint;
  devMajor: number;
  devMinor: number;
  rdevMajor: number;
  rdevMinor: number;
  /** STATX_MNT_ID: the mount id as in /proc/self/mountinfo. */
  mntId: number;
  /** STATX_ATTR_MOUNT_ROOT: the path is the root of a mount; null when the kernel does not report it. */
  mountRoot: boolean | null;
  mtimeNs: bigint;
}

export interface Openat2Options {
  flags: number;
  mode?: number;
  resolve: number;
}

/** One row of a uid_map/gid_map: namespace ids inside..inside+count-1 are host ids outside..outside+count-1. */
export interface IdMap {
  inside: number;
  outside: number;
  count: number;
}

export interface BindMountOptions {
  readonly: boolean;
  recursive: boolean;
  nosuid?: boolean;
  nodev?: boolean;
  noexec?: boolean;
}

export interface OverlayOptions {
  /** Lower layers, topmost first, absolute. */
  lower: string[];
  /** The writable layer and its work directory; both absent: a read-only overlay of the lowers. */
  upper?: string;
  work?: string;
  /** Extra overlay options, "key" or "key=value" (e.g. "redirect_dir=on", "index=off"). */
  extra?: string[];
}

export interface TmpfsOptions {
  /** tmpfs size, e.g. "64m", "10%". */
  size?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  nosuid: boolean;
  nodev: boolean;
  noexec: boolean;
}

export interface IdmappedMountOptions {
  readonly: boolean;
  recursive: boolean;
}

export interface SandboxSpawnOptions {
  /** Absolute path of a fully prepared root directory tree (it needs /proc and cwd to exist). */
  rootfs: string;
  argv: string[];
  /** "KEY=VALUE" strings; PATH here resolves argv[0] when it has no '/'. */
  env: string[];
  /** Absolute path inside rootfs. */
  cwd: string;
  /** Namespace uid/gid the workload runs as; must be mapped by uidMap/gidMap. */
  uid: number;
  gid: number;
  /** Written by the parent; an outside range containing host id 0 is refused before cloning. */
  uidMap: IdMap[];
  gidMap: IdMap[];
  hostname: string;
  /** true: a new, empty network namespace (loopback up); false: the host's network namespace. */
  newNetwork: boolean;
  /** Absolute cgroup.procs paths (v1: one per controller; v2: one) the parent writes the pid into before
   * the child runs anything of the workload. */
  cgroupProcs: string[];
  /** Else the addon creates a pipe and returns its read end as `stdout` / `stderr`. */
  stdoutFd?: number;
  stderrFd?: number;
  /**
   * An fd of an existing user namespace (createUserNamespace) to clone the child into, instead of a new
   * one: its maps are the namespace's and are not written again (uidMap/gidMap are then what the caller
   * expects them to be). Supervised spawns only.
   */
  userns?: number;
  /**
   * An fd of a mount namespace made by createMountTemplate: the child's mount namespace is copied from a
   * private copy of it, with the rootfs tree moved in, instead of from the caller's whole mount table.
   * Supervised spawns only.
   */
  mountTemplate?: number;
  /** Absolute paths whose existence the child reports in its frame (`paths`), as the workload sees them. At most 16. */
  probePaths?: string[];
}

export interface SandboxHandle {
  /** Host pid (the world's pid 1). */
  pid: number;
  /** O_CLOEXEC pidfd; the caller closes it. */
  pidfd: number;
  stdout?: number;
  stderr?: number;
  /** Read end of the observation pipe: one observation frame (or error record), then EOF at execve. */
  observation: number;
  /** Write end of the ack pipe: write 'G' to let the workload exec; close without it to abort (exit 125). */
  ack: number;
  /** With a supervisor: the shim's pid (the workload's parent). onExit then reports the shim's end. */
  supervisorPid?: number;
}

/** The per-world supervisor spawnSandbox starts between the agent and the workload (native/src/shim/shim.c). */
export interface SupervisorOptions {
  /** The shim executable. */
  path: string;
  /** Its argv: [path, outputLog, outputLimitBytes, wallTimeMs, exitFile]. */
  argv: string[];
  /** cgroup.procs files the supervisor moves itself into before it clones the workload (out of the agent's). */
  cgroupProcs: string[];
}

export interface SandboxExit {
  /** Exit status (125: no go-ahead, 126: setup failed, 127: execve failed), or null when signalled. */
  code: number | null;
  signal: string | null;
  /** errno code if waitid itself failed (code and signal are then null). */
  waitError?: string;
}

export type NsName = 'user' | 'mnt' | 'pid' | 'net' | 'ipc' | 'uts' | 'cgroup';
export const NS_NAMES: readonly NsName[] = ['user', 'mnt', 'pid', 'net', 'ipc', 'uts', 'cgroup'];

export interface IdQuad {
  real: number;
  effective: number;
  saved: number;
  fs: number;
}

export interface SandboxObservation {
  uid: IdQuad;
  gid: IdQuad;
  groups: number[];
  noNewPrivs: number;
  seccomp: number;
  capInh: bigint;
  capPrm: bigint;
  capEff: bigint;
  capBnd: bigint;
  capAmb: bigint;
  uidMap: IdMap[];
  gidMap: IdMap[];
  setgroups: string;
  ns: Record<NsName, string>;
  /** uname(2) as the workload sees it (its persona included): sysname ("Linux") and machine ("x86_64"). */
  kernel: { sysname: string; machine: string };
  /** Every "Key:\tvalue" line of /proc/self/status, verbatim. */
  status: Record<string, string>;
  /** The environment the child hands to execve, KEY=VALUE entries in order (read from the envp it execs with). */
  environ: string[];
  /** Each probed path (SandboxSpawnOptions.probePaths) as the workload sees it: "present", "absent" (ENOENT) or "E<errno>". */
  paths: Record<string, PathState>;
}

export type PathState = 'present' | 'absent' | `E${number}`;

export interface ObservationExpectation {
  uid: number;
  gid: number;
  uidMap: IdMap[];
  gidMap: IdMap[];
  /** The agent's own namespace ids (nsIds('self')). */
  agentNs: Record<NsName, string>;
  /** Whether the sandbox was asked for a new network namespace; when false, net must equal the agent's. */
  newNetwork: boolean;
  /** The environment the spawn was given (KEY=VALUE, in order): the frame's environ must be exactly this. */
  env: string[];
}

export type NativeConstantName =
  | 'O_RDONLY' | 'O_WRONLY' | 'O_RDWR' | 'O_CREAT' | 'O_EXCL' | 'O_TRUNC' | 'O_APPEND' | 'O_NONBLOCK'
  | 'O_PATH' | 'O_DIRECTORY' | 'O_NOFOLLOW' | 'O_CLOEXEC' | 'O_NOCTTY' | 'O_TMPFILE'
  | 'RESOLVE_NO_XDEV' | 'RESOLVE_NO_MAGICLINKS' | 'RESOLVE_NO_SYMLINKS' | 'RESOLVE_BENEATH'
  | 'RESOLVE_IN_ROOT' | 'RESOLVE_CACHED'
  | 'AT_FDCWD' | 'AT_SYMLINK_NOFOLLOW' | 'AT_EMPTY_PATH' | 'AT_NO_AUTOMOUNT' | 'AT_RECURSIVE'
  | 'AT_STATX_SYNC_AS_STAT' | 'AT_STATX_FORCE_SYNC' | 'AT_STATX_DONT_SYNC'
  | 'RENAME_NOREPLACE' | 'RENAME_EXCHANGE' | 'RENAME_WHITEOUT'
  | 'MNT_FORCE' | 'MNT_DETACH' | 'MNT_EXPIRE' | 'UMOUNT_NOFOLLOW'
  | 'MS_RDONLY' | 'MS_NOSUID' | 'MS_NODEV' | 'MS_NOEXEC' | 'MS_REMOUNT' | 'MS_BIND' | 'MS_MOVE' | 'MS_REC'
  | 'MS_PRIVATE' | 'MS_SLAVE' | 'MS_SHARED' | 'MS_UNBINDABLE' | 'MS_NOSYMFOLLOW' | 'MS_NOATIME'
  | 'MS_RELATIME' | 'MS_STRICTATIME' | 'MS_SILENT'
  | 'MOUNT_ATTR_RDONLY' | 'MOUNT_ATTR_NOSUID' | 'MOUNT_ATTR_NODEV' | 'MOUNT_ATTR_NOEXEC'
  | 'MOUNT_ATTR_NOATIME' | 'MOUNT_ATTR_NODIRATIME' | 'MOUNT_ATTR_IDMAP' | 'MOUNT_ATTR_NOSYMFOLLOW';

/** One info record of a fanotify event. fsid/handleType/handle/name are present for the fid types (1, 2, 3, 10, 12). */
export interface FanotifyRecord {
  type: number;
  /** The filesystem id, "val0:val1" in hex. */
  fsid?: string;
  handleType?: number;
  handle?: Buffer;
  /** The entry name (DFID_NAME records; null for the others); "." when the event is on the directory itself. */
  name?: string | null;
}

/** The raw addon. Only index.ts calls it, after validating every argument. */
export interface NativeBinding {
  constants: Readonly<Record<NativeConstantName, number>>;
  openat2(dirfd: number, path: string, flags: number, mode: number, resolve: number): number;
  openBeneath(rootDirFd: number, relPath: string, flags: number, mode: number): number;
  forceBeneathFallback(on: boolean): void;
  statx(dirfd: number, path: string, flags: number): Statx;
  renameat2(olddirfd: number, oldpath: string, newdirfd: number, newpath: string, flags: number): void;
  fsyncPath(path: string): void;
  fsyncFd(fd: number): void;
  syncPaths(paths: string[]): Promise<void>;
  loopAttach(image: string, devDir: string, sysDir: string): string;
  loopDetach(device: string): void;
  copySparse(src: string, dst: string): number;
  closeFd(fd: number): void;
  lgetxattr(path: string, name: string): Buffer | null;
  llistxattr(path: string): string[];
  mount(source: string | null, target: string, fstype: string | null, flags: number, data: string | null): void;
  umount2(target: string, flags: number): void;
  mountInCgroupNs(nsPath: string, source: string | null, target: string, fstype: string | null, flags: number, data: string | null): void;
  cloneMount(source: string, target: string, recursive: boolean, attrSet: number, usernsFd: number): void;
  openDetachedTree(source: string): number;
  mountOverlay(target: string, lower: string[], upper: string, work: string, extra: string[], attrFlags: number): void;
  fsMount(fstype: string, source: string, target: string, options: string[], attrFlags: number): void;
  createUserNamespace(uidMap: IdMap[], gidMap: IdMap[]): number;
  createMountTemplate(base: string): number;
  spawnSandbox(opts: SandboxSpawnOptions, onExit: (r: SandboxExit) => void, supervisor?: SupervisorOptions): SandboxHandle;
  pidfdOpen(pid: number): number;
  pidfdSendSignal(pidfd: number, signo: number): boolean;
  watchPidfd(pidfd: number, onExit: (r: SandboxExit) => void): void;
  /** pidfd -1: the namespace of /proc/<pid>/ns/net; else setns(pidfd, CLONE_NEWNET). */
  listenInNetns(pid: number, pidfd: number, host: string, port: number, backlog: number): number;
  socketNetnsId(fd: number): string;
  peerCredentials(fd: number): { pid: number; uid: number; gid: number };
  fanotifyOpen(): number;
  fanotifyMarkFilesystem(fd: number, path: string): void;
  fanotifyRead(fd: number, enough: number): { events: { mask: number; pid: number; records: FanotifyRecord[] }[]; complete: boolean };
  openByHandle(mountFd: number, handleType: number, handle: Buffer, flags: number): number;
  handleInfo(mountFd: number, handleType: number, handle: Buffer): { link: string | null; nlink: number };
}
