// A loop device attached where /dev lacks its node: a privileged pod or a kind node holds a copy of /dev
// made when its container started, so a loop device the kernel creates later has no node there. attachLoop
// makes the node from sysfs's major:minor and attaches through it (loop-control's too, when the copy lacks
// it). Here the "container's /dev" is an empty directory of the test's own: the nodes made in it must be
// the kernel's devices (same rdev as sysfs says) and the image must be attached to the loop device
// (sysfs names the image as its backing file).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, ftruncateSync } from 'node:fs';
import { basename, join } from 'node:path';
import { attachLoop, detachLoop, listLoops } from '../../node-agent/sandbox/disk-loop.js';
import { requireRoot } from '../support/require-root.js';

requireRoot('the loop-device node test (loop devices, mknod)');
const dir = mkdtempSync(join('/var/tmp', 'wl-loopnode-'));
const attached: string[] = [];
after(async () => {
  for (const d of attached) {
    try {
      detachLoop(join('/dev', basename(d)));
    } catch {
      /* already detached */
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a loop device missing from /dev is made from sysfs and the image attached through it', async () => {
  const dev = join(dir, 'dev');
  mkdirSync(dev);
  const image = join(dir, 'disk.img');
  const fd = openSync(image, 'w');
  ftruncateSync(fd, 4 * 2 ** 20);
  closeSync(fd);

  const device = attachLoop(image, dev);
  attached.push(device);
  assert.equal(join(dev, basename(device)), device, 'attached through the node made in the given /dev');
  const st = statSync(device);
  assert.ok(st.isBlockDevice(), `${device} is a block device`);
  const [major, minor] = readFileSync(join('/sys/block', basename(device), 'dev'), 'utf8').trim().split(':').map(Number);
  assert.equal(Math.floor(st.rdev / 256) & 0xfff, major, 'major number as sysfs says');
  assert.equal((st.rdev & 0xff) | ((st.rdev >> 12) & 0xfff00), minor, 'minor number as sysfs says');
  const ctl = statSync(join(dev, 'loop-control'));
  assert.ok(ctl.isCharacterDevice(), 'loop-control was made as a character device');
  assert.equal(`${Math.floor(ctl.rdev / 256) & 0xfff}:${(ctl.rdev & 0xff) | ((ctl.rdev >> 12) & 0xfff00)}`, readFileSync('/sys/class/misc/loop-control/dev', 'utf8').trim(), 'loop-control is the kernel\'s');
  const loop = listLoops().find((l) => l.device === join('/dev', basename(device)));
  assert.ok(loop, `sysfs shows ${basename(device)} attached`);
  assert.equal(loop.backingFile, image, 'its backing file is the image');
});
