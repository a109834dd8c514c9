// docs/quickstart-kind.md, run as written: every ```sh block of the page, in order, in one bash process
// (`set -euo pipefail -x`, so the first failing command fails the test and the log shows each command) from
// the repository's root. What the page promises is then checked from outside: the Collapse committed, the
// worker's directory changed, the receipt verified, and the clean-up step left no cluster behind.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requireRoot } from '../support/require-root.js';
import { must, run } from './support/commands.js';
import { removeLeftoverClusters } from './support/kind-cluster.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const PAGE = join(repo, 'docs/quickstart-kind.md');

/** The page's ```sh blocks, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
}

void test('docs/quickstart-kind.md works as written, from building the pieces to cleaning up', async () => {
  requireRoot('the quick start (docker, kind nodes, host directories)');
  const blocks = shellBlocks(readFileSync(PAGE, 'utf8'));
  assert.ok(blocks.length >= 8, `the page has its ${blocks.length} shell blocks`);
  // The page starts from no cluster: one an interrupted run left (this page's, which already holds the
  // release the page installs, or the cluster tier's, which shares the page's host folders) goes first.
  for (const name of await removeLeftoverClusters(repo, ['worldline', process.env.WORLDLINE_E2E_CLUSTER ?? 'worldline-e2e'], 'kind-config/two-node.yaml')) {
    process.stderr.write(`# removed cluster ${name}, left by an interrupted run\n`);
  }
  const scratch = mkdtempSync(join(tmpdir(), 'worldline-quickstart-'));
  try {
    // The page's blocks, each marked in the log, then probes of what the page promised (before its last
    // block deletes the cluster, the probes run between the second-to-last block and the last).
    const probes = [
      'echo "PROBE collapse-phase=$(kubectl get collapse hello-collapse -o jsonpath={.status.phase})"',
      'echo "PROBE version=$(docker exec worldline-worker cat /srv/worldline/demo-repo/VERSION)"',
    ].join('\n');
    const body = blocks.map((b, i) => `echo "=== block ${i + 1}"\n${i === blocks.length - 1 ? `${probes}\n` : ''}${b}`).join('\n');
    const script = join(scratch, 'quickstart.sh');
    writeFileSync(script, `set -euo pipefail -x\n${body}\n`);
    const r = await run('bash', [script], { cwd: repo, timeoutMs: 3 * 3_600_000 });
    assert.equal(r.code, 0, `the quick start failed:\n${r.stderr.slice(-6000)}\n${r.stdout.slice(-3000)}`);
    assert.match(r.stdout, /^PROBE collapse-phase=Committed$/m, 'the Collapse committed');
    assert.match(r.stdout, /^PROBE version=2$/m, "the worker's directory has the candidate's VERSION");
    assert.match(r.stdout, /^implemented --shout; hello from the world, now at version 2$/m, "kubectl worldline logs printed the agent's output");
    assert.match(r.stdout, /^ \d+ paths? changed, \d+ insertions?\(\+\), \d+ deletions?\(-\)$/m, 'kubectl worldline diff --stat printed the change through the API server');
    assert.match(r.stdout, /^\+\+\+ b\/\S+\/VERSION$/m, 'kubectl worldline diff printed the VERSION hunk');
    assert.match(r.stdout, /^exec as uid 1000 in \/srv\/\S*demo-repo$/m, 'kubectl worldline exec ran inside the World as its agent\'s uid');
    assert.match(r.stdout, /^demo-repo\/REVIEWED$/m, "the exec's write is in the World's candidate");
    assert.match(r.stdout, /^kubernetes-admin ran \["sh","-c",.*\] \(exit 0\)$/m, 'the exec is recorded on the World');
    assert.match(r.stdout, /^HELLO, ADA!$/m, 'greet.sh --shout runs in the collapsed directory');
    assert.match(r.stdout, /^OK collapse default\/hello-collapse: receipt /m, 'worldline receipts verify-status verified the receipt');
    assert.match(r.stdout, /^worldline_admission_decisions_total\{stage="agent",outcome="ADMITTED"\} [1-9]/m, "the worker's agent counted the World's admission");
    const left = await must('docker', ['ps', '-a', '--filter', 'label=io.x-k8s.kind.cluster=worldline', '--format', '{{.Names}}']);
    assert.equal(left.trim(), '', 'the clean-up step left kind nodes behind');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
