#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The `forkwatch` command: `forkwatch probe <url>`, `drill`, `exporter`, `pack`, `--version`, `--help`. */
import { runDrillCli } from './drill/cli';
import { runExporterCli } from './exporter/cli';
import { runProbeCli } from './probe/cli';
import { USAGE_ERROR } from './probe/report';
import { join } from 'node:path';
import { PACKAGE_VERSION } from '../shared/version';

const USAGE = `Usage: forkwatch <command> [options]

Commands:
  probe <url>   test a live MCP endpoint for session resumability (forkwatch probe --help)
  pack          render the alerting pack (rules, dashboards, SLO specs, mixin) from a config (forkwatch pack --help)
  exporter      serve the probe to Prometheus, blackbox_exporter style (forkwatch exporter --help)
  drill         stand between your client and server and make a fork happen on your traffic (forkwatch drill --help)

Options:
  -v, --version print forkwatch's version
  -h, --help    show this help

The fork lab runs from a clone of the repository: npm ci && npm run lab
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'probe':
      return runProbeCli(rest);
    case 'pack':
      return runPack(rest);
    case 'exporter':
      return runExporterCli(rest);
    case 'drill':
      return runDrillCli(rest);
    case '-v':
    case '--version':
    case 'version':
      process.stdout.write(`${PACKAGE_VERSION}\n`);
      return 0;
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case undefined:
      process.stderr.write(USAGE);
      return USAGE_ERROR;
    default:
      process.stderr.write(`forkwatch: unknown command '${command}'\n\n${USAGE}`);
      return USAGE_ERROR;
  }
}

/** The pack is bundled apart (scripts/build.mjs): loaded only by this command, it costs the instrumentation nothing. */
function runPack(argv: readonly string[]): number {
  const bundle = join(__dirname, '../../pack/forkwatch-pack.js');
  const { runPackCli } = require(bundle) as {
    runPackCli(argv: readonly string[], io: { cwd: string; out(l: string): void; err(l: string): void }): number;
  };
  const line = (stream: NodeJS.WriteStream) => (l: string) => stream.write(`${l.replace(/\n$/, '')}\n`);
  return runPackCli(argv, { cwd: process.cwd(), out: line(process.stdout), err: line(process.stderr) });
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    code => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`forkwatch: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 2;
    },
  );
}
