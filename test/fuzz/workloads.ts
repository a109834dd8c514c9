// Generated shell workloads for fuzzed Worlds that really run: each script strings together a few
// fragments of the kinds that have hurt the node-agent or could — exec at once, background children that
// outlive the shell, fork bursts against the pids limit, big output, writes everywhere, odd exit codes,
// signals to itself — and ends with one of several endings. Scripts are fixed text chosen by the seeded
// random source (argv for /bin/sh -c, no data interpolated from outside).
import type { SeededRandom } from './seeded-random.js';

const FRAGMENTS = [
  'sleep 1 &',
  '(sleep 3; echo late) &',
  'for i in 1 2 3 4 5 6 7 8; do sleep 2 & done',
  'i=0; while [ $i -lt 100 ]; do (true) & i=$((i+1)); done; wait',
  'for i in $(seq 1 200); do sleep 1 & done 2>/dev/null; true',
  'head -c 8000000 /dev/zero | tr "\\0" x',
  'yes fuzz | head -n 200000',
  'head -c 300000 /dev/urandom > big.bin',
  'for d in / /etc /usr /bin /tmp /root /proc /sys /dev "$PWD" "$HOME" /var/tmp; do echo fuzz > "$d/fuzz-write" 2>/dev/null; done; true',
  'mkdir -p a/b/c && echo deep > a/b/c/d.txt && ln -s a/b link 2>/dev/null; true',
  'rm -rf ./* 2>/dev/null; true',
  'cat /proc/self/status >/dev/null; ls -la / >/dev/null',
  'echo to-stderr 1>&2',
  'trap "" TERM; sleep 0.2',
  'mkfifo pipe 2>/dev/null; true',
  'ulimit -n 64 2>/dev/null; true',
];

const ENDINGS = [
  'exit 0',
  'exit 1',
  'exit 42',
  'exit 255',
  'kill -TERM $$',
  'kill -KILL $$',
  'kill -SEGV $$',
  'exec sleep 1',
  'sleep 2 & exec sleep 1',
  'exec true',
  'exec /usr/bin/env',
  'exec sh -c "exec false"',
  'wait',
  'true',
];

export function workloadScript(r: SeededRandom): string {
  const parts = Array.from({ length: r.int(0, 3) }, () => r.pick(FRAGMENTS));
  return [...parts, r.pick(ENDINGS)].join('\n');
}

/** The resources a workload World asks for: a pids limit that fork bursts run into, a short wall time. */
export function workloadResources(r: SeededRandom): Record<string, unknown> {
  return { pids: r.pick([16, 32, 64, 128]), wallTime: r.pick(['10s', '20s', '30s']), memory: r.pick(['128Mi', '256Mi']), outputBytes: r.pick(['2Mi', '20Mi', '64Mi']) };
}
