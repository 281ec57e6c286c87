// Runs as the official CLI (OFFICIAL_CLI). tier-check starts its server leg as `<this file> server ... -o DIR`:
// that leg runs the real CLI, then copies the scenario folders under $OURS (an official/ folder this suite
// wrote) into DIR, beside the official run's own, before tier-check scores DIR. Every other command is the
// real CLI's.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const real = process.env.OFFICIAL_CLI;
const args = process.argv.slice(2);
if (args[0] === 'server' && process.env.OURS) {
  const done = spawnSync(process.execPath, [real, ...args], { stdio: 'inherit' });
  const out = args[args.indexOf('-o') + 1];
  for (const name of readdirSync(process.env.OURS)) {
    const from = join(process.env.OURS, name);
    if (statSync(from).isDirectory()) cpSync(from, join(out, name), { recursive: true });
  }
  process.exit(done.status ?? 1);
} else {
  await import(real);
}
