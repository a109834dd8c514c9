// The test control plane's ports come from outside the kernel's ephemeral range, so etcd and
// kube-apiserver, started again on their ports, never find one taken by an outgoing connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer } from 'node:net';
import { choosePorts, drawRange, ephemeralRange } from '../../scripts/controlplane/ports.js';

test('the ephemeral range is read as two numbers, and anything else is refused by name', () => {
  assert.deepEqual(ephemeralRange('32768\t60999\n'), [32768, 60999]);
  assert.throws(() => ephemeralRange('32768\n'), /ip_local_port_range reads "32768", not two port numbers/);
});

test('ports are drawn below the ephemeral range, else above it, else not at all', () => {
  assert.deepEqual(drawRange([32768, 60999]), [10_000, 32767]);
  assert.deepEqual(drawRange([1024, 60999]), [61000, 65535]);
  assert.equal(drawRange([1024, 65535]), undefined);
});

test("choosePorts picks free ports outside this host's ephemeral range, and keeps them while they stay free", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worldline-ports-'));
  try {
    const file = join(dir, 'ports.json');
    const [low, high] = ephemeralRange();
    const ports = await choosePorts(file);
    assert.equal(new Set(ports).size, 3, 'three distinct ports');
    for (const p of ports) assert.ok(p < low || p > high, `port ${p} is outside ${low}-${high}`);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), ports, 'recorded');
    assert.deepEqual(await choosePorts(file), ports, 'reused while free');

    // A recorded port inside the ephemeral range (an older record) is not reused.
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const client = connect((srv.address() as { port: number }).port, '127.0.0.1');
    await new Promise<void>((r) => client.once('connect', r));
    const ephemeral = client.localPort!;
    client.destroy();
    await new Promise<void>((r) => srv.close(() => r()));
    assert.ok(ephemeral >= low && ephemeral <= high, 'an outgoing connection was given a port from the range');
    writeFileSync(file, JSON.stringify([ephemeral, ports[1], ports[2]]));
    const again = await choosePorts(file);
    for (const p of again) assert.ok(p < low || p > high, `port ${p} is outside ${low}-${high}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
