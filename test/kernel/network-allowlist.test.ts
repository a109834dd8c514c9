// Allowlist entries: parsing, canonical forms and exact matching (pure; no root needed). No wildcard,
// suffix or shorthand form is ever accepted or matched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AllowlistEntryError, formatHostPort, isAllowed, parseAllowlist, parseHostPort } from '../../node-agent/network/allowlist.js';
import { splitAuthority, stripHopByHop } from '../../node-agent/network/proxy-protocol.js';
import { proxyEnv, withProxyEnv } from '../../node-agent/network/world-network.js';

test('valid entries parse to canonical host:port', () => {
  const cases: [string, string][] = [
    ['api.example.com:443', 'api.example.com:443'],
    ['API.Example.COM:443', 'api.example.com:443'],
    ['localhost:8080', 'localhost:8080'],
    ['127.0.0.1:80', '127.0.0.1:80'],
    ['10.0.0.255:65535', '10.0.0.255:65535'],
    ['[::1]:443', '[::1]:443'],
    ['[0:0:0:0:0:0:0:1]:443', '[::1]:443'],
    ['[2001:DB8::A]:1', '[2001:db8::a]:1'],
    ['a-b.c0.example:1', 'a-b.c0.example:1'],
  ];
  for (const [input, want] of cases) assert.equal(formatHostPort(parseHostPort(input)), want, input);
});

test('invalid entries are refused with ALLOWLIST_ENTRY_INVALID', () => {
  const bad = [
    '', 'example.com', 'example.com:', ':443', 'example.com:0', 'example.com:65536', 'example.com:+80', 'example.com:08x',
    '*.example.com:443', '.example.com:443', 'example.com.:443', 'exa_mple.com:443', '-a.com:1', 'a-.com:1',
    '127.1:80', '0x7f.0.0.1:80', '2130706433:80', '127.000.0.1:80', '010.0.0.1:80', '10.1.2:80',
    '::1:443', '[::1]443', '[::1]', '[nope]:1', '[fe80::1%eth0]:1', 'a b:1', 'host:1:2', `${'a'.repeat(64)}.com:1`,
    `${'a.'.repeat(130)}com:1`,
  ];
  for (const e of bad) {
    assert.throws(() => parseHostPort(e), (err: unknown) => err instanceof AllowlistEntryError && err.code === 'ALLOWLIST_ENTRY_INVALID', e);
  }
  assert.throws(() => parseAllowlist(['ok.example:1', 'bad']), AllowlistEntryError);
});

test('parseAllowlist deduplicates canonical forms and keeps first-seen order', () => {
  const l = parseAllowlist(['B.example:1', 'a.example:2', 'b.example:1', '[::1]:3', '[0::1]:3']);
  assert.deepEqual(l.entries, ['b.example:1', 'a.example:2', '[::1]:3']);
});

test('isAllowed is an exact match of host and port', () => {
  const allow = parseAllowlist(['api.example.com:443', '127.0.0.1:8080', '[::1]:9000']);
  assert.equal(isAllowed(allow, 'api.example.com', 443), true);
  assert.equal(isAllowed(allow, 'API.EXAMPLE.COM', 443), true, 'host case does not matter');
  assert.equal(isAllowed(allow, '127.0.0.1', 8080), true);
  assert.equal(isAllowed(allow, '::1', 9000), true);
  assert.equal(isAllowed(allow, '[::1]', 9000), true);
  assert.equal(isAllowed(allow, '[0:0::1]', 9000), true);
  for (const [h, p] of [
    ['api.example.com', 80], ['example.com', 443], ['x.api.example.com', 443], ['api.example.com.', 443],
    ['api.example.com.evil', 443], ['127.1', 8080], ['2130706433', 8080], ['127.0.0.2', 8080], ['localhost', 8080],
    ['*.example.com', 443], ['', 443], ['::2', 9000], ['127.0.0.1', 0], ['127.0.0.1', 65536], ['127.0.0.1', 8080.5],
  ] as [string, number][]) {
    assert.equal(isAllowed(allow, h, p), false, `${h}:${p}`);
  }
  assert.equal(isAllowed(['a.example:1'], 'a.example', 1), true, 'accepts a raw string list too');
});

test('splitAuthority and stripHopByHop', () => {
  assert.deepEqual(splitAuthority('a.example:443'), { host: 'a.example', port: 443 });
  assert.deepEqual(splitAuthority('[::1]:80'), { host: '::1', port: 80 });
  for (const bad of ['', 'a.example', ':1', 'a:0', 'a:65536', 'a:b', '::1:80', '[::1]', 'a: 1']) assert.equal(splitAuthority(bad), null, bad);
  assert.deepEqual(
    stripHopByHop({ connection: 'close, x-secret', 'x-secret': '1', 'keep-alive': '5', 'proxy-authorization': 'b', te: 'trailers', 'transfer-encoding': 'chunked', upgrade: 'h2c', accept: '*/*', 'proxy-connection': 'keep-alive' }),
    { accept: '*/*' },
  );
});

test('proxyEnv and withProxyEnv: the world cannot keep its own proxy variables', () => {
  assert.deepEqual(proxyEnv(), [
    'HTTP_PROXY=http://127.0.0.1:3128', 'HTTPS_PROXY=http://127.0.0.1:3128', 'http_proxy=http://127.0.0.1:3128',
    'https_proxy=http://127.0.0.1:3128', 'NO_PROXY=', 'no_proxy=',
  ]);
  const env = withProxyEnv(['PATH=/usr/bin', 'no_proxy=*', 'Https_Proxy=http://evil:1', 'ALL_PROXY=socks5://x:1', 'X=http_proxy=1']);
  assert.deepEqual(env, ['PATH=/usr/bin', 'X=http_proxy=1', ...proxyEnv()]);
  assert.throws(() => proxyEnv(0), RangeError);
});
