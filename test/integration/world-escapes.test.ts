// Adversarial Worlds on a real stack (kube-apiserver + etcd, controller, node-agent as root): a workload
// that tries to read, write, link, mount, escalate, connect, linger or exhaust its way out of its world.
// Every attempt must fail, the failure must be visible in what the workload printed or in the World's
// status, and the host must be unchanged afterwards.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startStack, type Stack } from '../support/stack.js';
import { issuerKey, signerRule, signWaiver, writeTrustPolicy } from '../support/waivers.js';
import { createTestHostAddress } from '../support/test-host-address.js';
import { condition, kc } from '../support/wait.js';
import {
  applyRoot,
  describeRun,
  hashTree,
  hostProcesses,
  listTree,
  mountsBelow,
  outputLogPath,
  processesInRange,
  readWorldCgroupFile,
  runWorld,
  shWorld,
  worldCgroupExists,
  worldIdRange,
  worldManifest,
  type WorldResult,
} from '../support/worlds.js';

const OWNER = 1000;
const SECRET_VAR = 'WORLDLINE_TEST_SECRET';
const SECRET_VALUE = `agent-env-${randomBytes(12).toString('hex')}`;
const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const CANARY_PATH = `/tmp/worldline-escape-canary-${randomBytes(6).toString('hex')}.txt`;
/** keyctl(2)/add_key(2) numbers for the architectures we run on; the keyring test needs them. */
const KEY_SYSCALLS: Record<string, { addKey: number; keyctl: number }> = { x64: { addKey: 248, keyctl: 250 }, arm64: { addKey: 217, keyctl: 219 } };
const KEYS = KEY_SYSCALLS[process.arch];
const KEY_DESC = `worldline-test-key-${randomBytes(6).toString('hex')}`;
const KEY_SECRET = `keyring-secret-${randomBytes(12).toString('hex')}`;
/**
 * Starts the node-agent in a session keyring of its own holding one secret key, as a service manager
 * (systemd's KeyringMode=private, runc) would give it one; then execs node (same pid).
 */
const KEYRING_WRAPPER = KEYS
  ? [
      existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3',
      '-c',
      [
        'import ctypes, os, sys',
        'libc = ctypes.CDLL(None, use_errno=True)',
        `if libc.syscall(${KEYS.keyctl}, 1, b"worldline-test-agent-session") < 0: sys.exit("join_session_keyring: errno %d" % ctypes.get_errno())`,
        `if libc.syscall(${KEYS.addKey}, b"user", b"${KEY_DESC}", b"${KEY_SECRET}", ${KEY_SECRET.length}, -3) < 0: sys.exit("add_key: errno %d" % ctypes.get_errno())`,
        'os.execv(sys.argv[1], sys.argv[1:])',
      ].join('\n'),
    ]
  : undefined;
/** Host paths a world tries to create; none may exist before or after. */
const WRITE_TARGETS = ['/etc', '/usr', '/opt', '/usr/local'].map((d) => `${d}/worldline-escape-${randomBytes(4).toString('hex')}`).concat([`/worldline-escape-${randomBytes(4).toString('hex')}`]);

/** bash's /dev/tcp: prints CONNECTED or REFUSED (with bash's own error on stderr). */
function tcpProbe(host: string, port: number, label: string): string {
  return `bash -c 'exec 3<>/dev/tcp/${host}/${port} && echo "${label} CONNECTED" && echo hello-from-world >&3 || echo "${label} REFUSED"'`;
}

/** Whether this (host) process can open a TCP connection to host:port. */
function hostConnects(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const c = netConnect(port, host);
    c.on('connect', () => {
      c.end();
      resolve('connected');
    });
    c.on('error', (e: Error & { code?: string }) => resolve(e.code ?? 'error'));
  });
}

/** Runs `python3 -c` inside the world (the host's /usr/bin/python3, bound read-only). */
function py(code: string): string {
  return `python3 -c '${code.replace(/'/g, `'"'"'`)}'`;
}

