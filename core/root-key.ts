// Names the node store derives from a Root: the root key (the name of its live/ mapping) and the
// generation ids (directory names under generations/). Both are pure functions of their inputs, so an
// adoption interrupted by a crash names the same directories when it is recovered.
import { sha256Hex } from './digest.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_READABLE_KEY = 63;

/** A Root's name is a Kubernetes object name: a DNS-1123 subdomain of at most 253 characters. */
export function isValidRootName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && DNS_SUBDOMAIN.test(name);
}

/**
 * The root key: the name itself when it is at most 63 characters, else its first 50 characters and 12
 * hex characters of its SHA-256, so every key fits a file name with room for a generation suffix.
 */
export function rootKeyFor(name: string): string {
  if (!isValidRootName(name)) throw new TypeError(`not a valid root name: ${JSON.stringify(name)}`);
  if (name.length <= MAX_READABLE_KEY) return name;
  return `${name.slice(0, 50)}-${sha256Hex(name).slice(0, 12)}`;
}

const GENERATION_ID = /^([^_]+)_g([1-9][0-9]*)_([0-9a-f]{16})$/;

/**
 * The root key and generation number a generation id names (generationIdFor's inverse), or undefined for a
 * name generationIdFor never makes. A root key never holds '_', so the split is exact.
 */
export function parseGenerationId(id: string): { rootKey: string; generation: number } | undefined {
  const m = GENERATION_ID.exec(id);
  const generation = m ? Number(m[2]) : NaN;
  return m && Number.isSafeInteger(generation) ? { rootKey: m[1]!, generation } : undefined;
}

/** Generation directory name: root key, generation number and the start of the payload digest. */
export function generationIdFor(rootKey: string, generation: number, digest: string): string {
  if (!Number.isSafeInteger(generation) || generation < 1) throw new TypeError(`bad generation number ${generation}`);
  const hex = digest.startsWith('sha256:') ? digest.slice(7) : digest;
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`bad digest ${digest}`);
  return `${rootKey}_g${generation}_${hex.slice(0, 16)}`;
}
