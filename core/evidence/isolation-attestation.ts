// The subjects of a World's isolation statements (issue 13, item 1), so that each signed statement binds
// exact bytes: the observation is about the World's base (the canonical document of the generations it
// forked, whose SHA-256 is the observation's subject), the decision is about the observation (its
// canonical JSON, whose SHA-256 is the decision's observationIdentity). Size and media type come with each.
// Pure.
import { canonicalJson } from '../canonical-json.js';
import { DIGEST_PREFIX, sha256Hex } from '../digest.js';
import type { IsolationObservation } from '../isolation/records.js';
import type { Subject } from './statement.js';

export const WORLD_BASE_MEDIA_TYPE = 'application/vnd.worldline.world-base+json';
export const OBSERVATION_MEDIA_TYPE = 'application/vnd.worldline.isolation-observation+json';

export interface BaseEntryRef {
  root: string;
  generation: number;
  digest: string;
}

/** The canonical bytes of a World's base: what an agent-stage request and observation name as subject. */
export function worldBaseBytes(base: readonly BaseEntryRef[]): Buffer {
  return Buffer.from(canonicalJson({ format: 'worldline.world-base/v1', base: [...base].sort((a, b) => (a.root < b.root ? -1 : 1)) }));
}

function subjectOf(name: string, bytes: Buffer, mediaType: string): Subject {
  return { name, digest: DIGEST_PREFIX + sha256Hex(bytes), size: bytes.length, mediaType };
}

export function worldBaseSubject(worldRef: string, base: readonly BaseEntryRef[]): Subject {
  return subjectOf(`${worldRef}/base`, worldBaseBytes(base), WORLD_BASE_MEDIA_TYPE);
}

export function observationSubject(worldRef: string, observation: IsolationObservation): Subject {
  return subjectOf(`${worldRef}/isolation-observation`, Buffer.from(canonicalJson(observation)), OBSERVATION_MEDIA_TYPE);
}
