/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The Prometheus scrape job for `forkwatch exporter`, relabeled as blackbox_exporter's multi-target pattern: the
 * MCP endpoints are the job's targets, each scrape goes to the exporter's /probe with `target` and `module`, and
 * the endpoint's URL becomes `instance`. Plus a starting config file for the exporter.
 */
import type { ForkwatchConfig } from '../config/config';
import { seconds } from '../config/units';

export function probeScrapeConfig(config: ForkwatchConfig): Record<string, unknown> {
  const p = config.probe;
  return {
    scrape_configs: [
      {
        job_name: p.job,
        metrics_path: '/probe',
        params: { module: [p.module] },
        scrape_interval: p.interval,
        scrape_timeout: p.scrapeTimeout,
        static_configs: [{ targets: p.targets }],
        relabel_configs: [
          { source_labels: ['__address__'], target_label: '__param_target' },
          { source_labels: ['__param_target'], target_label: 'instance' },
          { target_label: '__address__', replacement: p.exporterAddress },
        ],
      },
      // The exporter's own metrics (probes run, refused, in flight, memory).
      { job_name: `${p.job}-exporter`, static_configs: [{ targets: [p.exporterAddress] }] },
    ],
  };
}

/** `forkwatch exporter --config` for the module the scrape job names; secrets come from the environment. */
export function exporterConfigExample(config: ForkwatchConfig): Record<string, unknown> {
  const p = config.probe;
  return {
    modules: {
      [p.module]: {
        timeoutMs: 5000,
        resumes: 10,
        // Half a second under the scrape timeout; the exporter also reads Prometheus's timeout header.
        deadlineMs: seconds(p.scrapeTimeout) * 1000 - 500,
        // A module with credentials names where they may go: the scrape job's endpoints, and nowhere else.
        targets: [...new Set(p.targets.map(targetPattern))],
        bearer: { env: 'FORKWATCH_PROBE_TOKEN' },
      },
    },
    concurrency: 4,
  };
}

/** An endpoint as an exporter `targets` entry: its origin and path (no query, no credentials). */
function targetPattern(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.origin}${url.pathname}`;
  } catch {
    return endpoint;
  }
}
