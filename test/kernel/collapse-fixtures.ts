// Shared setup for the collapse kernel tests: an adopted sample root and a hand-made candidate for it
// (the next tree is a copy of PRIME changed by the test, its delta the diff of the two walks).
import { chmod, chown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { diffManifests, manifestDigest, type Manifest } from '../../core/manifest.js';
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore, type Store } from '../../node-agent/store/open-store.js';
import { checkRouting } from '../../node-agent/store/routing.js';
import { walkTreeSync } from '../../node-agent/store/walk-tree-sync.js';
import { storeCandidate, type Candidate, type RootChange } from '../../node-agent/store/candidates.js';
import { makeSampleTree, run } from './store-fixtures.js';

export interface MadeCandidate {
  candidate: Candidate;
  base: { generation: number; digest: string };
  /** The digest of the next tree as the test built it. */
  nextDigest: string;
  nextManifest: Manifest;
}

/** Adopt a sample tree at `<dir>/project` as root "project". */
export async function adoptSample(store: Store, dir: string): Promise<string> {
  const host = join(dir, 'project');
  await makeSampleTree(host);
  await adoptRoot(store, { name: 'project', hostPath: host });
  return host;
}

/** The sample change: a modified, an added (in a new dir), a deleted file, a removed dir, a chown, a chmod. */
export async function sampleChange(next: string): Promise<void> {
  await writeFile(join(next, 'README.md'), '# sample, changed\n');
  await mkdir(join(next, 'docs'));
  await writeFile(join(next, 'docs/guide.md'), 'guide\n');
  await rm(join(next, 'src/lib/util.ts'));
  await rm(join(next, 'shared'), { recursive: true });
  await chown(join(next, 'empty'), 1000, 1000);
  await chmod(join(next, 'src/main.ts'), 0o600);
}

/** One Root's change for a candidate: PRIME copied, changed by `change`, the delta the diff of the two walks. */
export async function rootChangeOf(t: TestContext, store: Store, rootName: string, change: (next: string) => Promise<void>): Promise<{ change: RootChange; base: { generation: number; digest: string }; nextDigest: string; nextManifest: Manifest }> {
  const route = await checkRouting(store, rootName);
  const tmp = await mkdtemp(join(store.dir, '..', 'next-'));
  t.after(() => rm(tmp, { recursive: true, force: true }));
  const next = join(tmp, 'tree');
  await run('cp', ['-a', route.payloadPath, next]);
  await change(next);
  const base = walkTreeSync(route.payloadPath).manifest;
  const nextManifest = walkTreeSync(next).manifest;
  const diff = diffManifests(base, nextManifest);
  const changed = new Set([...diff.added, ...diff.modified]);
  const upsert = nextManifest.entries.filter((e) => changed.has(e.path));
  const b = base.root;
  const n = nextManifest.root;
  const rootChanged = !!b && !!n && (b.mode !== n.mode || b.uid !== n.uid || b.gid !== n.gid);
  const rc: RootChange = {
    root: rootName,
    rootKey: route.root.rootKey,
    baseGeneration: route.root.generation,
    baseDigest: route.root.digest,
    capture: {
      upsert,
      deleted: diff.deleted,
      ...(rootChanged && n ? { rootAttributes: n } : {}),
      rootChanged,
      added: diff.added.length,
      modified: diff.modified.length,
      upperFiles: upsert.filter((e) => e.type === 'file').map((e) => e.path),
      problems: [],
    },
    upperDir: next,
  };
  return { change: rc, base: { generation: route.root.generation, digest: route.root.digest }, nextDigest: manifestDigest(nextManifest), nextManifest };
}

export async function makeCandidate(t: TestContext, store: Store, rootName: string, change: (next: string) => Promise<void>): Promise<MadeCandidate> {
  const made = await rootChangeOf(t, store, rootName, change);
  const candidate = await storeCandidate(store.layout.candidates, [made.change]);
  return { candidate, base: made.base, nextDigest: made.nextDigest, nextManifest: made.nextManifest };
}

/** Nothing a collapse leaves behind: staging empty, no prepared link in live/, only recorded generations. */
export async function leftovers(store: Store): Promise<string[]> {
  const found: string[] = [];
  for (const s of await readdir(store.layout.staging)) found.push(`staging/${s}`);
  for (const l of await readdir(store.layout.live)) if (l.startsWith('.')) found.push(`live/${l}`);
  for (const l of await readdir(store.dir)) if (l === 'live.next') found.push(l);
  const recorded = new Set((store.db.prepare('SELECT id FROM generations').all() as { id: string }[]).map((r) => r.id));
  for (const g of await readdir(store.layout.generations)) if (!recorded.has(g)) found.push(`generations/${g}`);
  return found;
}

/**
 * A store at `<scratch>/store` with the sample root adopted and a candidate of the sample change, closed
 * again so that another process (collapse-child.ts) can open it. `childArgs(step)` is that child's argv.
 */
export async function closedStoreWithCandidate(t: TestContext, scratchDir: string): Promise<{ dir: string; made: MadeCandidate; childArgs: (step: string) => string[] }> {
  const dir = join(scratchDir, 'store');
  const { store } = await openStore({ dir });
  let made: MadeCandidate;
  try {
    await adoptSample(store, scratchDir);
    made = await makeCandidate(t, store, 'project', sampleChange);
  } finally {
    store.close();
  }
  return { dir, made, childArgs: (step) => [dir, 'project', made.candidate.dir, String(made.base.generation), made.base.digest, step] };
}
