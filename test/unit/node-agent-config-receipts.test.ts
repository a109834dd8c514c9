// The node-agent's --receipts-export flag (and WORLDLINE_RECEIPTS_EXPORT): an absolute file path or nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAgentConfig } from '../../node-agent/config.js';

const base = ['--node-name', 'n1'];

test('--receipts-export takes an absolute file path, from the flag or the environment', () => {
  assert.equal(parseAgentConfig(base, {}).receiptsExport, undefined);
  assert.equal(parseAgentConfig([...base, '--receipts-export', '/mnt/audit/n1.jsonl'], {}).receiptsExport, '/mnt/audit/n1.jsonl');
  assert.equal(parseAgentConfig(base, { WORLDLINE_RECEIPTS_EXPORT: '/mnt/audit/env.jsonl' }).receiptsExport, '/mnt/audit/env.jsonl');
  assert.equal(parseAgentConfig([...base, '--receipts-export', '/a.jsonl'], { WORLDLINE_RECEIPTS_EXPORT: '/b.jsonl' }).receiptsExport, '/a.jsonl', 'the flag wins');
  assert.equal(parseAgentConfig(base, { WORLDLINE_RECEIPTS_EXPORT: '' }).receiptsExport, undefined, 'an empty variable is unset');
});

test('--receipts-export refuses a relative path, a directory path and an empty value', () => {
  for (const bad of ['audit/n1.jsonl', './n1.jsonl', '/mnt/audit/', '']) {
    assert.throws(() => parseAgentConfig([...base, '--receipts-export', bad], {}), /--receipts-export must be an absolute file path/, bad);
  }
});
