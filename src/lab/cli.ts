/**
 * `forkwatch lab`: runs the fork lab of a forkwatch source checkout (lab/run.mjs). The lab drives real MCP SDK
 * servers and clients, which are development dependencies, so it is not part of the published package.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export async function runLabCli(argv: string[]): Promise<number> {
  // build/src/lab/cli.js -> <checkout>/lab/run.mjs
  const script = join(__dirname, '..', '..', '..', 'lab', 'run.mjs');
  if (!existsSync(script)) {
    process.stderr.write('forkwatch lab runs from a clone of the forkwatch repository: `npm ci && npm run lab`\n');
    return 2;
  }
  return new Promise(resolve => {
    const child = spawn(process.execPath, [script, ...argv], { stdio: 'inherit' });
    child.on('exit', code => resolve(code ?? 1));
    child.on('error', () => resolve(2));
  });
}
