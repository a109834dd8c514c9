// npm run bench — runs every benchmark and prints a table. Not a test: nothing here asserts a time.
import { parseArgs } from 'node:util';
import { benchController } from './controller-throughput.bench.js';

const { values } = parseArgs({ options: { worlds: { type: 'string', default: '1000' } } });

async function main(): Promise<void> {
  const n = Number(values.worlds);
  console.log(`controller: ${n} Worlds created with a raw API client (32 in flight) vs. all of them carrying controller status`);
  const r = await benchController(n);
  console.table([
    { measure: 'create only (raw API writes)', seconds: r.createSeconds.toFixed(2), 'per world (ms)': ((r.createSeconds * 1000) / n).toFixed(2) },
    { measure: 'create → every status written', seconds: r.allStatusSeconds.toFixed(2), 'per world (ms)': ((r.allStatusSeconds * 1000) / n).toFixed(2) },
  ]);
  console.log(`ratio (status / create): ${r.ratio.toFixed(2)}×   controller peak RSS: ${r.controllerPeakRssMiB.toFixed(1)} MiB`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
