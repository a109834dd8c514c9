// Field schemas shared by the four isolation records: digests, bounded labels, targets and the ordered,
// duplicate-free lists. A list check names the offending element and tags its issue with a problem code
// (`params.problem`) so that record parsing can report it by name.
import { z } from 'zod';
import { ISOLATION_CONTROLS, TARGET_ARCHES, TARGET_OSES } from './vocabulary.js';

export const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;

/** A `sha256:` identity (64 lowercase hex characters). */
export function digest(description: string) {
  return z.string().regex(DIGEST_RE, 'must be sha256: followed by 64 lowercase hex characters').describe(description);
}

/** A bounded, printable, whitespace-free label reported by a backend (name, version, execution id). */
export function label(description: string) {
  return z
    .string()
    .min(1)
    .max(256)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without whitespace')
    .describe(description);
}

export const TargetSchema = z
  .strictObject({
    os: z.enum(TARGET_OSES).describe('Operating system (kubernetes.io/os value).'),
    arch: z.enum(TARGET_ARCHES).describe('CPU architecture (kubernetes.io/arch value).'),
  })
  .describe('Exact platform the stage runs on.');
export type IsolationTarget = z.infer<typeof TargetSchema>;

/**
 * A list whose elements are unique and appear in the order of `canonical`. The first offending element is
 * named, with its index as the issue path.
 */
export function orderedUniqueList<const T extends string>(
  canonical: readonly T[],
  what: string,
  description: string,
) {
  return z
    .array(z.enum(canonical as unknown as [T, ...T[]]))
    .max(canonical.length)
    .superRefine((items, ctx) => {
      const seen = new Set<string>();
      let previousRank = -1;
      for (const [i, item] of items.entries()) {
        if (seen.has(item)) {
          ctx.addIssue({ code: 'custom', path: [i], message: `duplicate ${what} '${item}' at index ${i}`, params: { problem: 'DUPLICATE' } });
          return;
        }
        seen.add(item);
        const rank = canonical.indexOf(item);
        if (rank < previousRank) {
          ctx.addIssue({
            code: 'custom',
            path: [i],
            message: `${what} '${item}' at index ${i} comes after '${items[i - 1]}'; canonical order is ${canonical.join(', ')}`,
            params: { problem: 'NON_CANONICAL_ORDER' },
          });
          return;
        }
        previousRank = rank;
      }
    })
    .meta({ uniqueItems: true })
    .describe(description);
}

/** A set of controls in canonical order. */
export function controlList(description: string) {
  return orderedUniqueList(ISOLATION_CONTROLS, 'control', description);
}
