/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `forkwatch pack`: renders the alerting pack from a config file, from the installed package (build/pack, bundled
 * by scripts/build.mjs) or a clone (`npm run pack`).
 *
 *   forkwatch pack --config forkwatch.config.json --out forkwatch-pack
 *
 * Paths are relative to where the command runs. Every config problem is one line on stderr, and nothing is written
 * then; warnings (a label the Collector config cannot set) are lines too, and do not stop the render.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ruleFiles } from './alerts/rule-files';
import { renderPack } from './compose';
import { ConfigFileError, loadUserConfig } from './config/load';
import { promqlError, selectorProblem } from './config/promql-check';
import { ConfigError, type UserConfig, resolveConfig } from './config/resolve';
import { collectorWarnings } from './outputs/otel-collector';

export const PACK_USAGE = `Usage: forkwatch pack [--config <file.json>] [--out <dir>]

Renders forkwatch's alerting pack for your setup: Prometheus rule files, a PrometheusRule and a PodMonitor, Grafana
dashboards and provisioning, Sloth, Pyrra and OpenSLO specs for the two SLOs, a jsonnet mixin, and an OpenTelemetry
Collector config.

Options:
  --config <file>  the config (JSON; see the schema forkwatch/pack-config.schema.json); default: the defaults
  --out <dir>      where to write (default: forkwatch-pack)
  -h, --help       show this help
`;

export interface PackIo {
  cwd: string;
  out(line: string): void;
  err(line: string): void;
}

const USAGE_ERROR = 64;
const CONFIG_ERROR = 1;

/** Exit code: 0 rendered, 1 config problems (one line each), 64 usage. */
export function runPackCli(argv: readonly string[], io: PackIo): number {
  let configFile: string | undefined;
  let outDir = 'forkwatch-pack';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-h' || a === '--help') {
      io.out(PACK_USAGE);
      return 0;
    }
    const [flag, inline] =
      a.startsWith('--') && a.includes('=')
        ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
        : [a, undefined];
    if (flag !== '--config' && flag !== '--out') {
      io.err(`forkwatch pack: unknown argument ${JSON.stringify(a)}\n\n${PACK_USAGE}`);
      return USAGE_ERROR;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') {
      io.err(`forkwatch pack: ${flag} needs a value`);
      return USAGE_ERROR;
    }
    if (flag === '--config') configFile = value;
    else outDir = value;
  }

  const where = configFile ? resolve(io.cwd, configFile) : 'the defaults';
  let user: UserConfig = {};
  try {
    if (configFile) user = loadUserConfig(resolve(io.cwd, configFile));
  } catch (error) {
    if (!(error instanceof ConfigFileError)) throw error;
    io.err(`forkwatch pack: ${error.message}`);
    return CONFIG_ERROR;
  }
  let config: ReturnType<typeof resolveConfig>;
  try {
    config = resolveConfig(user);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) io.err(`forkwatch pack: ${where}: ${problem}`);
    return CONFIG_ERROR;
  }
  const problems = promqlProblems(config);
  if (problems.length > 0) {
    for (const problem of problems) io.err(`forkwatch pack: ${where}: ${problem}`);
    return CONFIG_ERROR;
  }
  for (const warning of collectorWarnings(config)) io.err(`forkwatch pack: warning: ${warning}`);

  const out = resolve(io.cwd, outDir);
  for (const [name, content] of renderPack(config)) {
    const path = join(out, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    io.out(`wrote ${path}`);
  }
  return 0;
}

/** The selector, then every rendered expression (a selector can parse alone and still break one). */
function promqlProblems(config: ReturnType<typeof resolveConfig>): string[] {
  const selector = selectorProblem(config.selector);
  if (selector) return [selector];
  const problems: string[] = [];
  for (const file of ruleFiles(config))
    for (const group of file.groups)
      for (const rule of group.rules) {
        const error = promqlError(rule.expr);
        if (error) problems.push(`${rule.alert ?? rule.record}: the rendered expression is ${error}`);
      }
  return problems;
}

export default runPackCli;
