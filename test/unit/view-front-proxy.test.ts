// The view API's front-proxy authentication as pure logic: which requests' user headers are believed.
// (The real API server in front of it is exercised by test/integration/world-view.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TLSSocket } from 'node:tls';
import { authenticateFrontProxy, parseRequestHeaderRules, type RequestHeaderRules } from '../../controller/view/front-proxy.js';

const rules: RequestHeaderRules = parseRequestHeaderRules({
  'requestheader-client-ca-file': '-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n',
  'requestheader-allowed-names': '["front-proxy-client"]',
  'requestheader-username-headers': '["X-Remote-User"]',
  'requestheader-group-headers': '["X-Remote-Group"]',
  'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
});

const socket = (authorized: boolean, cn?: string | string[]): TLSSocket =>
  ({ authorized, getPeerCertificate: () => (cn === undefined ? {} : { subject: { CN: cn } }) }) as unknown as TLSSocket;

test('the user, each group and the extra values are taken from an allowed front proxy', () => {
  const r = authenticateFrontProxy(rules, socket(true, 'front-proxy-client'), {
    'x-remote-user': ['alice'],
    'x-remote-group': ['dev', 'system:authenticated'],
    'x-remote-extra-scopes%2fteam': ['a', 'b'],
    'x-other': ['ignored'],
  });
  assert.deepEqual(r, { user: { username: 'alice', groups: ['dev', 'system:authenticated'], extra: { 'scopes/team': ['a', 'b'] } } });
});

test('headers are not believed without a certificate of the request-header CA, from another name, or naming no user', () => {
  const headers = { 'x-remote-user': ['alice'], 'x-remote-group': ['system:masters'] };
  assert.match(JSON.stringify(authenticateFrontProxy(rules, socket(false, 'front-proxy-client'), headers)), /no client certificate of the request-header CA/);
  assert.match(JSON.stringify(authenticateFrontProxy(rules, socket(true, 'someone-else'), headers)), /not an allowed name/);
  assert.match(JSON.stringify(authenticateFrontProxy(rules, socket(true, ['front-proxy-client', 'x']), headers)), /not an allowed name/);
  assert.match(JSON.stringify(authenticateFrontProxy(rules, socket(true, 'front-proxy-client'), { 'x-remote-group': ['g'] })), /named no user/);
  assert.match(JSON.stringify(authenticateFrontProxy(rules, socket(true, 'front-proxy-client'), { 'x-remote-user': ['u'], 'x-remote-extra-%zz': ['v'] })), /malformed extra header/);
});

test('the rules refuse a cluster without a front proxy, and malformed lists', () => {
  assert.throws(() => parseRequestHeaderRules({}), /no requestheader-client-ca-file/);
  assert.throws(() => parseRequestHeaderRules({ 'requestheader-client-ca-file': 'x', 'requestheader-username-headers': '[]' }), /requestheader-username-headers is empty/);
  assert.throws(() => parseRequestHeaderRules({ 'requestheader-client-ca-file': 'x', 'requestheader-username-headers': '[1]' }), /not a list of strings/);
  const anyName = parseRequestHeaderRules({ 'requestheader-client-ca-file': 'x', 'requestheader-username-headers': '["X-Remote-User"]' });
  assert.deepEqual(anyName.allowedNames, []);
  assert.ok('user' in authenticateFrontProxy(anyName, socket(true, 'whoever'), { 'x-remote-user': ['u'] }));
});
