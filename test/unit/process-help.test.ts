// `--help` on both processes prints their usage and exits 0 without a cluster, a store or root (an image's
// users run `docker run IMAGE worldline-controller --help` first).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '../..');

for (const [proc, name] of [['controller', 'worldline-controller'], ['node-agent', 'worldline-node-agent']] as const) {
  for (const flag of ['--help', '-h']) {
    void test(`${proc} ${flag} prints its usage and exits 0`, () => {
      const out = execFileSync(process.execPath, [join(dist, proc, 'main.js'), flag], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
      assert.match(out, new RegExp(`^usage: ${name} `));
      assert.match(out, /--kubeconfig PATH/);
    });
  }
}
