// The view path's flags on both components: served only when its TLS material is named, and every
// half-given or malformed setting refused with a message that names the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../controller/config.js';
import { parseAgentConfig } from '../../node-agent/config.js';
import { formatHostPort, splitHostPort } from '../../kube/host-port.js';

const agent = (args: string[], env: NodeJS.ProcessEnv = {}) => parseAgentConfig(['--node-name', 'n1', ...args], env);

test('node-agent: no view without --link-tls-dir; with it, the advertised address comes from the flag or POD_IP', () => {
  assert.equal(agent([]).view, undefined);
  assert.deepEqual(agent(['--link-tls-dir', '/etc/link', '--view-address', '10.1.2.3:9443']).view, { host: '0.0.0.0', port: 9443, linkTlsDir: '/etc/link', advertiseHost: '10.1.2.3', advertisePort: 9443 });
  assert.deepEqual(agent(['--link-tls-dir', '/etc/link', '--view-bind', '127.0.0.1:0', '--view-address', '127.0.0.1']).view, { host: '127.0.0.1', port: 0, linkTlsDir: '/etc/link', advertiseHost: '127.0.0.1' });
  assert.deepEqual(agent([], { WORLDLINE_LINK_TLS_DIR: '/l', POD_IP: 'fd00::5' }).view, { host: '0.0.0.0', port: 9443, linkTlsDir: '/l', advertiseHost: 'fd00::5' });
});

test('node-agent: a relative TLS directory, no address to advertise, or a malformed bind is refused by name', () => {
  assert.throws(() => agent(['--link-tls-dir', 'link', '--view-address', 'h']), /--link-tls-dir must be an absolute directory/);
  assert.throws(() => agent(['--link-tls-dir', '/l']), /--view-address is needed with --link-tls-dir when POD_IP is not set/);
  assert.throws(() => agent(['--link-tls-dir', '/l', '--view-address', 'h', '--view-bind', 'nope']), /--view-bind must be HOST:PORT/);
  assert.throws(() => agent(['--link-tls-dir', '/l', '--view-address', 'a b']), /--view-address must be HOST or HOST:PORT/);
});

test('controller: the view API needs both TLS directories, absolute, and a HOST:PORT bind', () => {
  assert.equal(parseConfig([], {}).view, undefined);
  assert.deepEqual(parseConfig(['--view-tls-dir', '/s', '--link-tls-dir', '/l'], {}).view, { host: '0.0.0.0', port: 8443, servingTlsDir: '/s', linkTlsDir: '/l' });
  assert.throws(() => parseConfig(['--view-tls-dir', '/s'], {}), /needs both --view-tls-dir and --link-tls-dir/);
  assert.throws(() => parseConfig(['--view-bind', '0.0.0.0:1'], {}), /--view-bind needs --view-tls-dir and --link-tls-dir/);
  assert.throws(() => parseConfig(['--view-tls-dir', 's', '--link-tls-dir', '/l'], {}), /--view-tls-dir must be an absolute directory/);
  assert.throws(() => parseConfig(['--view-tls-dir', '/s', '--link-tls-dir', '/l', '--view-bind', 'x'], {}), /--view-bind must be HOST:PORT/);
});

test('HOST:PORT splits with IPv6 in brackets; a bare IPv6 address, an empty host or no port is not HOST:PORT', () => {
  assert.deepEqual(splitHostPort('10.1.2.3:9443'), { host: '10.1.2.3', port: '9443' });
  assert.deepEqual(splitHostPort('[fd00::5]:0'), { host: 'fd00::5', port: '0' });
  for (const raw of ['fd00::5', ':9443', 'host', 'host:', '[fd00::5]', 'a b:1x']) assert.equal(splitHostPort(raw), undefined, raw);
  assert.equal(formatHostPort({ host: 'fd00::5', port: 9443 }), '[fd00::5]:9443');
});
