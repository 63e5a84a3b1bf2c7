/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { renderDashboards } from '../../pack/dashboards/render';
import { DASHBOARDS_DIR } from './dashboard-model';

const root = join(__dirname, '../..');

describe('generated dashboard JSON', () => {
  const rendered = renderDashboards();

  test.each([...rendered.keys()])('%s is committed as the generator writes it (npm run dashboards)', name => {
    const committed = readFileSync(join(DASHBOARDS_DIR, name), 'utf8');
    expect(committed, `dashboards/${name} is stale: run npm run dashboards`).toBe(rendered.get(name));
  });

  test('every JSON file in dashboards/ comes from the generator', () => {
    const files = readdirSync(DASHBOARDS_DIR).filter(f => f.endsWith('.json'));
    expect(files.sort()).toEqual([...rendered.keys()].sort());
  });

  test('the overview is an importable classic dashboard with a stable uid', () => {
    const overview = JSON.parse(rendered.get('forkwatch-overview.json') ?? '{}');
    expect(overview).toMatchObject({ uid: 'forkwatch-overview', title: 'Forkwatch / Overview', editable: false });
    expect(overview.schemaVersion).toBeGreaterThanOrEqual(41);
    expect(overview.id).toBeUndefined();
    expect(overview.__inputs).toBeUndefined();
  });

  test('the generator type-checks under the strict compiler settings', () => {
    const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'pack/tsconfig.json'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });
});
