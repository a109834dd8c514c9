// Loop devices and sparse copies for run disks (src/loop.c): attaching an image is one LOOP_CONFIGURE in
// this process, not a losetup child, and a formatted template is copied extent by extent, holes kept.
import { binding } from './binding.js';
import * as v from './validate.js';

/**
 * Attaches `image` to a free loop device and returns its path under `devDir` (e.g. /dev/loop3). A node
 * missing from `devDir` (a container's copy of /dev) is made from sysfs: `sysDir`/block/loopN/dev, and
 * `sysDir`/class/misc/loop-control/dev for the control device; a device another attacher took first is
 * retried with the next free one (8 attempts). Throws errno errors.
 */
export function loopAttach(image: string, devDir = '/dev', sysDir = '/sys'): string {
  return binding.loopAttach(v.absolutePath('image', image), v.absolutePath('devDir', devDir), v.absolutePath('sysDir', sysDir));
}

/** LOOP_CLR_FD on `device` (a block device); one still held by a lazily unmounted filesystem clears itself later. */
export function loopDetach(device: string): void {
  binding.loopDetach(v.absolutePath('device', device));
}

/** Creates `dst` (O_EXCL, 0600) with `src`'s size and copies only src's data extents; returns the bytes copied. */
export function copySparse(src: string, dst: string): number {
  return binding.copySparse(v.absolutePath('src', src), v.absolutePath('dst', dst));
}
