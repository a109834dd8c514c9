#!/usr/bin/env node
// `node dist/node-agent/evidence/provision-grant-store.js --store DIR`: provisions the grant store of a
// node store made before grant stores existed (a new node store gets one when it is made). It refuses a
// grant store that exists: provisioning never resets what was spent. Before provisioning one that was
// lost, revoke every grant that may have been spent on the node (the trust policy's revokedGrants).
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GrantError, GrantStore } from './grant-store.js';
import { layoutOf } from '../store/store-layout.js';

const { values } = parseArgs({ options: { store: { type: 'string' } }, strict: true });
const dir = values.store ?? '/var/lib/worldline';
const path = layoutOf(dir).grants;
try {
  GrantStore.provision(path).close();
  process.stdout.write(`provisioned ${join(path)}\n`);
} catch (e) {
  process.stderr.write(`provision-grant-store: ${e instanceof GrantError ? `${e.code}: ` : ''}${(e as Error).message}\n`);
  process.exitCode = 2;
}
