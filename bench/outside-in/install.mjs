/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Makes `dir` a package of its own whose node_modules/forkwatch holds a copy of the repository's build/ (with `src`
 * from another build if given), so `--import forkwatch/register` resolves as in an application. Its dependencies
 * resolve up the tree, from the repository's node_modules: one copy of each OpenTelemetry package. Without the
 * package.json, `forkwatch/register` would self-resolve to the repository's own build.
 */
export function installForkwatch(root, dir, srcBuild) {
  const at = join(dir, 'node_modules', 'forkwatch');
  mkdirSync(at, { recursive: true });
  cpSync(join(root, 'package.json'), join(at, 'package.json'));
  cpSync(join(root, 'build'), join(at, 'build'), { recursive: true });
  if (srcBuild) {
    rmSync(join(at, 'build', 'src'), { recursive: true, force: true });
    cpSync(srcBuild, join(at, 'build', 'src'), { recursive: true });
  }
  writeFileSync(join(dir, 'package.json'), '{ "name": "forkwatch-outside-in", "private": true }\n');
  return at;
}

/** The environment of every measured process: the NodeSDK preload runs, with no exporter to cost anything. */
export const exporterlessEnv = () => ({
  ...process.env,
  OTEL_TRACES_EXPORTER: 'none',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_LOGS_EXPORTER: 'none',
  OTEL_SDK_DISABLED: 'false',
});
