/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Runs every query of the overview dashboard, variables substituted as Grafana would, against a real Prometheus
 * that scraped the fork lab, and draws the README picture from what came back. Needs Debian's `prometheus`: a
 * missing binary fails the run, it never skips.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { plotDashboardData } from '../../scripts/plot-dashboard-data.mjs';
import { type Dashboard, loadDashboard, panelsOf } from './dashboard-model';
import { LAB_JOBS, type E2eRun, startE2eRun } from './e2e-run';
import { type Macros, type Selection, interpolate, resolveVariables } from './grafana-variables';
import { type Series, hasData, instantQuery, labelValues, rangeQuery } from './prometheus-api';
import { overviewPictureData } from './picture-data';

const overview: Dashboard = loadDashboard('forkwatch-overview.json');
const PICTURE_DIR = join(__dirname, '../../build/dashboards-e2e');

interface DashboardQuery {
  name: string;
  expr: string;
  instant: boolean;
}

const QUERIES: DashboardQuery[] = [
  ...panelsOf(overview).flatMap(p =>
    (p.targets ?? []).map(t => ({ name: `${p.title} [${t.refId}]`, expr: t.expr ?? '', instant: t.instant === true })),
  ),
  ...(overview.annotations?.list ?? []).map(a => ({
    name: `annotation ${a.name}`,
    expr: a.expr ?? '',
    instant: false,
  })),
];

/**
 * Panels whose ratios are 0/0 in the fork lab: the per-request (2026-07-28) delivered-results SLO needs per-request
 * traffic, which the 2025-era lab does not send (test/per-request drives those series on the real 2.x packages).
 */
const NAN_WITHOUT_PER_REQUEST_TRAFFIC = ['Results lost after the client left (SLO windows)'];
const WITH_LAB_DATA = QUERIES.filter(
  q => !NAN_WITHOUT_PER_REQUEST_TRAFFIC.some(title => q.name.startsWith(`${title} [`)),
);

let run: E2eRun;
let macros: Macros;
const selections: Record<'all' | 'forkedJob' | 'healthyJob', Selection> = { all: {}, forkedJob: {}, healthyJob: {} };
let variableOptions: Record<string, string[]> = {};

async function execute(q: DashboardQuery, selection: Selection): Promise<Series[]> {
  const expr = interpolate(q.expr, overview, selection, macros);
  const api = run.prometheus.api;
  return q.instant ? instantQuery(api, expr, run.end) : rangeQuery(api, expr, run.start, run.end, 1);
}

beforeAll(async () => {
  run = await startE2eRun();
  macros = { rateInterval: '15s', interval: '1s', range: `${run.end - run.start}s` };
  const values = (label: string, selector: string | undefined) =>
    labelValues(run.prometheus.api, label, selector, run.start, run.end);
  const pick = (job: string) => (name: string, options: string[]) =>
    name === 'job' ? [job] : name === 'instance' ? options : 'All';
  const all = await resolveVariables(overview, values, () => 'All', macros);
  selections.all = all.selection;
  variableOptions = all.options;
  selections.forkedJob = (await resolveVariables(overview, values, pick(LAB_JOBS.forked), macros)).selection;
  selections.healthyJob = (await resolveVariables(overview, values, pick(LAB_JOBS.healthy), macros)).selection;
}, 120_000);

afterAll(async () => {
  await run?.stop();
});

describe('overview dashboard on a real Prometheus that scraped the fork lab', () => {
  test('the variables offer the lab jobs and targets, and cluster/namespace fall back to All', () => {
    expect(variableOptions.job?.sort()).toEqual(Object.values(LAB_JOBS).sort());
    expect(variableOptions.instance?.sort()).toEqual([run.labs.forked.address, run.labs.healthy.address].sort());
    expect(selections.all).toMatchObject({ cluster: 'All', namespace: 'All', job: 'All', instance: 'All' });
    expect(selections.forkedJob).toMatchObject({ job: [LAB_JOBS.forked], instance: [run.labs.forked.address] });
  });

  test('the panels left out of the data checks exist, and are all that is left out', () => {
    expect(QUERIES.length - WITH_LAB_DATA.length).toBe(4);
  });

  test.each(WITH_LAB_DATA.map(q => [q.name, q] as const))('%s has data with every variable at All', async (_, q) => {
    expect(hasData(await execute(q, selections.all))).toBe(true);
  });

  test.each(WITH_LAB_DATA.map(q => [q.name, q] as const))(
    '%s has data for the forked job and its instance',
    async (_, q) => {
      expect(hasData(await execute(q, selections.forkedJob))).toBe(true);
    },
  );

  test('for the healthy job the loss panels show no loss, so the job filter really filters', async () => {
    const values = async (title: string, selection: Selection) => {
      const q = QUERIES.find(x => x.name.startsWith(`${title} [`));
      if (!q) throw new Error(`no query for ${title}`);
      return (await execute(q, selection)).flatMap(s => s.values.map(([, v]) => Number(v)));
    };
    expect(await values('Forked resumes', selections.healthyJob)).toEqual([0]);
    expect(await values('Lossless share of 2xx resumes', selections.healthyJob)).toEqual([1]);
    expect(await values('Unknown cursors on servers', selections.healthyJob)).toEqual([0]);
    expect(Math.max(...(await values('Fork rate by reason and transport', selections.healthyJob)))).toBe(0);
    expect((await values('Forked resumes', selections.forkedJob))[0]).toBeGreaterThan(0);
    expect((await values('Lossless share of 2xx resumes', selections.forkedJob))[0]).toBeLessThan(1);
  });

  test('draws the README picture from this run', async () => {
    const data = await overviewPictureData(
      overview,
      (expr, instant) => execute({ name: expr, expr, instant }, selections.forkedJob),
      { job: LAB_JOBS.forked, range: macros.range, rateInterval: macros.rateInterval },
    );
    expect(data.rates.some(r => r.forks > 0 && r['2xx resumes'] > r['lossless resumes'])).toBe(true);
    expect(data.gapHistogram.reduce((n, b) => n + b.count, 0)).toBeGreaterThan(0);
    const png = await plotDashboardData(data);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(png.readUInt32BE(16)).toBeGreaterThan(1000); // width in px, from the IHDR chunk
    mkdirSync(PICTURE_DIR, { recursive: true });
    writeFileSync(join(PICTURE_DIR, 'overview-data.json'), `${JSON.stringify(data, null, 2)}\n`);
    writeFileSync(join(PICTURE_DIR, 'overview.png'), png);
  });
});
