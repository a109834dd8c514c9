import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodePresence } from '../../controller/node-presence.js';
import type { LeaseObj } from '../../controller/caches.js';
import { NODE_LABEL } from '../../controller/reasons.js';
import { FakeClock } from '../support/fake-clock.js';

function lease(node: string, renew: Date, seconds: number): LeaseObj {
  return { metadata: { name: `agent-${node}`, labels: { [NODE_LABEL]: node } }, spec: { holderIdentity: node, renewTime: renew.toISOString(), leaseDurationSeconds: seconds } };
}

test('node presence: a renewal that changes nothing wakes nobody; arrival, silent expiry and deletion each wake the node once', async () => {
  const clock = new FakeClock();
  let leases: LeaseObj[] = [];
  const woken: string[] = [];
  const presence = new NodePresence(() => leases, clock, (node) => woken.push(node));

  presence.observe('n1'); // first decision: absent
  assert.deepEqual(woken, ['n1']);
  presence.observe('n1');
  assert.deepEqual(woken, ['n1'], 'still absent: no wake');

  leases = [lease('n1', clock.now(), 20), lease('n2', clock.now(), 20)];
  presence.observe('n1');
  assert.deepEqual(woken, ['n1', 'n1'], 'arrival wakes');

  // Renewals every 5 s for a minute: present throughout, nobody woken.
  for (let i = 0; i < 12; i++) {
    await clock.advance(5_000);
    leases = [lease('n1', clock.now(), 20), ...leases.slice(1)];
    presence.observe('n1');
  }
  assert.deepEqual(woken, ['n1', 'n1'], 'renewals wake nobody');

  // The agent stops renewing: no event arrives, yet its Worlds are woken once the Lease runs out.
  await clock.advance(19_000);
  assert.deepEqual(woken, ['n1', 'n1'], 'not before the expiry');
  await clock.advance(1_100);
  assert.deepEqual(woken, ['n1', 'n1', 'n1'], 'woken at the silent expiry');

  // Another node's Lease is its own: deleting it wakes only that node.
  leases = [lease('n2', clock.now(), 20)];
  presence.observe('n2');
  assert.deepEqual(woken.at(-1), 'n2');
  leases = [];
  await clock.advance(0);
  presence.observe('n2');
  assert.deepEqual(woken.filter((n) => n === 'n2').length, 2, 'deletion wakes n2');
  presence.stop();
  assert.equal(clock.pending(), 0, 'stop cancels the expiry re-checks');
});
