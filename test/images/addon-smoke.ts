// Runs INSIDE the worldline image (bind-mounted at /app/dist/test/images/addon-smoke.js, so its
// import of ../../native/index.js is the image's compiled addon wrapper): loads the addon and uses the
// kernel interfaces the node-agent stands on, opens an SQLite database with the image's better-sqlite3
// (built against this Node's ABI, unlike the N-API addon), then prints one JSON report on stdout. Needs
// root in a privileged container and a writable directory (argv[2]) on a filesystem with idmapped mounts.
import { closeSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as native from '../../native/index.js';

const MAP = [{ inside: 0, outside: 200000, count: 65536 }];

function smoke(dir: string): Record<string, unknown> {
  const lower = join(dir, 'lower');
  const mapped = join(dir, 'mapped');
  const upper = join(dir, 'upper');
  const work = join(dir, 'work');
  const merged = join(dir, 'merged');
  for (const d of [lower, mapped, upper, work, merged]) mkdirSync(d);
  writeFileSync(join(lower, 'owned'), 'lower\n');
  chownSync(join(lower, 'owned'), 1000, 1000);
  const userns = native.createUserNamespace(MAP, MAP);
  try {
    native.mountIdmapped(lower, mapped, userns, { readonly: true, recursive: false });
  } finally {
    closeSync(userns);
  }
  const mappedUid = native.statx(native.AT_FDCWD, join(mapped, 'owned'), 0).uid;
  native.mountOverlay(merged, { lower: [mapped], upper, work, extra: ['redirect_dir=off', 'metacopy=off', 'index=off'] });
  writeFileSync(join(merged, 'new'), 'upper\n');
  const overlayWrote = readFileSync(join(upper, 'new'), 'utf8') === 'upper\n';
  native.umount2(merged, native.MNT_DETACH);
  native.umount2(mapped, native.MNT_DETACH);
  const db = new Database(':memory:');
  const sqlite = (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
  db.close();
  return {
    sqlite,
    nodeVersion: process.version,
    abi: process.versions.modules,
    uid: process.getuid?.(),
    namespaces: Object.keys(native.nsIds('self')).sort(),
    idmappedUid: mappedUid,
    overlayWrote,
  };
}

const dir = process.argv[2];
if (dir === undefined) {
  process.stderr.write('usage: node addon-smoke.js WRITABLE_DIR\n');
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(smoke(dir))}\n`);