/** A server on the host (TCP on loopback, or an abstract unix socket) that records what each connection sent. */
async function recordingServer(listen: { port: 0; host: string } | { path: string }): Promise<{ server: Server; port: number; received: string[]; connections: () => number }> {
  const received: string[] = [];
  let connections = 0;
  const server = createServer((sock: Socket) => {
    connections++;
    let data = '';
    sock.on('data', (b: Buffer) => (data += b.toString()));
    sock.on('close', () => received.push(data));
    sock.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(listen, r));
  const addr = server.address();
  return { server, port: addr !== null && typeof addr === 'object' ? addr.port : 0, received, connections: () => connections };
}

/** Polls `fn` every `everyMs` until the World reaches a final phase; returns the World and the samples. */
async function sampleWhileRunning<T>(s: Stack, name: string, fn: () => T, everyMs = 50, timeoutMs = 60_000): Promise<{ world: Record<string, any>; samples: T[] }> {
  const samples: T[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    samples.push(fn());
    const w = await s.get('world', name, 'default');
    if (['Captured', 'Failed', 'Refused'].includes(w?.status?.phase)) return { world: w!, samples };
    if (Date.now() > deadline) throw new Error(`World ${name} did not end within ${timeoutMs} ms: ${JSON.stringify(w?.status)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const WAIVER_ISSUER = issuerKey();
const TRUST_POLICY = join(tmpdir(), `worldline-escape-trust-${process.pid}.json`);

describe('escape attempts from a world on a real stack', () => {
  let s: Stack;
  let projPath: string;
  let hostBefore: string;

  before(async () => {
    process.env[SECRET_VAR] = SECRET_VALUE; // inherited by the node-agent started below
    writeFileSync(CANARY_PATH, `${CANARY}\n`, { mode: 0o644 });
    for (const t of WRITE_TARGETS) assert.ok(!existsSync(t), `${t} exists before the test`);
    // The node trusts one waiver issuer: the Shared World below runs under its waiver.
    writeTrustPolicy(TRUST_POLICY, [signerRule('escape-tests', WAIVER_ISSUER)]);
    s = await startStack({ nodeName: 'escape-node', agentArgs: ['--trust-policy', TRUST_POLICY], ...(KEYRING_WRAPPER ? { agentWrapper: KEYRING_WRAPPER } : {}) });
    projPath = join(s.scratch, 'proj');
    mkdirSync(projPath, { mode: 0o755 });
    writeFileSync(join(projPath, 'a.txt'), 'alpha\n');
    chownSync(projPath, OWNER, OWNER);
    chownSync(join(projPath, 'a.txt'), OWNER, OWNER);
    writeFileSync(join(s.scratch, 'sibling-canary.txt'), `${CANARY}\n`);
    const root = await applyRoot(s, 'proj', projPath);
    assert.equal(root.status.phase, 'Ready', JSON.stringify(root.status));
    hostBefore = hashTree(projPath);
  });

  after(async () => {
    await s?.stop();
    rmSync(CANARY_PATH, { force: true });
    rmSync(TRUST_POLICY, { force: true });
    delete process.env[SECRET_VAR];
  });

  /**
   * After every attack: no process of the world is left on the host, and — once the node-agent's teardown,
   * which follows the final status, is done — no mount, world directory or cgroup; PRIME is unchanged.
   */
  async function assertNoTrace(r: WorldResult): Promise<void> {
    const range = worldIdRange(r.status);
    assert.deepEqual(processesInRange(range).map((p) => `${p.pid} ${p.cmdline.join(' ')}`), [], 'processes of the ended world survive on the host');
    const worldDir = join(s.storeDir, 'worlds', r.uid);
    await s.waitFor(`teardown of World ${r.world.metadata.name}`, async () => mountsBelow(worldDir).length === 0 && !existsSync(worldDir) && !worldCgroupExists(r.uid), 10_000).catch(() => {
      assert.fail(`the ended world left mounts ${JSON.stringify(mountsBelow(worldDir))}, directory ${existsSync(worldDir)}, cgroup ${worldCgroupExists(r.uid)}`);
    });
    assert.equal(hashTree(projPath), hostBefore, 'the Root\'s host path (PRIME) changed');
  }

  describe('the host filesystem', () => {
    test('a canary file outside the roots cannot be read, nor can the store or the Root\'s real neighbours', async () => {
      assert.equal(readFileSync(CANARY_PATH, 'utf8'), `${CANARY}\n`, 'the canary is readable on the host');
      const shadowLines = readFileSync('/etc/shadow', 'utf8').split('\n').filter((l) => l.trim() !== '');
      assert.ok(shadowLines.length > 0, 'the host\'s /etc/shadow is empty: the leak check below would prove nothing');
      const r = await runWorld(s, 'read-canary', shWorld(['proj'], [
        `cat ${CANARY_PATH} || echo CANARY-UNREADABLE`,
        `cat ${join(s.scratch, 'sibling-canary.txt')} || echo SIBLING-UNREADABLE`,
        `ls ${s.storeDir} || echo STORE-ABSENT`,
        `echo "NEIGHBOURS=$(ls -A ${s.scratch} | tr "\\n" " ")"`,
        'cat /etc/shadow || echo SHADOW-UNREADABLE',
        'ls /sys >/dev/null 2>&1 && echo SYS-PRESENT || echo SYS-ABSENT',
        'echo END',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.match(r.output, /^END$/m, 'the probe did not run to its end');
      assert.ok(!r.output.includes(CANARY), `the canary leaked into the world:\n${r.output}`);
      for (const m of ['CANARY-UNREADABLE', 'SIBLING-UNREADABLE', 'STORE-ABSENT', 'SHADOW-UNREADABLE', 'SYS-ABSENT']) assert.match(r.output, new RegExp(`^${m}$`, 'm'), `${m} missing:\n${r.output}`);
      assert.match(r.output, /^NEIGHBOURS=proj $/m, 'the Root\'s host parent directory is visible in the world');
      for (const line of shadowLines) assert.ok(!r.output.includes(line), `/etc/shadow content leaked: ${line.split(':')[0] ?? ''}`);
      await assertNoTrace(r);
    });

    test('writes outside the world fail (read-only /etc, /usr, /opt and root) and the host is unchanged', async () => {
      const script = WRITE_TARGETS.map((t) => `(echo x > ${t}) 2>/dev/null && echo "WROTE ${t}" || echo "DENIED ${t}"`)
        .concat([
          '(echo x > /proc/sys/kernel/hostname) 2>/dev/null && echo "WROTE sysctl" || echo "DENIED sysctl"',
          '(mkdir /newdir) 2>/dev/null && echo "WROTE mkdir" || echo "DENIED mkdir"',
          '(touch /etc/passwd) 2>/dev/null && echo "WROTE passwd" || echo "DENIED passwd"',
          'for m in / /usr /etc /opt; do echo "MOUNTOPTS $m $(awk -v m=$m \'$2 == m { print $4 }\' /proc/mounts)"; done',
        ])
        .join('\n');
      const passwd = hashTree('/etc/passwd');
      const r = await runWorld(s, 'write-outside', shWorld(['proj'], script));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.doesNotMatch(r.output, /^WROTE/m, r.output);
      assert.equal((r.output.match(/^DENIED /gm) ?? []).length, WRITE_TARGETS.length + 3, r.output);
      const bound = ['/usr', '/etc', '/opt'].filter((d) => existsSync(d) && lstatSync(d).isDirectory());
      for (const m of ['/', ...bound]) assert.match(r.output, new RegExp(`^MOUNTOPTS ${m} ro,`, 'm'), `${m} is not mounted read-only in the world:\n${r.output}`);
      for (const t of WRITE_TARGETS) assert.ok(!existsSync(t), `${t} was created on the host`);
      assert.ok(!existsSync('/newdir'));
      assert.equal(hashTree('/etc/passwd'), passwd, '/etc/passwd changed');
      assert.deepEqual([r.status.candidate.added, r.status.candidate.modified, r.status.candidate.deleted], [0, 0, 0]);
      await assertNoTrace(r);
    });

    test('escaping symlinks the agent creates make capture refuse with EXTERNAL_SYMLINK; no candidate is stored', async () => {
      const attacks: [string, string][] = [
        ['ln-absolute', 'ln -s /etc/shadow leak'],
        ['ln-dotdot', 'ln -s ../../.. up'],
        // See plant-name-dotdot: lexically inside, resolved by the kernel to the Root's parent directory.
        ['ln-name-dotdot', 'mkdir -p a/b && ln -s .. a/b/x && ln -s x/../.. a/b/y && echo "RESOLVES=$(readlink -f a/b/y)"'],
      ];
      for (const [name, script] of attacks) {
        const candidates = listTree(join(s.storeDir, 'candidates'));
        const r = await runWorld(s, name, shWorld(['proj'], `${script} && echo PLANTED`));
        assert.match(r.output, /^PLANTED$/m, `${name}: the link was not even created:\n${r.output}`);
        if (name === 'ln-name-dotdot') assert.match(r.output, new RegExp(`^RESOLVES=${dirname(projPath)}$`, 'm'), 'the link does not escape as intended');
        assert.equal(r.status.phase, 'Failed', `${name}: ${describeRun(r)}`);
        assert.equal(r.status.reason, 'EXTERNAL_SYMLINK', `${name}: ${describeRun(r)}`);
        assert.equal(r.status.exit.code, 0, 'the agent itself completed');
        assert.equal(r.status.candidate, undefined, `${name}: a candidate was recorded`);
        assert.deepEqual(listTree(join(s.storeDir, 'candidates')), candidates, `${name}: candidate storage changed`);
        await assertNoTrace(r);
      }
    });

    test('a special file the agent creates (a fifo) makes capture refuse with SPECIAL_FILE; no candidate is stored', async () => {
      const candidates = listTree(join(s.storeDir, 'candidates'));
      // The World shows what it made (a fifo, mode 0600) before capture judges it.
      const r = await runWorld(s, 'mkfifo', shWorld(['proj'], "mkfifo -m 0600 pipe && stat -c 'KIND=%F MODE=%a' pipe && echo MADE"));
      assert.match(r.output, /^KIND=fifo MODE=600$/m, `the fifo was not made as intended:\n${r.output}`);
      assert.match(r.output, /^MADE$/m);
      assert.equal(r.status.phase, 'Failed', describeRun(r));
      assert.equal(r.status.reason, 'SPECIAL_FILE', describeRun(r));
      assert.match(r.status.message, /\bpipe\b/, `the refusal names the fifo: ${describeRun(r)}`);
      assert.equal(r.status.exit.code, 0, 'the agent itself completed');
      assert.equal(r.status.candidate, undefined, 'a candidate was recorded');
      assert.deepEqual(listTree(join(s.storeDir, 'candidates')), candidates, 'candidate storage changed');
      assert.ok(!existsSync(join(projPath, 'pipe')), 'the fifo reached the Root\'s host path');
      await assertNoTrace(r);
    });

    test('a hardlink to a host file fails (EXDEV), and so does a device node (EPERM)', async () => {
      const r = await runWorld(s, 'links-and-nodes', shWorld(['proj'], [
        'ln /etc/passwd passwd-hl 2>&1 || echo HL-ETC-FAILED',
        'ln /usr/bin/sh sh-hl 2>&1 || echo HL-USR-FAILED',
        'ln a.txt /tmp/a-hl 2>&1 || echo HL-OUT-FAILED',
        'mknod mem c 1 1 2>&1 || echo MKNOD-CHAR-FAILED',
        'mknod /tmp/blk b 7 0 2>&1 || echo MKNOD-BLOCK-FAILED',
        py('import os\ntry:\n  os.mknod("null2", 0o666 | 0o020000, os.makedev(1, 3)); print("MKNOD-OK")\nexcept OSError as e: print("MKNOD-ERRNO", e.errno)'),
        'ls -A',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      for (const m of ['HL-ETC-FAILED', 'HL-USR-FAILED', 'HL-OUT-FAILED', 'MKNOD-CHAR-FAILED', 'MKNOD-BLOCK-FAILED']) assert.match(r.output, new RegExp(`^${m}$`, 'm'), `${m} missing:\n${r.output}`);
      assert.match(r.output, /Invalid cross-device link/, 'a hardlink failed for another reason than EXDEV');
      assert.match(r.output, /^MKNOD-ERRNO 1$/m, 'mknod did not fail with EPERM');
      assert.doesNotMatch(r.output, /^(passwd-hl|sh-hl|mem|null2)$/m, 'a link or node was created in the Root');
      assert.deepEqual([r.status.candidate.added, r.status.candidate.modified, r.status.candidate.deleted], [0, 0, 0]);
      await assertNoTrace(r);
    });
  });

  describe('privileges', () => {
    test('mounting anything and unmounting the world\'s mounts fail', async () => {
      const r = await runWorld(s, 'mount', shWorld(['proj'], [
        'mount -t tmpfs x /tmp 2>&1; echo "MOUNT-RC=$?"',
        py([
          'import ctypes, os',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'def e(r): return 0 if r == 0 else ctypes.get_errno()',
          'print("SYS-MOUNT", e(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))',
          'print("SYS-REMOUNT", e(libc.mount(None, b"/", None, 32 | 4096, None)))', // MS_REMOUNT|MS_BIND, rw
          'print("SYS-UMOUNT", e(libc.umount2(b"/usr", 2)))',
          'print("SYS-BIND", e(libc.mount(b"/etc", b"/tmp", None, 4096, None)))',
        ].join('\n')),
        'echo "TMPFS-ON-TMP=$(grep -c " /tmp tmpfs" /proc/mounts)"',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.match(r.output, /^MOUNT-RC=(?!0$)\d+$/m, 'mount(8) succeeded');
      for (const k of ['SYS-MOUNT', 'SYS-REMOUNT', 'SYS-UMOUNT', 'SYS-BIND']) assert.match(r.output, new RegExp(`^${k} 1$`, 'm'), `${k} did not fail with EPERM:\n${r.output}`);
      assert.match(r.output, /^TMPFS-ON-TMP=1$/m, 'a second tmpfs appeared on /tmp');
      await assertNoTrace(r);
    });

    test('no nested user namespace (unshare -U fails), so no route to a namespace where the agent is root', async () => {
      const r = await runWorld(s, 'unshare', shWorld(['proj'], [
        'unshare -U true 2>&1; echo "UNSHARE-U=$?"',
        'unshare -Ur id -u 2>&1; echo "UNSHARE-UR=$?"',
        'unshare -m true 2>&1; echo "UNSHARE-M=$?"',
        'echo "MAXUSERNS=$(cat /proc/sys/user/max_user_namespaces)"',
        py('import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint("SYS-UNSHARE-USER", ctypes.get_errno() if libc.unshare(0x10000000) else 0)'),
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.match(r.output, /^UNSHARE-U=(?!0$)\d+$/m, 'unshare -U succeeded');
      assert.match(r.output, /^UNSHARE-UR=(?!0$)\d+$/m, 'unshare -Ur succeeded');
      assert.match(r.output, /^UNSHARE-M=(?!0$)\d+$/m, 'unshare -m succeeded');
      assert.match(r.output, /^MAXUSERNS=0$/m);
      assert.match(r.output, /^SYS-UNSHARE-USER (28|1)$/m, 'unshare(CLONE_NEWUSER) did not fail with ENOSPC or EPERM');
      await assertNoTrace(r);
    });

    test('setuid binaries give nothing: NoNewPrivs=1, su stays uid 1000, no capabilities, and the world\'s ids are never host root', async () => {
      await s.apply(worldManifest('setuid', shWorld(['proj'], [
        'sleep 5 | su -c id 2>/dev/null & SU=$!', // su waits for a password that never comes
        'for i in $(seq 50); do grep -q "^Name:.*su$" /proc/$SU/status 2>/dev/null && break; sleep 0.1; done',
        'grep -E "^(Name|Uid|Gid|CapEff):" /proc/$SU/status | sed "s/^/SU /"',
        'grep -E "^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb):" /proc/self/status',
        'echo "ID=$(id -u):$(id -g)"',
        'echo "UIDMAP=$(cat /proc/self/uid_map | tr -s " ")"',
        py('import os\nprint("SUIDBIT", oct(os.stat("/usr/bin/su").st_mode & 0o4000))\ntry:\n  os.setuid(0); print("SETUID-OK")\nexcept OSError as e: print("SETUID-ERRNO", e.errno)'),
        'grep " /usr " /proc/mounts | grep -q nosuid && echo USR-NOSUID',
        'exec sleep 4.321',
      ].join('\n'))));
      const running = await s.waitWorld('setuid', ['Running']);
      const range = worldIdRange(running.status);
      // Seen from the host, the world's process runs as base+1000: not root, not the real uid 1000.
      const seen = await s.waitFor('the world\'s sleep 4.321 on the host', async () => hostProcesses().find((p) => p.cmdline.join(' ') === 'sleep 4.321'), 10_000);
      assert.deepEqual(seen.uids, [range.base + OWNER, range.base + OWNER, range.base + OWNER, range.base + OWNER]);
      const w = await s.waitWorld('setuid', ['Captured', 'Failed']);
      const out = readFileSync(outputLogPath(s, w.metadata.uid), 'utf8');
      assert.equal(w.status.phase, 'Captured', out);
      assert.match(out, /^SU Name:\s+su$/m, 'su was not running when inspected');
      assert.match(out, new RegExp(`^SU Uid:\\s+${OWNER}\\s+${OWNER}\\s+${OWNER}\\s+${OWNER}$`, 'm'), 'the setuid-root su gained an id');
      assert.match(out, /^SU CapEff:\s+0+$/m);
      assert.match(out, /^NoNewPrivs:\s+1$/m);
      for (const set of ['CapEff', 'CapPrm', 'CapBnd', 'CapAmb']) assert.match(out, new RegExp(`^${set}:\\s+0+$`, 'm'), `${set} is not empty`);
      assert.match(out, new RegExp(`^ID=${OWNER}:${OWNER}$`, 'm'));
      assert.match(out, /^SUIDBIT 0o4000$/m, 'the probe is meaningless: /usr/bin/su is not setuid here');
      assert.match(out, /^SETUID-ERRNO 1$/m, 'setuid(0) succeeded');
      assert.match(out, /^USR-NOSUID$/m);
      const map = /^UIDMAP= ?0 (\d+) (\d+)$/m.exec(out);
      assert.ok(map, `no uid map in the output:\n${out}`);
      assert.equal(Number(map[1]), range.base);
      assert.ok(Number(map[1]) >= 65536, 'namespace root maps onto a low host id');
      assert.equal(w.status.isolation.observation.noNewPrivs, 1);
      await assertNoTrace({ world: w, status: w.status, uid: w.metadata.uid, output: out });
    });
  });

  describe('processes, environment and credentials of the host', () => {
    test('/proc shows only the world\'s own processes; the agent\'s environment and pid are out of reach', async () => {
      const agentEnviron = readFileSync(`/proc/${s.agent.pid}/environ`, 'utf8');
      assert.ok(agentEnviron.includes(SECRET_VALUE), 'the probe is meaningless: the node-agent does not carry the secret variable');
      const r = await runWorld(s, 'proc', shWorld(['proj'], [
        'echo "PID1=$(tr "\\0" " " < /proc/1/cmdline)"',
        'echo "ENV1=$(tr "\\0" " " < /proc/1/environ)"',
        'for p in /proc/[0-9]*; do echo "PROC ${p#/proc/} $(tr "\\0" " " < $p/cmdline 2>/dev/null)"; done',
        `cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c ${SECRET_VAR} | sed "s/^/SECRETVARS=/"`,
        `kill -0 ${s.agent.pid} 2>/dev/null && echo AGENT-SIGNALLABLE || echo AGENT-UNREACHABLE`,
        'echo "HOSTNAME=$(hostname)"',
        // Listed by a plain child while pid 1 only waits (dash would show the file of a redirection, or the pipe of a $(...)).
        py('import os\nfor f in sorted(os.listdir("/proc/1/fd"), key=int): print("FD", f, os.readlink("/proc/1/fd/" + f))'),
        'echo END',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.match(r.output, /^END$/m);
      assert.ok(!r.output.includes(SECRET_VALUE), `the node-agent's environment leaked:\n${r.output}`);
      assert.match(r.output, /^SECRETVARS=0$/m);
      assert.match(r.output, /^PID1=\/bin\/sh -c /m, 'pid 1 is not the world\'s own agent');
      const env1 = /^ENV1=(.*)$/m.exec(r.output)?.[1]?.trim().split(' ').sort();
      assert.deepEqual(env1, ['HOME=/home/agent', 'LANG=C.UTF-8', 'PATH=/usr/local/bin:/usr/bin:/bin']);
      const procs = [...r.output.matchAll(/^PROC (\d+) (.*)$/gm)].map((m) => ({ pid: Number(m[1]), cmd: m[2] ?? '' }));
      assert.ok(procs.length >= 1 && procs.length <= 6, `unexpected processes visible: ${JSON.stringify(procs)}`);
      for (const p of procs) assert.doesNotMatch(p.cmd, /node|kube|etcd|worldline-/, `a host process is visible: ${JSON.stringify(p)}`);
      assert.ok(procs.every((p) => p.pid < 100), `pids are not the world's own: ${JSON.stringify(procs)}`);
      assert.match(r.output, /^AGENT-UNREACHABLE$/m);
      assert.match(r.output, /^HOSTNAME=world$/m);
      // Only /dev/null and the two output pipes (dash keeps copies of them on fd 10+); an inherited host
      // directory, file or socket descriptor would be a way out of every namespace.
      const fds = [...r.output.matchAll(/^FD (\d+) (.*)$/gm)].map((m) => ({ fd: Number(m[1]), target: m[2] ?? '' }));
      assert.deepEqual(fds.filter((f) => f.fd <= 2).map((f) => f.fd), [0, 1, 2], `stdio of pid 1 not listed:\n${r.output}`);
      for (const f of fds) assert.match(f.target, /^(\/dev\/null|pipe:\[\d+\])$/, `a descriptor reaching outside: ${JSON.stringify(f)}`);
      await assertNoTrace(r);
    });

    test('the world has a session of its own: no controlling terminal and no process group of the node-agent', async () => {
      // Sharing the agent's session would hand the workload the agent's terminal, when it has one: read what is
      // typed there, or inject input with TIOCSTI (this kernel: dev.tty.legacy_tiocsti may allow it).
      const r = await runWorld(s, 'session', shWorld(['proj'], [
        'echo "STAT1=$(head -c 200 /proc/1/stat)"',
        '(: > /dev/tty) 2>&1 || echo NO-TTY',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      const stat = /^STAT1=1 \(sh\) \S+ (-?\d+) (-?\d+) (-?\d+) (-?\d+)/m.exec(r.output);
      assert.ok(stat, `no /proc/1/stat in the output:\n${r.output}`);
      const [, ppid, pgrp, session, ttyNr] = stat.map(Number);
      assert.equal(ppid, 0, 'pid 1 of the world has a parent inside it');
      assert.equal(pgrp, 1, 'the world\'s pid 1 is in a process group that started outside the world (the node-agent\'s)');
      assert.equal(session, 1, 'the world\'s pid 1 is in a session that started outside the world (the node-agent\'s)');
      assert.equal(ttyNr, 0, 'the world has a controlling terminal');
      assert.match(r.output, /No such device or address/);
      assert.match(r.output, /^NO-TTY$/m);
      await assertNoTrace(r);
    });

    test('the node-agent\'s session keyring and its keys are out of reach', async () => {
      assert.ok(KEYS, `no keyctl syscall numbers known for ${process.arch}: add them, this probe must run`);
      assert.ok(readFileSync('/proc/keys', 'utf8').includes(KEY_DESC), 'the probe is meaningless: the node-agent\'s session keyring holds no test key');
      const r = await runWorld(s, 'keyring', shWorld(['proj'], py([
        'import ctypes',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'buf = ctypes.create_string_buffer(512)',
        `n = libc.syscall(${KEYS?.keyctl ?? 0}, 6, -3, buf, 512)`, // KEYCTL_DESCRIBE the session keyring
        'print("SESSION", buf.value.decode() if n > 0 else "none")',
        `k = libc.syscall(${KEYS?.keyctl ?? 0}, 10, -3, b"user", b"${KEY_DESC}", 0)`, // KEYCTL_SEARCH
        'print("SEARCH", k if k > 0 else -ctypes.get_errno())',
        'if k > 0:',
        `  n = libc.syscall(${KEYS?.keyctl ?? 0}, 11, k, buf, 512)`, // KEYCTL_READ
        '  print("READ", buf.value.decode() if n > 0 else -ctypes.get_errno())',
      ].join('\n'))));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.ok(!r.output.includes(KEY_SECRET), `the world read a key of the node-agent's session keyring:\n${r.output}`);
      assert.match(r.output, /^SEARCH -126$/m, 'the key was found (or the search failed otherwise than ENOKEY)');
      assert.doesNotMatch(r.output, /worldline-test-agent-session/, 'the world holds the node-agent\'s session keyring');
      await assertNoTrace(r);
    });

    test('no Kubernetes credential in reach, and under policy None neither the API server nor a host address can be reached', async () => {
      const apiPort = Number(new URL(s.cp.server).port);
      // A non-loopback host address of the test's own (veth pair), with a server on it: the probe always runs.
      const external = createTestHostAddress();
      const hostSide = await recordingServer({ port: 0, host: external.host });
      try {
        assert.equal(await hostConnects(external.host, hostSide.port), 'connected', 'positive control: the host reaches its own external address');
        const controlConnections = hostSide.connections();
        const r = await runWorld(s, 'kube-api', shWorld(['proj'], [
          'ls /var/run/secrets 2>/dev/null && echo SA-DIR-PRESENT || echo SA-DIR-ABSENT',
          'ls /run/secrets 2>/dev/null && echo RUN-SECRETS-PRESENT || echo RUN-SECRETS-ABSENT',
          `cat ${s.cp.kubeconfigPath} >/dev/null 2>&1 && echo KUBECONFIG-READABLE || echo KUBECONFIG-UNREADABLE`,
          'env | grep -c KUBERNETES_ | sed "s/^/KUBEENV=/"',
          tcpProbe('127.0.0.1', apiPort, 'API-LOOPBACK'),
          tcpProbe(external.host, hostSide.port, 'HOST-EXTERNAL'),
        ].join('\n')));
        assert.equal(r.status.phase, 'Captured', describeRun(r));
        for (const m of ['SA-DIR-ABSENT', 'RUN-SECRETS-ABSENT', 'KUBECONFIG-UNREADABLE', 'KUBEENV=0', 'API-LOOPBACK REFUSED', 'HOST-EXTERNAL REFUSED']) assert.match(r.output, new RegExp(`^${m}$`, 'm'), `${m} missing:\n${r.output}`);
        assert.doesNotMatch(r.output, /CONNECTED/);
        assert.equal(hostSide.connections(), controlConnections, 'nothing from the world reached the host address');
        assert.equal(r.status.isolation.observation.network, 'isolated');
        assert.notEqual(r.status.isolation.observation.namespaces.net, `net:[${statSync('/proc/self/ns/net').ino}]`, 'the world shares the host network namespace under None');
        await assertNoTrace(r);
      } finally {
        hostSide.server.close();
        external.remove();
      }
    });

    test('a host loopback port and abstract unix socket are unreachable under policy None, reachable under Shared (Shared is the host network)', async () => {
      const srv = await recordingServer({ port: 0, host: '127.0.0.1' });
      const abstractName = `worldline-test-${randomBytes(6).toString('hex')}`;
      const abs = await recordingServer({ path: `\0${abstractName}` });
      // Abstract unix sockets belong to the network namespace (X11, D-Bus, containerd shims use them).
      const abstractProbe = py([
        'import socket',
        's = socket.socket(socket.AF_UNIX)',
        'try:',
        // Node binds the abstract name padded with NULs to the whole sun_path (108 bytes); connect to exactly that.
        `  s.connect(b"\\0${abstractName}".ljust(108, b"\\0")); s.sendall(b"hello-abstract\\n"); print("ABSTRACT CONNECTED")`,
        'except OSError as e: print("ABSTRACT REFUSED", e.errno)',
      ].join('\n'));
      const probes = `${tcpProbe('127.0.0.1', srv.port, 'HOST-PORT')}\n${abstractProbe}`;
      let policyApplied = false;
      try {
        const none = await runWorld(s, 'net-none', shWorld(['proj'], probes));
        assert.equal(none.status.phase, 'Captured', describeRun(none));
        assert.match(none.output, /^HOST-PORT REFUSED$/m, none.output);
        assert.match(none.output, /^ABSTRACT REFUSED \d+$/m, none.output);
        assert.equal(srv.connections(), 0, 'the world under None reached a host loopback port');
        assert.equal(abs.connections(), 0, 'the world under None reached a host abstract socket');

        // Shared is the host network: it runs only with an isolation waiver of network-denied. The Policy's
        // agent rule is the built-in one for None worlds, so other tests on 'proj' see no change.
        await s.apply(JSON.stringify({
          apiVersion: 'worldline.dev/v1alpha1',
          kind: 'Policy',
          metadata: { name: 'proj-shared' },
          spec: { roots: ['proj'], checks: [], network: { policy: 'Shared' }, isolation: { agent: { minimumLevel: 'os-sandboxed', controls: ['network-denied'] } } },
        }));
        policyApplied = true;
        await s.waitFor('Policy proj-shared Accepted', async () => condition(await s.get('policy', 'proj-shared'), 'Accepted')?.status === 'True');
        const shared = await runWorld(s, 'net-shared', shWorld(['proj'], probes, { network: { policy: 'Shared' }, isolation: { waiver: signWaiver('net-shared', WAIVER_ISSUER.privateKey) } }));
        assert.equal(shared.status.phase, 'Captured', describeRun(shared));
        assert.equal(condition(shared.world, 'Isolated')?.status, 'False', JSON.stringify(shared.status.isolation));
        assert.equal(condition(shared.world, 'Isolated')?.reason, 'IsolationWaived');
        assert.notEqual(shared.status.isolation.decision.outcome, 'reported-sufficient');
        assert.match(shared.output, /^HOST-PORT CONNECTED$/m, shared.output);
        assert.match(shared.output, /^ABSTRACT CONNECTED$/m, shared.output);
        await s.waitFor('the servers saw the world\'s messages', async () => srv.received.includes('hello-from-world\n') && abs.received.includes('hello-abstract\n'), 5_000);
        assert.equal(shared.status.isolation.observation.network, 'host');
        assert.equal(shared.status.isolation.observation.namespaces.net, `net:[${statSync('/proc/self/ns/net').ino}]`);
      } finally {
        if (policyApplied) await kc(s.cp, ['delete', 'policy', 'proj-shared', '--wait=false']);
        await new Promise((r) => srv.server.close(r));
        await new Promise((r) => abs.server.close(r));
      }
    });

    test('a background child does not outlive the World', async () => {
      const r = await runWorld(s, 'linger', shWorld(['proj'], [
        'sleep 299.5 &',
        "setsid sh -c 'sleep 299.6' &",
        'nohup sleep 299.7 >/dev/null 2>&1 &',
        "(trap '' HUP TERM; exec sleep 299.8) &",
        'sleep 0.3',
        'echo "CHILDREN=$(ls /proc | grep -c "^[0-9]")"',
        'exit 0',
      ].join('\n')));
      assert.equal(r.status.phase, 'Captured', describeRun(r));
      assert.match(r.output, /^CHILDREN=([5-9]|\d\d+)$/m, 'the children were not even started');
      const lingering = (): string[] =>
        hostProcesses()
          .filter((p) => p.cmdline[0] === 'sleep' && /^299\.[5-8]$/.test(p.cmdline[1] ?? ''))
          .map((p) => `${p.pid} ${p.cmdline.join(' ')}`);
      assert.deepEqual(lingering(), [], 'a background child of the world is still running on the host');
      await assertNoTrace(r);
    });
  });

  describe('resource limits end the world with the right reason', () => {
    test('a fork bomb is held at resources.pids; the world runs to its wall time (WallTimeExceeded) and the host can still fork', async (t) => {
      // The bomb's processes spawn and exit; pid 1 then spins in a builtin loop that needs no fork.
      await s.apply(worldManifest('fork-bomb', shWorld(['proj'], "bash -c 'b() { b | b & }; b; while :; do :; done'", { resources: { pids: 20, wallTime: '4s', cpu: '500m' } })));
      const running = await s.waitWorld('fork-bomb', ['Running', 'Failed', 'Captured']);
      const uid = running.metadata.uid as string;
      let hostForks = 0;
      const { world, samples } = await sampleWhileRunning(s, 'fork-bomb', () => {
        if (spawnSync('true').status === 0) hostForks++;
        return { current: readWorldCgroupFile(uid, 'pids', 'pids.current'), events: readWorldCgroupFile(uid, 'pids', 'pids.events') };
      });
      const out = readFileSync(outputLogPath(s, uid), 'utf8');
      const currents = samples.map((x) => Number(x.current ?? NaN)).filter((n) => Number.isFinite(n));
      const refused = samples.map((x) => Number(/^max (\d+)$/m.exec(x.events ?? '')?.[1] ?? 0));
      t.diagnostic(`fork bomb: ${samples.length} samples, at most ${Math.max(...currents)} pids, ${Math.max(...refused)} forks refused by the pids controller; ended ${world.status.phase} ${world.status.reason} (exit ${JSON.stringify(world.status.exit)})`);
      assert.ok(currents.length > 0, 'the world\'s pids cgroup was never seen');
      assert.ok(Math.max(...currents) <= 20, `the world held more than 20 pids: ${Math.max(...currents)}`);
      assert.ok(Math.max(...refused) > 0 || /fork: (retry: )?Resource temporarily unavailable/.test(out), 'the bomb never hit the pids limit');
      assert.ok(hostForks > 0 && hostForks === samples.length, 'the host could not fork while the bomb ran');
      assert.equal(world.status.isolation.observation.cgroup.pids, '20');
      assert.equal(world.status.phase, 'Failed', JSON.stringify(world.status));
      assert.equal(world.status.reason, 'WALL_TIME_EXCEEDED');
      assert.equal(world.status.exit.reason, 'WallTimeExceeded');
      await assertNoTrace({ world, status: world.status, uid, output: out });
    });

    test('allocating past resources.memory ends the world with OOMKilled', async () => {
      const r = await runWorld(s, 'oom', shWorld(['proj'], `echo START; ${py('b = b"x" * (200 * 1024 * 1024)\nprint("ALLOCATED", len(b))')}`, { resources: { memory: '32Mi' } }));
      assert.equal(r.status.phase, 'Failed', describeRun(r));
      assert.equal(r.status.reason, 'OOM_KILLED');
      assert.equal(r.status.exit.reason, 'OOMKilled');
      assert.equal(r.status.isolation.observation.cgroup.memoryBytes, String(32 * 1024 * 1024));
      assert.match(r.output, /^START$/m);
      assert.doesNotMatch(r.output, /ALLOCATED/, 'the allocation succeeded');
      process.kill(s.agent.pid, 0); // the node-agent is alive
      await assertNoTrace(r);
    });

    test('printing past resources.outputBytes ends the world with OutputLimitExceeded; the log holds at most the limit', async () => {
      const r = await runWorld(s, 'output', shWorld(['proj'], 'yes', { resources: { outputBytes: '1Ki' } }));
      assert.equal(r.status.phase, 'Failed', describeRun(r));
      assert.equal(r.status.reason, 'OUTPUT_LIMIT_EXCEEDED');
      assert.equal(r.status.exit.reason, 'OutputLimitExceeded');
      const size = statSync(outputLogPath(s, r.uid)).size;
      assert.ok(size > 0 && size <= 1024, `the output log holds ${size} bytes`);
      await assertNoTrace(r);
    });

    test('running past resources.wallTime ends the world with WallTimeExceeded', async () => {
      const t0 = Date.now();
      const r = await runWorld(s, 'wall', shWorld(['proj'], 'echo START; sleep 60; echo NEVER', { resources: { wallTime: '2s' } }));
      const took = Date.now() - t0;
      assert.equal(r.status.phase, 'Failed', describeRun(r));
      assert.equal(r.status.reason, 'WALL_TIME_EXCEEDED');
      assert.equal(r.status.exit.reason, 'WallTimeExceeded');
      assert.equal(r.status.exit.signal, 'SIGKILL');
      assert.ok(took < 20_000, `the world ran ${took} ms with a 2 s wall time`);
      assert.match(r.output, /^START$/m);
      assert.doesNotMatch(r.output, /NEVER/);
      await assertNoTrace(r);
    });
  });
});
