// The benchmarks' CPU accounting (test/bench/cpu-times.ts) reads real /proc counters: a busy loop of this
// process must show up in its own utime + stime, in its window and in the machine's busy time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CpuAccount, machineCpu, processCpuMs } from '../bench/cpu-times.js';

/** Spins until this process has used `ms` of CPU (process.cpuUsage, µs precision), however busy the machine is. */
function spin(ms: number): void {
  const from = process.cpuUsage();
  let x = 0;
  for (;;) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
    const used = process.cpuUsage(from);
    if ((used.user + used.system) / 1000 >= ms) break;
  }
  assert.ok(x > 0);
}

test('processCpuMs counts a busy loop of this process', () => {
  const before = processCpuMs(process.pid);
  spin(300);
  const used = processCpuMs(process.pid) - before;
  // Ticks of 10 ms at both ends, and whatever else this process's threads did meanwhile.
  assert.ok(used >= 270 && used <= 400, `300 ms of CPU read as ${used} ms`);
});

test('machineCpu counts CPUs and busy time', () => {
  const a = machineCpu();
  spin(200);
  const b = machineCpu();
  assert.ok(a.cpus >= 1, `${a.cpus} CPUs`);
  assert.ok(b.busyMs - a.busyMs >= 180, `the machine was busy ${b.busyMs - a.busyMs} ms while this process used 200 ms of CPU`);
});

test('CpuAccount averages windows per process and for the machine', () => {
  const account = new CpuAccount({ me: process.pid });
  for (let i = 0; i < 2; i++) {
    const end = account.begin();
    spin(250);
    end();
  }
  const r = account.result();
  assert.equal(r.windows, 2);
  assert.ok(r.perWindowMs.me! >= 230 && r.perWindowMs.me! <= 350, `me: ${r.perWindowMs.me} ms a window`);
  assert.ok(r.perWindowMs.bench! >= 250 && r.perWindowMs.bench! <= 350, `bench (process.cpuUsage): ${r.perWindowMs.bench} ms a window`);
  assert.ok(r.machineBusyMs >= 230, `machine: ${r.machineBusyMs} ms a window`);
  assert.ok(r.busyShare > 0 && r.busyShare <= 1.05, `busy share ${r.busyShare}`);
});
