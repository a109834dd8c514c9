// The exec stream's frames (core/exec/exec-frames.ts): round trips across arbitrary chunking, the size
// bound, the direction rule, and resize parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeData, encodeFrame, FRAME_MAX_BYTES, FrameDecoder, FrameError, FrameType, parseResize } from '../../core/exec/exec-frames.js';

test('frames survive any split of the byte stream, in order', () => {
  const frames = [encodeFrame(FrameType.Stdout, 'hello'), encodeFrame(FrameType.Stderr, Buffer.from([0, 255, 10])), encodeFrame(FrameType.Stdout), encodeFrame(FrameType.Exit, '{"code":3,"signal":null}')];
  const bytes = Buffer.concat(frames);
  for (let step = 1; step <= bytes.length; step++) {
    const d = new FrameDecoder('agent');
    const got = [];
    for (let i = 0; i < bytes.length; i += step) got.push(...d.push(bytes.subarray(i, i + step)));
    assert.deepEqual(got.map((f) => [f.type, f.payload.toString('latin1')]), [[1, 'hello'], [2, '\0\xff\n'], [1, ''], [4, '{"code":3,"signal":null}']], `split every ${step} bytes`);
    assert.equal(d.pending, 0);
  }
});

test('large output is cut into frames of at most FRAME_MAX_BYTES, and a larger one is refused both ways', () => {
  const data = Buffer.alloc(FRAME_MAX_BYTES * 2 + 7, 0x61);
  const parts = encodeData(FrameType.Stdout, data);
  assert.equal(parts.length, 3);
  const back = new FrameDecoder('agent').push(Buffer.concat(parts));
  assert.deepEqual(Buffer.concat(back.map((f) => f.payload)), data);
  assert.throws(() => encodeFrame(FrameType.Stdout, Buffer.alloc(FRAME_MAX_BYTES + 1)), FrameError);
  const head = Buffer.from([FrameType.Stdin, 0, 0, 0, 0]);
  head.writeUInt32BE(FRAME_MAX_BYTES + 1, 1);
  assert.throws(() => new FrameDecoder('client').push(head), /exceeds/);
});

test('each side may send only its own frame types', () => {
  assert.throws(() => new FrameDecoder('client').push(encodeFrame(FrameType.Exit, '{}')), /not one this side may send/);
  assert.throws(() => new FrameDecoder('agent').push(encodeFrame(FrameType.Stdin, 'x')), /not one this side may send/);
  assert.throws(() => new FrameDecoder('client').push(Buffer.from([9, 0, 0, 0, 0])), /type 9/);
  assert.equal(new FrameDecoder('client').push(encodeFrame(FrameType.StdinEnd)).length, 1);
});

test('a resize is two whole numbers in 1..65535, anything else is ignored', () => {
  assert.deepEqual(parseResize(Buffer.from('{"rows":24,"cols":80}')), { rows: 24, cols: 80 });
  for (const bad of ['{"rows":0,"cols":80}', '{"rows":24}', '{"rows":1.5,"cols":80}', '{"rows":70000,"cols":80}', 'null', '[]', 'not json']) assert.equal(parseResize(Buffer.from(bad)), undefined, bad);
});
