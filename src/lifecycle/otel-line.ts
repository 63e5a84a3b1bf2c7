/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The OpenTelemetry JS release line forkwatch runs on: 2.x or 3.x. forkwatch's dependency ranges take either line
 * (package.json), so in an app with its own SDK the copies it resolves are the app's, and their line is the app's.
 *
 * What differs between the lines for register: 3.x has no @opentelemetry/sdk-trace-base (its successor,
 * @opentelemetry/sdk-trace, came in 2.9), moved the logs API into @opentelemetry/api 1.10, and gave sdk-logs a
 * stable version. The versions of the optional peers it names for the user to install follow the line found here.
 */
import { readFileSync } from 'node:fs';

export type OtelLine = 2 | 3;

/** forkwatch's optional peer dependencies (package.json's peerDependenciesMeta, kept equal by a test). */
export const OPTIONAL_PEERS = [
  '@opentelemetry/api-logs',
  '@opentelemetry/exporter-logs-otlp-grpc',
  '@opentelemetry/exporter-logs-otlp-http',
  '@opentelemetry/exporter-logs-otlp-proto',
  '@opentelemetry/exporter-metrics-otlp-grpc',
  '@opentelemetry/exporter-metrics-otlp-http',
  '@opentelemetry/exporter-metrics-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-grpc',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-zipkin',
  '@opentelemetry/sdk-logs',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/sdk-trace-base',
] as const;
export type OptionalPeer = (typeof OPTIONAL_PEERS)[number];

/** Peers versioned 0.x (experimental) on a line: they follow @opentelemetry/instrumentation's version there. */
const EXPERIMENTAL_ON: Record<OtelLine, (name: OptionalPeer) => boolean> = {
  2: name => name.includes('-otlp-') || name === '@opentelemetry/sdk-logs' || name === '@opentelemetry/api-logs',
  3: name => name.includes('-otlp-'),
};

/** The version of @opentelemetry/core that forkwatch resolves (the SDK's own report of itself). */
function coreVersion(): string {
  const { SDK_INFO } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  return String(SDK_INFO['telemetry.sdk.version'] ?? '');
}

/** The line of the OpenTelemetry SDK packages forkwatch resolves: 3 from 3.x on, else 2. */
export function otelLine(): OtelLine {
  return Number.parseInt(coreVersion(), 10) >= 3 ? 3 : 2;
}

/** The installed version of a package forkwatch resolves, read from its package.json; undefined if unreadable. */
export function resolvedVersion(name: string): string | undefined {
  try {
    const entry = require.resolve(name).replace(/\\/g, '/');
    const folder = `/node_modules/${name}/`;
    const at = entry.lastIndexOf(folder);
    if (at === -1) return undefined;
    const manifest = JSON.parse(readFileSync(`${entry.slice(0, at + folder.length)}package.json`, 'utf8'));
    return typeof manifest.version === 'string' ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

/** `name@range` to install beside the app's SDK: the range of the app's line (`~0.301.2`, `^3.1.1`). */
export function peerInstallHint(name: OptionalPeer): string {
  const line = otelLine();
  if (EXPERIMENTAL_ON[line](name)) {
    const version = resolvedVersion('@opentelemetry/instrumentation');
    return version ? `${name}@~${version}` : name;
  }
  const version = coreVersion();
  return version ? `${name}@^${version}` : name;
}
