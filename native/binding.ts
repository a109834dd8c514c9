// Loads worldline_native.node with createRequire. Works from the source tree (native/) and from the
// compiled tree (dist/native/), both of which resolve to native/build/Release.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { NativeBinding } from './types.js';

const candidates = [
  new URL('./build/Release/worldline_native.node', import.meta.url),
  new URL('../../native/build/Release/worldline_native.node', import.meta.url),
].map((u) => fileURLToPath(u));

function load(): NativeBinding {
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error(`worldline native addon not built (run native/build.sh); looked in: ${candidates.join(', ')}`);
  }
  const require = createRequire(import.meta.url);
  return require(found) as NativeBinding;
}

export const binding: NativeBinding = load();
