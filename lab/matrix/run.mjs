/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The ground-truth scenario matrix (issue 45): runs every runnable cell (lab/matrix/cells.mjs) on the real SDK
// and forkwatch, judges each (lab/matrix/oracle.mjs) and writes the table to docs/matrix.md.
//
//   node lab/matrix/run.mjs                       the whole matrix, table to docs/matrix.md (npm run matrix)
//   node lab/matrix/run.mjs --sample 30 --seed 45 a seeded sample (what CI runs), no table written
//   options: --lanes N (worker processes, each with its own server processes; default 2), --json FILE (verdicts),
//            --table FILE (where the table goes), --only REGEX (cells whose name matches),
//            --render FILE (write the table again from a --json FILE of a whole run)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allCombinations, runnableCells, sampleCells } from './cells.mjs';
import { judge } from './oracle.mjs';
import { renderTable } from './table.mjs';

const here = dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const args = { lanes: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    args[key] = ['sample', 'seed', 'lanes'].includes(key) ? Number(argv[i + 1]) : argv[i + 1];
  }
  return args;
}

function runWorker(cells, out) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'worker.mjs')], {
      env: { ...process.env, MATRIX_WORKER: JSON.stringify({ cells, out }) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('exit', code =>
      code === 0 ? resolve(JSON.parse(readFileSync(out, 'utf8'))) : reject(new Error(`matrix worker: ${code}`)),
    );
  });
}

/** Runs the cells on `lanes` workers (cells dealt in turn) and returns the verdicts, in the cells' order. */
export async function runMatrix(cells, { lanes = 2 } = {}) {
  const work = mkdtempSync(join(tmpdir(), 'forkwatch-matrix-'));
  try {
    const slices = Array.from({ length: Math.min(lanes, cells.length) }, (_, l) =>
      cells.filter((_, i) => i % lanes === l),
    );
    const results = await Promise.all(slices.map((slice, l) => runWorker(slice, join(work, `lane${l}.json`))));
    const byName = new Map(results.flatMap(r => r.records).map(r => [r.cell.name, r]));
    return cells.map(c => judge(byName.get(c.name)));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  if (args.render) {
    // Writes the table again from a run's --json output (the table's wording changed, not the run).
    const { ms, verdicts, lanes } = JSON.parse(readFileSync(args.render, 'utf8'));
    const table = renderTable(verdicts, {
      combinations: allCombinations(),
      ms,
      lanes: lanes ?? args.lanes,
      whole: true,
    });
    writeFileSync(args.table ?? join(here, '../../docs/matrix.md'), table);
    process.exit(0);
  }
  let cells = args.sample ? sampleCells(args.sample, args.seed ?? 45) : runnableCells();
  if (args.only) cells = cells.filter(c => new RegExp(args.only).test(c.name));
  const started = Date.now();
  const verdicts = await runMatrix(cells, { lanes: args.lanes });
  const ms = Date.now() - started;
  if (args.json) writeFileSync(args.json, JSON.stringify({ ms, lanes: args.lanes, verdicts }, null, 1));
  const whole = !args.sample && !args.only;
  const table = renderTable(verdicts, { combinations: allCombinations(), ms, lanes: args.lanes, whole });
  if (whole || args.table) writeFileSync(args.table ?? join(here, '../../docs/matrix.md'), table);
  const violations = verdicts.filter(v => v.violations.length);
  process.stdout.write(
    `matrix: ${verdicts.length} cells in ${(ms / 1000).toFixed(0)} s, ${verdicts.filter(v => v.lossy).length} lossy, ` +
      `${violations.length} with violations${violations.length ? `:\n${violations.map(v => `  ${v.name} ${v.violations.join(',')}`).join('\n')}` : ''}\n`,
  );
}
