// Shared fixtures of the native kernel tests (run as root): temp dirs and mounts torn down in `after`
// hooks even on failure, a minimal sandbox rootfs, and a helper that runs one sandboxed command.
import { closeSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bindMount, MNT_DETACH, mountTmpfs, SandboxChannel, spawnSandbox, umount2,
  type IdMap, type SandboxExit, type SandboxHandle, type SandboxObservation, type SandboxSpawnOptions,
} from '../../native/index.js';

export const WORLD_MAP: IdMap[] = [{ inside: 0, outside: 200000, count: 65536 }];

/** Collects mounts, dirs and cleanup steps; run() undoes them in reverse and never throws. */
export class Cleanup {
  private readonly steps: (() => void)[] = [];

  add(step: () => void): void {
    this.steps.push(step);
  }

  mounted(target: string): string {
    this.add(() => umount2(target, MNT_DETACH));
    return target;
  }

  tempDir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), `wl-native-${prefix}-`));
    this.add(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  run(): void {
    while (this.steps.length > 0) {
      const step = this.steps.pop()!;
      try {
        step();
      } catch {
        // best effort: one failed step must not keep the others from running
      }
    }
  }
}

/**
 * A small root filesystem under base: /usr and /etc bound read-only (recursive, nosuid, nodev), /bin,
 * /lib, /lib64, /sbin as the host has them (symlinks on merged-/usr Debian, else read-only binds), a
 * tmpfs /tmp, /dev/{null,zero,urandom} bound, empty /proc and /work.
 */
export function buildRootfs(base: string, cleanup: Cleanup): string {
  const root = join(base, 'rootfs');
  for (const d of ['usr', 'etc', 'proc', 'tmp', 'dev', 'work']) mkdirSync(join(root, d), { recursive: true });
  const ro = { readonly: true, recursive: true, nosuid: true, nodev: true };
  for (const d of ['usr', 'etc']) {
    bindMount(`/${d}`, join(root, d), ro);
    cleanup.mounted(join(root, d));
  }
  for (const d of ['bin', 'lib', 'lib64', 'sbin']) {
    const host = `/${d}`;
    let st;
    try {
      st = lstatSync(host);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) {
      symlinkSync(readlinkSync(host), join(root, d));
    } else {
      mkdirSync(join(root, d));
      bindMount(host, join(root, d), ro);
      cleanup.mounted(join(root, d));
    }
  }
  mountTmpfs(join(root, 'tmp'), { size: '16m', mode: 0o1777, nosuid: true, nodev: true, noexec: false });
  cleanup.mounted(join(root, 'tmp'));
  for (const n of ['null', 'zero', 'urandom']) {
    writeFileSync(join(root, 'dev', n), '');
    bindMount(`/dev/${n}`, join(root, 'dev', n), { readonly: false, recursive: false, nosuid: true, noexec: true });
    cleanup.mounted(join(root, 'dev', n));
  }
  return root;
}

export function sandboxOptions(rootfs: string, script: string, extra: Partial<SandboxSpawnOptions> = {}): SandboxSpawnOptions {
  return {
    rootfs,
    argv: ['/bin/sh', '-c', script],
    env: ['PATH=/usr/bin:/bin', 'HOME=/tmp', 'LANG=C'],
    cwd: '/tmp',
    uid: 1000,
    gid: 1000,
    uidMap: WORLD_MAP,
    gidMap: WORLD_MAP,
    hostname: 'world',
    newNetwork: true,
    cgroupProcs: [],
    ...extra,
  };
}

/** Reads a pipe fd to EOF (and closes it). */
export function readAll(fd: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = new Socket({ fd, readable: true, writable: false });
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    s.on('error', reject);
  });
}

export interface Started {
  handle: SandboxHandle;
  channel: SandboxChannel;
  exited: Promise<SandboxExit>;
}

export function start(opts: SandboxSpawnOptions): Started {
  let resolveExit!: (r: SandboxExit) => void;
  const exited = new Promise<SandboxExit>((r) => (resolveExit = r));
  const handle = spawnSandbox(opts, resolveExit);
  return { handle, channel: new SandboxChannel(handle), exited };
}

export interface RunResult {
  observation: SandboxObservation;
  stdout: string;
  stderr: string;
  exit: SandboxExit;
  pid: number;
}

/** Spawns, reads the observation, lets it exec and collects its output and exit. */
export async function run(opts: SandboxSpawnOptions, timeoutMs = 20_000): Promise<RunResult> {
  const { handle, channel, exited } = start(opts);
  try {
    const out = handle.stdout === undefined ? Promise.resolve('') : readAll(handle.stdout);
    const err = handle.stderr === undefined ? Promise.resolve('') : readAll(handle.stderr);
    const observation = await channel.observe(timeoutMs);
    channel.go();
    await channel.started(timeoutMs);
    const [stdout, stderr, exit] = await Promise.all([out, err, exited]);
    return { observation, stdout, stderr, exit, pid: handle.pid };
  } finally {
    channel.close();
    closeQuietly(handle.pidfd);
  }
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
