// Structured JSON logging: one line per record, {time, level, component, msg, ...fields}, to stderr by default.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  /** Minimum level written; defaults to $WORLDLINE_LOG_LEVEL, else 'info'. */
  level?: LogLevel;
  stream?: NodeJS.WritableStream;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function isLevel(v: string | undefined): v is LogLevel {
  return v !== undefined && Object.hasOwn(rank, v);
}

/** Errors do not JSON-serialise usefully; turn them (and bigints) into plain data. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: value.message };
    for (const k of ['code', 'statusCode', 'reason'] as const) {
      const v = (value as unknown as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = v;
    }
    if (value.stack) out.stack = value.stack;
    return out;
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}

function serialise(record: Record<string, unknown>): string {
  try {
    return JSON.stringify(record, replacer);
  } catch {
    // Circular or otherwise unserialisable fields: keep the record, drop the fields.
    const { time, level, component, msg } = record;
    return JSON.stringify({ time, level, component, msg, fieldsError: 'unserialisable fields' });
  }
}

class JsonLogger implements Logger {
  constructor(
    private readonly base: Record<string, unknown>,
    private readonly min: number,
    private readonly stream: NodeJS.WritableStream,
  ) {}

  private write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    if (rank[level] < this.min) return;
    const record = { time: new Date().toISOString(), level, ...this.base, ...fields, msg };
    // Fields must not override the record's own keys.
    record.level = level;
    this.stream.write(serialise(record) + '\n');
  }

  debug(msg: string, fields?: Record<string, unknown>): void { this.write('debug', msg, fields); }
  info(msg: string, fields?: Record<string, unknown>): void { this.write('info', msg, fields); }
  warn(msg: string, fields?: Record<string, unknown>): void { this.write('warn', msg, fields); }
  error(msg: string, fields?: Record<string, unknown>): void { this.write('error', msg, fields); }

  child(fields: Record<string, unknown>): Logger {
    return new JsonLogger({ ...this.base, ...fields, component: this.base.component }, this.min, this.stream);
  }
}

export function createLogger(component: string, opts: LoggerOptions = {}): Logger {
  const env = process.env.WORLDLINE_LOG_LEVEL;
  const level: LogLevel = opts.level ?? (isLevel(env) ? env : 'info');
  return new JsonLogger({ component }, rank[level], opts.stream ?? process.stderr);
}

/** A logger that discards everything (tests, optional dependencies). */
export const nullLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => nullLogger,
};
