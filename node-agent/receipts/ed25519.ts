// @noble/ed25519 with its synchronous SHA-512 wired to node:crypto. The library ships without a sync
// hash; importing this module sets it once, before any sign or getPublicKey call.
import { createHash } from 'node:crypto';
import * as ed from '@noble/ed25519';

ed.hashes.sha512 = (message: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(createHash('sha512').update(message).digest());

export { ed };
