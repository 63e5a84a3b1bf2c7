/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How long `forkwatch probe` takes against each hostile endpoint of test/probe/fixtures/hostile-cases.ts, at its
 * default settings (the built binary, human output, `--notify-tool notify --bearer …`):
 *
 *   npx tsx bench/probe-hostile.ts [--cli build/src/cli/main.js] [--only <text>] [--parallel 4]
 *
 * One line per case: the wall time, the exit code (and the documented one), and what went wrong in the output (a
 * line that reads as a verdict but the last, a raw control character, a request that reached the other origin).
 * `--cli` points at another build (an older commit's) to compare; `--show` prints each output too (escaped).
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { HOSTILE_CASES, HOSTILE_TOKEN } from '../test/probe/fixtures/hostile-cases';
import { startHostileServer } from '../test/probe/fixtures/hostile-server';

const { values } = parseArgs({
  options: {
    cli: { type: 'string', default: join(__dirname, '..', 'build', 'src', 'cli', 'main.js') },
    only: { type: 'string', default: '' },
    parallel: { type: 'string', default: '4' },
    show: { type: 'boolean', default: false },
  },
});

function run(url: string): Promise<{ ms: number; code: number; stdout: string; stderr: string }> {
  const started = performance.now();
  const args = [values.cli, 'probe', url, '--notify-tool', 'notify', '--bearer', HOSTILE_TOKEN];
  return new Promise(resolve => {
    execFile(process.execPath, args, { maxBuffer: 16 << 20, timeout: 180_000 }, (error, stdout, stderr) => {
      const code = typeof error?.code === 'number' ? error.code : error ? -1 : 0;
      resolve({ ms: Math.round(performance.now() - started), code, stdout, stderr });
    });
  });
}

/** What is wrong with an output: forged verdict lines, raw control characters. */
function flaws(stdout: string, stderr: string): string[] {
  const out: string[] = [];
  const verdicts = stdout.split('\n').filter(l => /^\s*verdict:/.test(l));
  if (verdicts.length > 1) out.push(`${verdicts.length} verdict lines`);
  if (/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/.test(stdout + stderr)) out.push('raw control characters');
  return out;
}

async function main(): Promise<void> {
  const caught: string[] = [];
  const catcher = createServer((req, res) => {
    caught.push(`${req.method} ${req.headers.authorization ?? ''}`);
    res.writeHead(500).end();
  });
  await new Promise<void>(resolve => catcher.listen(0, '127.0.0.1', resolve));
  const catcherUrl = `http://localhost:${(catcher.address() as { port: number }).port}/elsewhere`;
  const cases = HOSTILE_CASES.filter(c => c.name.includes(values.only));
  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
      const server = await startHostileServer(c.server(catcherUrl));
      const result = await run(server.url);
      await server.close();
      const wrong = flaws(result.stdout, result.stderr);
      const exit = result.code === c.exit ? `exit ${result.code}` : `exit ${result.code} (documented ${c.exit})`;
      process.stdout.write(
        `${c.name}: ${(result.ms / 1000).toFixed(1)} s, ${exit}${wrong.length ? `; ${wrong.join(', ')}` : ''}\n`,
      );
      if (values.show) process.stdout.write(`${JSON.stringify(result.stdout + result.stderr)}\n`);
    }
  };
  await Promise.all(Array.from({ length: Number(values.parallel) }, worker));
  process.stdout.write(`requests that reached the other origin: ${caught.length ? caught.join('; ') : 'none'}\n`);
  catcher.close();
}

main().catch(error => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
