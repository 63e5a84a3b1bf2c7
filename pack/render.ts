/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `npm run pack` in a clone: the same command as `forkwatch pack` (pack/cli.ts), run by tsx, so a config may also
 * be a TypeScript file (`export default { ... }`). Paths are relative to where `npm run` was started (INIT_CWD).
 *   npm run pack -- --config forkwatch.config.json --out forkwatch-pack
 */
import { runPackCli } from './cli';

if (require.main === module) {
  process.exitCode = runPackCli(process.argv.slice(2), {
    cwd: process.env.npm_lifecycle_event === 'pack' ? (process.env.INIT_CWD ?? process.cwd()) : process.cwd(),
    out: line => process.stdout.write(`${line.replace(/\n$/, '')}\n`),
    err: line => process.stderr.write(`${line.replace(/\n$/, '')}\n`),
  });
}
