// A fresh ext4 filesystem on a loop device, for tests that must be alone on their filesystem (the PRIME
// watcher marks a whole filesystem: anything else writing to it would be observed too).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as native from '../../native/index.js';

export const PATH_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };

export interface LoopExt4 {
  /** Where the filesystem is mounted (after mount()). */
  readonly mnt: string;
  /** Makes the image (256 MiB, 65,536 inodes), attaches it and mounts it nodev,nosuid; for before(). */
  mount(): void;
  /** Detaches everything mounted at or under mnt, the loop device, and removes the directory; for after(). */
  unmount(): void;
}

export function loopExt4(prefix: string): LoopExt4 {
  const dir = mkdtempSync(join('/var/tmp', prefix));
  const mnt = join(dir, 'mnt');
  let device = '';
  return {
    mnt,
    mount() {
      const image = join(dir, 'fs.img');
      writeFileSync(image, '');
      truncateSync(image, 256 * 2 ** 20);
      execFileSync('mkfs.ext4', ['-q', '-F', '-N', '65536', '--', image], { env: PATH_ENV });
      device = native.loopAttach(image);
      mkdirSync(mnt);
      native.mount(device, mnt, 'ext4', native.MS_NODEV | native.MS_NOSUID, '');
    },
    unmount() {
      if (device !== '') {
        execFileSync('umount', ['-R', '-l', mnt], { env: PATH_ENV });
        native.loopDetach(device);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
