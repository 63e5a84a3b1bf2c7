/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * kube-prometheus objects: one PrometheusRule with every forkwatch rule group, and a PodMonitor for the MCP pods.
 * test/alerts/outputs.test.ts validates them against the prometheus-operator CRD schemas.
 */
import { plainGroups, ruleFiles } from '../alerts/rule-files';
import type { ForkwatchConfig } from '../config/config';

export function prometheusRule(config: ForkwatchConfig): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'forkwatch', namespace: config.kubernetes.namespace, labels: config.kubernetes.labels },
    spec: { groups: ruleFiles(config).flatMap(f => plainGroups(f.groups)) },
  };
}

export function podMonitor(config: ForkwatchConfig): Record<string, unknown> {
  const k = config.kubernetes;
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PodMonitor',
    metadata: { name: 'forkwatch-mcp-servers', namespace: k.namespace, labels: k.labels },
    spec: {
      // The pod label whose value names the job (the README's Deployment sets app.kubernetes.io/name).
      jobLabel: k.jobLabel,
      // The pods usually live in the application's namespaces, not in the monitoring one.
      namespaceSelector: { any: true },
      selector: { matchLabels: k.podSelector },
      podMetricsEndpoints: [{ port: k.port, path: '/metrics', interval: k.interval }],
    },
  };
}
