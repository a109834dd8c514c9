// Loop devices for run disk images: attach an image (a free device from the kernel's LOOP_CTL_GET_FREE,
// its /dev node made when a container's copy of /dev lacks it, retried when another attacher wins it),
// list the attached devices with their backing files from sysfs, and detach. Subprocesses are argv arrays;
// the ones a World's run waits for are asynchronous, so one run's losetup never stalls the agent's others.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Refusal } from '../../core/errors.js';

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
    if (e.code === 'ENOENT') throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${what}: ${file} is not installed on the node (it comes with ${file === 'losetup' ? 'util-linux' : file === 'mknod' ? 'coreutils' : 'e2fsprogs'})`);
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${what}: ${file} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/**
 * Attaches `image` to a free loop device; returns the device path. In one step where it can
 * (`losetup --find --show`: one process, not two). Where that fails — /dev is a copy made when the
 * container started (a privileged pod, a kind node) and lacks the node the kernel just created, or another
 * attacher won the device — the free device is asked of the kernel (`losetup --find`, LOOP_CTL_GET_FREE)
 * and attached by name, its node made from sysfs's major:minor first when missing; a lost race is retried.
 */
export async function attachLoop(image: string, dev = '/dev', sysBlock = '/sys/block'): Promise<string> {
  if (dev === '/dev') {
    const shown = await tool('losetup', ['--find', '--show', '--', image], `attaching ${image}`).catch(() => undefined);
    if (shown !== undefined && /^\/dev\/loop[0-9]+$/.test(shown.trim())) return shown.trim();
    if (shown !== undefined) throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `losetup named "${shown.trim()}", not a loop device, for ${image}`);
  }
  let last = '';
  for (let attempt = 0; attempt < 8; attempt++) {
    const device = (await tool('losetup', ['--find'], `finding a free loop device for ${image}`)).trim();
    const m = /^\/dev\/(loop[0-9]+)$/.exec(device);
    if (!m) throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `losetup named "${device}", not a loop device, for ${image}`);
    const name = m[1]!;
    const path = join(dev, name);
    if (!existsSync(path)) await makeLoopNode(path, join(sysBlock, name, 'dev'));
    try {
      await tool('losetup', ['--', path, image], `attaching ${image} to ${path}`);
      return path;
    } catch (err) {
      last = (err as Error).message;
      if (!/busy/i.test(last)) throw err;
    }
  }
  throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `no loop device could be attached for ${image} after 8 attempts: ${last}`);
}

/** Makes the block device node of a loop device from its sysfs "major:minor". */
async function makeLoopNode(path: string, sysDev: string): Promise<void> {
  let majorMinor: string;
  try {
    majorMinor = readFileSync(sysDev, 'utf8').trim();
  } catch {
    throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${path} does not exist and ${sysDev} cannot be read to make it`);
  }
  const mm = /^([0-9]+):([0-9]+)$/.exec(majorMinor);
  if (!mm) throw new DiskError('EPHEMERAL_STORAGE_UNAVAILABLE', `${sysDev} holds "${majorMinor}", not major:minor`);
  try {
    await tool('mknod', ['-m', '0660', '--', path, 'b', mm[1]!, mm[2]!], `making ${path}`);
  } catch (err) {
    if (!existsSync(path)) throw err; // another attacher made it first: fine
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
 * Detaches a loop device (LOOP_CLR_FD through losetup -d), without blocking the event loop while losetup
 * runs (a run's teardown must not stall the agent's other runs). When a lazily unmounted filesystem still
 * holds it, the kernel marks it to detach itself when the last user goes (autoclear) and losetup succeeds.
 */
export async function detachLoop(device: string): Promise<void> {
  if (!/^\/dev\/loop[0-9]+$/.test(device)) throw new Error(`not a loop device: ${device}`);
  try {
    await run('losetup', ['--detach', device], { encoding: 'utf8', timeout: 30_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    throw new Error(`losetup --detach ${device} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** Detaches every loop device backed by a file below `dir`; returns the devices detached. */
export async function detachLoopsUnder(dir: string): Promise<string[]> {
  const done: string[] = [];
  for (const l of loopsUnder(dir)) {
    await detachLoop(l.device);
    done.push(l.device);
  }
  return done;
}
