// JSON as evidence must be read: exactly one meaning per text. JSON.parse keeps the last of two equal
// keys (so two readers of one statement could see two different values), nests without limit and reads
// any size; this parser refuses a duplicate key, bounds the nesting depth and the input size, and
// otherwise accepts exactly RFC 8259 JSON (the values are what JSON.parse gives for the same text).
// Pure, no I/O.

export class StrictJsonError extends Error {
  constructor(
    readonly code: 'JSON_TOO_LARGE' | 'JSON_TOO_DEEP' | 'JSON_DUPLICATE_KEY' | 'JSON_INVALID',
    message: string,
  ) {
    super(message);
    this.name = 'StrictJsonError';
  }
}

export interface StrictJsonLimits {
  /** UTF-16 code units of text at most (the caller bounds bytes before decoding). */
  maxLength: number;
  /** Arrays and objects nested at most this deep. */
  maxDepth: number;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

export function parseStrictJson(text: string, limits: StrictJsonLimits): unknown {
  if (text.length > limits.maxLength) throw new StrictJsonError('JSON_TOO_LARGE', `JSON text of ${text.length} characters exceeds ${limits.maxLength}`);
  let i = 0;
  const fail = (what: string): never => {
    throw new StrictJsonError('JSON_INVALID', `${what} at offset ${i}`);
  };
  const skip = (): void => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++;
  };
  const string = (): string => {
    // The opening quote is at i; find the closing one, checking escapes and control characters, and let
    // JSON.parse decode the exact slice (it is a valid JSON string by then).
    const start = i++;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail('control character in string');
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('bad \\u escape');
          i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) fail('bad escape');
        i += 2;
        continue;
      }
      i++;
    }
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (depth: number): unknown => {
    skip();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth >= limits.maxDepth) throw new StrictJsonError('JSON_TOO_DEEP', `nesting deeper than ${limits.maxDepth} at offset ${i}`);
      i++;
      skip();
      if (c === '[') {
        const out: unknown[] = [];
        if (text[i] === ']') {
          i++;
          return out;
        }
        for (;;) {
          out.push(value(depth + 1));
          skip();
          if (text[i] === ',') i++;
          else if (text[i] === ']') {
            i++;
            return out;
          } else fail('expected , or ]');
        }
      }
      const out: Record<string, unknown> = {};
      const seen = new Set<string>();
      if (text[i] === '}') {
        i++;
        return out;
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail('expected a key');
        const key = string();
        if (seen.has(key)) throw new StrictJsonError('JSON_DUPLICATE_KEY', `duplicate key ${JSON.stringify(key)} at offset ${i}`);
        seen.add(key);
        skip();
        if (text[i] !== ':') fail('expected :');
        i++;
        const v = value(depth + 1);
        // defineProperty, so a key "__proto__" is an ordinary own property, as JSON.parse makes it.
        Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
        skip();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return out;
        } else fail('expected , or }');
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m || m[0] === '') return fail('expected a value');
    i += m[0].length;
    return Number(m[0]);
  };
  const v = value(0);
  skip();
  if (i !== text.length) fail('trailing characters');
  return v;
}
