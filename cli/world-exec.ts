// `worldline exec` (as a kubectl plugin: `kubectl worldline exec`): starts a command inside a running
// World through the Kubernetes API server (an upgrade on the aggregated API view.worldline.dev), so the
// cluster authenticates the caller and authorizes create on worlds/exec. Input, output and the command's
// end travel as frames (core/exec/exec-frames.ts). The exec is recorded on the World and in an Event.
import { parseArgs } from 'node:util';
import type { Duplex } from 'node:stream';
import { EXEC_PROTOCOL, encodeData, encodeFrame, FrameDecoder, FrameType, type ExecEnd } from '../core/exec/exec-frames.js';
import { VIEW_GROUP, VIEW_VERSION } from '../crds/api-group.js';
import { ApiError } from '../kube/api-error.js';
import { httpClientFor } from '../kube/http.js';
import { WORLD_COMMAND_OPTIONS, worldCluster } from './world-cluster.js';
import { constants } from 'node:os';

export const EXEC_USAGE = `usage: worldline exec WORLD [-n NAMESPACE] [-i] [-t] [--kubeconfig PATH] -- COMMAND [ARG...]

Runs COMMAND inside the running World: its sandbox, identity, limits and network. What it changes
becomes part of the World's candidate. Every exec is recorded on the World (status.execs: who, when,
what, how it ended) and in an Event.
  -i, --stdin         pass standard input to the command
  -t, --tty           run it on a terminal (with -i: interactive; the local terminal goes raw)
  -n, --namespace NS  the World's namespace (default: the kubeconfig context's, else "default")
Needs: get worlds (worldline.dev) and create worlds/exec (view.worldline.dev) on that World.
Exit status: the command's (128+N when signal N ended it); 1 refused or failed; 2 usage error.`;

export interface ExecIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: NodeJS.WritableStream & { columns?: number; rows?: number; on(event: 'resize', fn: () => void): unknown };
  stderr: NodeJS.WritableStream;
}

function signalNumber(name: string): number {
  return (constants.signals as Record<string, number | undefined>)[name] ?? 0;
}

export async function runWorldExec(args: readonly string[], io: ExecIo): Promise<number> {
  const err = (t: string): void => void io.stderr.write(t);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        ...WORLD_COMMAND_OPTIONS,
        stdin: { type: 'boolean', short: 'i' },
        tty: { type: 'boolean', short: 't' },
      },
      strict: true,
    });
  } catch (e) {
    err(`worldline exec: ${(e as Error).message}\n${EXEC_USAGE}\n`);
    return 2;
  }
  const v = parsed.values;
  if (v.help) {
    io.stdout.write(`${EXEC_USAGE}\n`);
    return 0;
  }
  const [world, ...command] = parsed.positionals;
  if (world === undefined || command.length === 0) {
    err(`worldline exec: name one World and the command to run after --\n${EXEC_USAGE}\n`);
    return 2;
  }
  const { kc, namespace } = worldCluster(v);
  const tty = v.tty === true;
  const stdin = v.stdin === true;
  const query = new URLSearchParams();
  for (const a of command) query.append('command', a);
  query.set('tty', String(tty));
  query.set('stdin', String(stdin));
  let conn: { socket: Duplex; head: Buffer };
  try {
    conn = await httpClientFor(kc).upgrade(
      { path: `/apis/${VIEW_GROUP}/${VIEW_VERSION}/namespaces/${encodeURIComponent(namespace)}/worlds/${encodeURIComponent(world)}/exec?${query.toString()}` },
      EXEC_PROTOCOL,
    );
  } catch (e) {
    const msg = e instanceof ApiError ? `${e.message} (HTTP ${e.statusCode})` : (e as Error).message;
    err(`worldline exec: ${msg}\n`);
    return 1;
  }
  return relay(conn, io, { tty, stdin });
}

/** Carries the terminal's or the pipes' bytes both ways until the Exit frame; returns the exit status to use. */
function relay(conn: { socket: Duplex; head: Buffer }, io: ExecIo, o: { tty: boolean; stdin: boolean }): Promise<number> {
  const { socket } = conn;
  const raw = o.tty && o.stdin && io.stdin.isTTY === true && typeof io.stdin.setRawMode === 'function';
  if (raw) io.stdin.setRawMode!(true);
  const sendSize = (): void => {
    if (io.stdout.columns && io.stdout.rows) socket.write(encodeFrame(FrameType.Resize, JSON.stringify({ rows: io.stdout.rows, cols: io.stdout.columns })));
  };
  if (o.tty) {
    sendSize();
    io.stdout.on('resize', sendSize);
  }
  const onInput = (b: Buffer | string): void => {
    for (const f of encodeData(FrameType.Stdin, Buffer.isBuffer(b) ? b : Buffer.from(b))) socket.write(f);
  };
  const onInputEnd = (): void => void socket.write(encodeFrame(FrameType.StdinEnd));
  if (o.stdin) {
    io.stdin.on('data', onInput);
    io.stdin.on('end', onInputEnd);
  }
  return new Promise<number>((resolve) => {
    let end: ExecEnd | undefined;
    const finish = (code: number): void => {
      if (raw) io.stdin.setRawMode!(false);
      if (o.stdin) {
        io.stdin.off('data', onInput);
        io.stdin.off('end', onInputEnd);
        io.stdin.pause();
      }
      socket.destroy();
      resolve(code);
    };
    const decoder = new FrameDecoder('agent');
    const onData = (chunk: Buffer): void => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch (e) {
        io.stderr.write(`worldline exec: ${(e as Error).message}\n`);
        return finish(1);
      }
      for (const f of frames) {
        if (f.type === FrameType.Stdout) io.stdout.write(f.payload);
        else if (f.type === FrameType.Stderr) io.stderr.write(f.payload);
        else if (f.type === FrameType.Exit) end = JSON.parse(f.payload.toString('utf8')) as ExecEnd;
      }
    };
    if (conn.head.length > 0) onData(conn.head);
    socket.on('data', onData);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (end === undefined) {
        io.stderr.write('worldline exec: the connection closed before the command ended\n');
        return finish(1);
      }
      if ('reason' in end) {
        io.stderr.write(`worldline exec: ${end.reason}: ${end.message}\n`);
        return finish(1);
      }
      finish(end.code ?? 128 + signalNumber(end.signal ?? ''));
    });
  });
}
