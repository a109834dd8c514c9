// The node's receipt signing key: an Ed25519 key kept as a PKCS#8 PEM file, mode 0600, owned by the
// agent's user, in a configuration directory no one else can write. Generated on first use; a key file
// that is a link, is readable or writable by group or other, or belongs to someone else is refused
// rather than repaired (someone else may already have read or replaced it).
//
// The public key is written next to it for verifiers: SPKI PEM and the 32 raw bytes as hex.
//
// Receipts are signed by OpenSSL (node:crypto), about 12x faster than @noble/ed25519 here, which is what
// lets the ledger commit more than 2,000 receipts a second. @noble stays as the independent second
// implementation: both derive the public key from the seed (they must agree, KEY_INVALID otherwise), and
// the ledger signs a probe with both before it opens (signer-check.ts).
import { createPrivateKey, createPublicKey, randomBytes, sign as opensslSign } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { keyIdOf } from '../../core/receipts/ledger-line.js';
import { fsyncDir, writeSyncedFile } from './durable-write.js';
import { ed } from './ed25519.js';
import { ReceiptLedgerError } from './errors.js';

export const KEY_FILE = 'receipts-ed25519.key';
export const PUBLIC_PEM_FILE = 'receipts-ed25519.pub.pem';
export const PUBLIC_HEX_FILE = 'receipts-ed25519.pub.hex';

// DER prefix of a PKCS#8 Ed25519 private key (RFC 8410) holding a 32-byte seed.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface SigningKey {
  readonly publicKey: Uint8Array;
  readonly keyId: string;
  readonly publicKeyPem: string;
  readonly publicKeyHex: string;
  readonly keyPath: string;
  /** The Ed25519 signature of `message` by OpenSSL: what every receipt is signed with. */
  sign(message: Uint8Array): Uint8Array;
  /** The same signature by @noble/ed25519, for the cross-check at open only (Ed25519 is deterministic). */
  signIndependently(message: Uint8Array): Uint8Array;
}

/** Load the key in `keyDir`, generating it (and the directory, 0700) if there is none. */
export function loadOrCreateSigningKey(keyDir: string): SigningKey {
  mkdirSync(keyDir, { recursive: true, mode: 0o700 });
  checkKeyDir(keyDir);
  const keyPath = join(keyDir, KEY_FILE);
  let pem = readKeyFile(keyPath);
  if (pem === null) {
    createKeyFile(keyDir, keyPath);
    pem = readKeyFile(keyPath);
    if (pem === null) throw new ReceiptLedgerError('KEY_INVALID', `${keyPath} vanished right after it was created`);
  }
  const key = parseKey(pem, keyPath);
  writePublicFiles(keyDir, key.publicKeyPem, key.publicKeyHex);
  return key;
}

function euid(): number {
  return process.geteuid?.() ?? -1;
}

function checkKeyDir(dir: string): void {
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new ReceiptLedgerError('KEY_DIR_UNSAFE', `${dir} is not a directory (a symbolic link is not accepted)`);
  if (st.uid !== euid() && st.uid !== 0) throw new ReceiptLedgerError('KEY_DIR_UNSAFE', `${dir} is owned by uid ${st.uid}, not by this user or root`);
  if ((st.mode & 0o022) !== 0) {
    throw new ReceiptLedgerError('KEY_DIR_UNSAFE', `${dir} is writable by group or other (mode ${(st.mode & 0o777).toString(8)}); the key file could be replaced`);
  }
}

/** The key file's text, or null when there is none. Checks are made on the open descriptor. */
function readKeyFile(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new ReceiptLedgerError('KEY_NOT_REGULAR_FILE', `${path} is a symbolic link`);
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new ReceiptLedgerError('KEY_NOT_REGULAR_FILE', `${path} is not a regular file`);
    if (st.uid !== euid()) throw new ReceiptLedgerError('KEY_WRONG_OWNER', `${path} is owned by uid ${st.uid}; the agent runs as uid ${euid()}`);
    if ((st.mode & 0o077) !== 0) {
      throw new ReceiptLedgerError('KEY_PERMISSIONS_TOO_OPEN', `${path} has mode ${(st.mode & 0o777).toString(8)}; it must be 600 (no group or other bits)`);
    }
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Write a fresh key whole under a temporary name, then link it into place (never over an existing key). */
function createKeyFile(dir: string, path: string): void {
  const seed = randomBytes(32);
  const pem = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })
    .export({ format: 'pem', type: 'pkcs8' })
    .toString();
  seed.fill(0);
  const tmp = join(dir, `.${KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}`);
  writeSyncedFile(tmp, pem, constants.O_EXCL, 0o600);
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another process made one first: use theirs
  } finally {
    unlinkSync(tmp);
  }
  fsyncDir(dir);
}

function parseKey(pem: string, path: string): SigningKey {
  let jwk: { crv?: string; d?: string; x?: string };
  let publicKeyPem: string;
  let priv: ReturnType<typeof createPrivateKey>;
  try {
    priv = createPrivateKey(pem);
    if (priv.asymmetricKeyType !== 'ed25519') throw new Error(`key type ${String(priv.asymmetricKeyType)}`);
    jwk = priv.export({ format: 'jwk' });
    publicKeyPem = createPublicKey(priv).export({ format: 'pem', type: 'spki' }).toString();
  } catch (e) {
    throw new ReceiptLedgerError('KEY_INVALID', `${path} is not an Ed25519 PKCS#8 PEM key (${(e as Error).message})`);
  }
  const secretKey = new Uint8Array(Buffer.from(jwk.d ?? '', 'base64url'));
  const opensslPublic = new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url'));
  if (secretKey.length !== 32) throw new ReceiptLedgerError('KEY_INVALID', `${path}: the seed is not 32 bytes`);
  const publicKey = ed.getPublicKey(secretKey);
  // Two implementations derive the public key; they must agree before either signs anything.
  if (Buffer.compare(Buffer.from(publicKey), Buffer.from(opensslPublic)) !== 0) {
    throw new ReceiptLedgerError('KEY_INVALID', `${path}: OpenSSL and @noble/ed25519 derive different public keys`);
  }
  const publicKeyHex = Buffer.from(publicKey).toString('hex');
  return {
    publicKey,
    keyId: keyIdOf(publicKey),
    publicKeyPem,
    publicKeyHex,
    keyPath: path,
    sign: (message) => opensslSign(null, message, priv),
    signIndependently: (message) => ed.sign(message, secretKey),
  };
}

function writePublicFiles(dir: string, pem: string, hex: string): void {
  for (const [name, text] of [
    [PUBLIC_PEM_FILE, pem],
    [PUBLIC_HEX_FILE, hex + '\n'],
  ] as const) {
    const path = join(dir, name);
    let current: string | null = null;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      current = null;
    }
    if (current === text) continue;
    const tmp = `${path}.${process.pid}.tmp`;
    writeSyncedFile(tmp, text, constants.O_TRUNC, 0o644);
    renameSync(tmp, path);
  }
  fsyncDir(dir);
}
