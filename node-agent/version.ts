// The node-agent's version, as it names itself in isolation observations (from package.json).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

function readVersion(): string {
  for (const up of ['..', join('..', '..')]) {
    try {
      const pkg = JSON.parse(readFileSync(join(import.meta.dirname, up, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'worldline' && pkg.version) return pkg.version;
    } catch {
      /* try the next level */
    }
  }
  return '0.0.0-unknown';
}

export const AGENT_VERSION = readVersion();
