// A second process for the store's kernel tests. argv: <command> <store dir> [...]
//   open                          try to open the store; print {"ok":true} or {"code":...}
//   adopt <name> <path> <step>    adopt (for the Root object uid uid-of-<name>), and SIGKILL this process right
//                                 after <step> (a crash)
import { adoptRoot } from '../../node-agent/store/adopt-root.js';
import { openStore } from '../../node-agent/store/open-store.js';
import { StoreError } from '../../node-agent/store/store-errors.js';

const [command, dir, name, hostPath, crashAfter] = process.argv.slice(2);
try {
  const { store } = await openStore({ dir: dir! });
  if (command === 'adopt') {
    await adoptRoot(store, { name: name!, hostPath: hostPath!, objectUid: `uid-of-${name!}` }, {
      afterStep: (step) => {
        if (step === crashAfter) process.kill(process.pid, 'SIGKILL');
      },
    });
  }
  console.log(JSON.stringify({ ok: true }));
  store.close();
} catch (e) {
  console.log(JSON.stringify(e instanceof StoreError ? { code: e.code, message: e.message } : { error: String(e) }));
  process.exitCode = 1;
}
