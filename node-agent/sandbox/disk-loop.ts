// Loop devices for run disk images: attach an image (a free device from the kernel's LOOP_CTL_GET_FREE,
// its /dev node made when a container's copy of /dev lacks it, retried when another attacher wins it),
// list the attached devices with their backing files from sysfs, and detach — the ioctls in this process
// (native/src/loop.c). The one tool left (mkfs.ext4, for a disk template) runs as an asynchronous argv
// child, so it never stalls the agent's other runs.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Refusal } from '../../core/errors.js';
import * as native from '../../native/index.js';

const run = promisify(execFile);

/** A run's ephemeral storage could not be set up or did not read back as requested. */
export class DiskError extends Refusal {
  constructor(override readonly code: 'EPHEMERAL_STORAGE_UNAVAILABLE' | 'EPHEMERAL_STORAGE_LIMIT_MISMATCH', message: string) {
    super(code, message);
    this.name = 'DiskError';
  }
}

export interface LoopDevice {
  /** e.g. /dev/loop3 */
  device: string;
  /** The backing file as the kernel names it, without the " (deleted)" suffix of an unlinked file. */
  backingFile: string;
  /** The backing file was unlinked while attached. */
  deleted: boolean;
}

/** Runs a tool; a missing tool or a failure is EPHEMERAL_STORAGE_UNAVAILABLE naming the tool and its stderr. */
export async function tool(file: string, args: readonly string[], what: string): Promise<string> {
  try {
    const { stdout } = await run(file, [...args], { encoding: 'utf8', timeout: 60_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
    return stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${what}: ${file} is not installed on the node (${file.startsWith('mkfs') ? 'it comes with e2fsprogs' : 'install it'})`);
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${what}: ${file} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/**
 * Attaches `image` to a free loop device; returns the device path. In this process (native loopAttach:
 * LOOP_CTL_GET_FREE, then one LOOP_CONFIGURE), not through a losetup child: spawning from the agent cost a
 * run ~20 ms where the ioctls take well under one. Where /dev is a copy made when the container started (a
 * privileged pod, a kind node) and lacks the node the kernel just created (or loop-control itself), the
 * node is made from sysfs's major:minor; a device another attacher won is retried with the next free one.
 */
export function attachLoop(image: string, dev = '/dev', sys = '/sys'): string {
  try {
    return native.loopAttach(image, dev, sys);
  } catch (err) {
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `attaching ${image} to a loop device: ${(err as Error).message}`);
  }
}

/** Every attached loop device and its backing file (from /sys/block/loopN/loop/backing_file). */
export function listLoops(sysBlock = '/sys/block'): LoopDevice[] {
  const out: LoopDevice[] = [];
  let names: string[];
  try {
    names = readdirSync(sysBlock);
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^loop[0-9]+$/.test(name)) continue;
    let text: string;
    try {
      text = readFileSync(join(sysBlock, name, 'loop', 'backing_file'), 'utf8').replace(/\n$/, '');
    } catch {
      continue; // not attached: sysfs has no loop/ directory for it
    }
    const deleted = text.endsWith(' (deleted)');
    out.push({ device: `/dev/${name}`, backingFile: deleted ? text.slice(0, -' (deleted)'.length) : text, deleted });
  }
  return out;
}

/** Loop devices whose backing file lies below `dir`. */
export function loopsUnder(dir: string, sysBlock?: string): LoopDevice[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return listLoops(sysBlock).filter((l) => l.backingFile.startsWith(prefix));
}

/**
 * Detaches a loop device (LOOP_CLR_FD, in this process). When a lazily unmounted filesystem still holds
 * it, the kernel marks it to detach itself when the last user goes (autoclear) and the call succeeds.
 */
export function detachLoop(device: string): void {
  if (!/^\/dev\/loop[0-9]+$/.test(device)) throw new Error(`not a loop device: ${device}`);
  try {
    native.loopDetach(device);
  } catch (err) {
    throw new Error(`detaching ${device} (LOOP_CLR_FD) failed: ${(err as Error).message}`);
  }
}

/** Detaches every loop device backed by a file below `dir`; returns the devices detached. */
export function detachLoopsUnder(dir: string): string[] {
  const done: string[] = [];
  for (const l of loopsUnder(dir)) {
    detachLoop(l.device);
    done.push(l.device);
  }
  return done;
}
