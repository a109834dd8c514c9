// The exec stream (`kubectl worldline exec`): after the HTTP upgrade to EXEC_PROTOCOL, both directions of
// the connection carry frames of one type byte, a 4-byte big-endian payload length and the payload. The
// client sends its input, window sizes and the end of its input; the node-agent sends the command's
// output and, last, how it ended. A frame of an unknown type, a payload over FRAME_MAX_BYTES or a frame
// sent in the wrong direction is a protocol error: the receiver closes the connection.

/** The Upgrade token of the exec stream. */
export const EXEC_PROTOCOL = 'worldline-exec.v1';

export const FRAME_MAX_BYTES = 64 * 1024;

export const FrameType = {
  /** client -> agent: bytes for the command's standard input (or its terminal). */
  Stdin: 0,
  /** agent -> client: the command's standard output (all of a terminal's output). */
  Stdout: 1,
  /** agent -> client: the command's standard error (never with a terminal). */
  Stderr: 2,
  /** client -> agent: JSON {rows, cols}, the terminal's size. */
  Resize: 3,
  /** agent -> client, last: JSON ExecEnd. */
  Exit: 4,
  /** client -> agent: no more input (empty payload). */
  StdinEnd: 5,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const CLIENT_TYPES = new Set<number>([FrameType.Stdin, FrameType.Resize, FrameType.StdinEnd]);
const AGENT_TYPES = new Set<number>([FrameType.Stdout, FrameType.Stderr, FrameType.Exit]);

/** How an exec ended: the command's exit status or terminating signal, or the named reason it did not run. */
export type ExecEnd = { code: number | null; signal: string | null } | { reason: string; message: string };

export interface Frame {
  type: FrameType;
  payload: Buffer;
}

export class FrameError extends Error {}

export function encodeFrame(type: FrameType, payload: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  if (body.length > FRAME_MAX_BYTES) throw new FrameError(`frame payload of ${body.length} bytes exceeds ${FRAME_MAX_BYTES}`);
  const head = Buffer.alloc(5);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Splits a chunk into frames of at most FRAME_MAX_BYTES each. */
export function encodeData(type: FrameType, data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += FRAME_MAX_BYTES) out.push(encodeFrame(type, data.subarray(i, i + FRAME_MAX_BYTES)));
  return out;
}

/** Reassembles frames from a byte stream sent by `from`; throws FrameError on a protocol violation. */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);
  private readonly allowed: ReadonlySet<number>;

  constructor(from: 'client' | 'agent') {
    this.allowed = from === 'client' ? CLIENT_TYPES : AGENT_TYPES;
  }

  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const frames: Frame[] = [];
    while (this.buf.length >= 5) {
      const type = this.buf.readUInt8(0);
      const len = this.buf.readUInt32BE(1);
      if (!this.allowed.has(type)) throw new FrameError(`frame type ${type} is not one this side may send`);
      if (len > FRAME_MAX_BYTES) throw new FrameError(`frame payload of ${len} bytes exceeds ${FRAME_MAX_BYTES}`);
      if (this.buf.length < 5 + len) break;
      frames.push({ type: type as FrameType, payload: this.buf.subarray(5, 5 + len) });
      this.buf = this.buf.subarray(5 + len);
    }
    return frames;
  }

  /** Bytes of an incomplete frame still held. */
  get pending(): number {
    return this.buf.length;
  }
}

/** Parses a Resize payload: whole rows and cols in 1..65535, or undefined. */
export function parseResize(payload: Buffer): { rows: number; cols: number } | undefined {
  let v: unknown;
  try {
    v = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  const o = v as { rows?: unknown; cols?: unknown };
  const ok = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65535;
  return typeof v === 'object' && v !== null && ok(o.rows) && ok(o.cols) ? { rows: o.rows, cols: o.cols } : undefined;
}
