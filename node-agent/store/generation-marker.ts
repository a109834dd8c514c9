// marker.json beside each generation's payload: which root and generation number the payload is, and
// its manifest digest. Recovery and the routing check trust a payload only when its marker agrees with
// the database.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { temporarySibling, writeFileDurable } from './durable-fs.js';
import { markerPath, type StoreLayout } from './store-layout.js';

export const GenerationMarkerSchema = z.strictObject({
  format: z.literal('worldline.generation/v1'),
  rootKey: z.string().min(1),
  generation: z.number().int().positive(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  /**
   * A stacked generation (generation-stack.ts): the generation ids whose layers make its payload, topmost
   * first, the last a full generation. Absent: the payload is a full tree of its own.
   */
  layers: z.array(z.string().regex(/^[A-Za-z0-9._-]+$/)).min(1).max(64).optional(),
});

export type GenerationMarker = z.infer<typeof GenerationMarkerSchema>;

export async function writeMarker(layout: StoreLayout, genId: string, m: Omit<GenerationMarker, 'format'>): Promise<void> {
  const marker: GenerationMarker = { format: 'worldline.generation/v1', ...m };
  await writeFileDurable(markerPath(layout, genId), `${JSON.stringify(marker)}\n`);
}

/**
 * The marker put in place whole (a temporary file renamed over it) but not yet durable: the caller syncs
 * the returned path and the generation's directory with the rest of what it publishes (fsyncPaths), before
 * anything can depend on the marker (the exchange). Until then a crash may leave it missing or empty, and
 * a generation with such a marker is one recovery removes (never recorded, never live).
 */
export function placeMarker(layout: StoreLayout, genId: string, m: Omit<GenerationMarker, 'format'>): string {
  const marker: GenerationMarker = { format: 'worldline.generation/v1', ...m };
  const path = markerPath(layout, genId);
  const tmp = temporarySibling(path);
  writeFileSync(tmp, `${JSON.stringify(marker)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
  return path;
}

/** The marker of a generation (a small file, read synchronously), or undefined when missing or malformed. */
export function readMarker(layout: StoreLayout, genId: string): GenerationMarker | undefined {
  let text: string;
  try {
    text = readFileSync(markerPath(layout, genId), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = GenerationMarkerSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
