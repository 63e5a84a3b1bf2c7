/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Grafana's file provisioning for the dashboards (https://grafana.com/docs/grafana/latest/administration/provisioning/). */
import type { ForkwatchConfig } from '../config/config';

export function dashboardProvisioning(config: ForkwatchConfig): Record<string, unknown> {
  return {
    apiVersion: 1,
    providers: [
      {
        name: 'forkwatch',
        folder: 'Forkwatch',
        type: 'file',
        disableDeletion: false,
        // The JSON is generated: edits belong in the config, not in Grafana's UI.
        allowUiUpdates: false,
        updateIntervalSeconds: 60,
        options: { path: config.grafanaDashboardsPath, foldersFromFilesStructure: false },
      },
    ],
  };
}
