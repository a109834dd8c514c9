import Database from 'better-sqlite3';
import { migrate } from '/work/main/dist/node-agent/store/store-schema.js';
const db = new Database('/var/tmp/ins-test.db'); db.pragma('journal_mode = WAL');
migrate(db);
const entries = [];
for (let i = 0; i < 100000; i++) entries.push({ path: `d${String(Math.floor(i/100)).padStart(4,'0')}/f${String(i).padStart(6,'0')}`, type: 'file', mode: 0o644, uid: 1000, gid: 1000, size: 10, sha256: 'a'.repeat(64) });
let t = performance.now();
const json = JSON.stringify({ entries });
db.transaction(() => db.prepare(`INSERT INTO generation_entries (generation_id, path, type, mode, uid, gid, size, sha256, target)
     SELECT ?, e.value ->> '$.path', e.value ->> '$.type', e.value ->> '$.mode', e.value ->> '$.uid', e.value ->> '$.gid',
            e.value ->> '$.size', e.value ->> '$.sha256', e.value ->> '$.target' FROM json_each(?, '$.entries') e`).run('g1', json))();
console.log('json_each insert 100k', performance.now() - t);
