/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The lab client's configuration comes as JSON in LAB_CLIENT; its report goes to the file LAB_REPORT.
const { writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { assertFreshBuild } = require('./fresh-build.cjs');

function readConfig() {
  const config = JSON.parse(process.env.LAB_CLIENT ?? '{}');
  assertFreshBuild(config.forkwatchEntry);
  return {
    proxyUrl: config.proxyUrl,
    scenario: config.scenario ?? 'healthy',
    resumeTo: config.resumeTo ?? 'B',
    listens: config.listens ?? true,
    verdictTimeoutMs: config.verdictTimeoutMs ?? 1500,
    keepTalkingAfterMs: config.keepTalkingAfterMs ?? 0,
    metricsPort: config.metricsPort,
    resolveFrom: config.resolveFrom,
    sdkLine: config.sdk ?? 'v1',
    stack: config.stack,
    forkwatchEntry: config.forkwatchEntry ?? path.join(__dirname, '../build/src/index.js'),
    instrumentation: { verdictTimeoutMs: config.verdictTimeoutMs ?? 1500, ...config.instrumentation },
  };
}

/**
 * Loads MCP SDK modules as an app in `resolveFrom` would (a folder with its own node_modules, to test several
 * SDK versions). `esm` returns a dynamic import of the ESM build of the same file.
 */
function sdkLoader(resolveFrom, flavor = 'cjs') {
  const req = createRequire(path.join(resolveFrom ?? __dirname, 'resolve-from.js'));
  if (flavor === 'cjs') return spec => req(spec);
  return spec => import(pathToFileURL(req.resolve(spec).replace(/([\\/])dist\1cjs\1/, '$1dist$1esm$1')).href);
}

function writeReport(report) {
  writeFileSync(process.env.LAB_REPORT, JSON.stringify(report, null, 2));
}

module.exports = { readConfig, sdkLoader, writeReport };
