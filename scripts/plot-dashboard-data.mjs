/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Draws the README picture from data captured by the dashboard end-to-end test (test/dashboards/e2e.test.ts):
// forks beside 2xx and lossless resumes over time, and the client gap-time histogram, with Vega-Lite, rendered to
// SVG by Vega and rasterised to PNG by resvg. No browser, no hand-drawn shapes.
//
//   node scripts/plot-dashboard-data.mjs [data.json] [out.png]
//   defaults: build/dashboards-e2e/overview-data.json -> docs/forkwatch-overview.png (and the data beside it)
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile } from 'vega-lite';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const SERIES_COLORS = { '2xx resumes': '#ff9830', 'lossless resumes': '#73bf69', forks: '#f2495c' };

/** Vega-Lite spec: what on-call sees on "2xx resumes vs lossless resumes", "Fork rate" and the gap heatmap. */
export function overviewSpec(data) {
  const start = Math.min(...data.rates.map(r => r.t));
  const rates = data.rates.map(r => ({ ...r, seconds: r.t - start }));
  const long = rates.flatMap(r =>
    Object.keys(SERIES_COLORS).map(series => ({ seconds: r.seconds, series, value: r[series] })),
  );
  const buckets = data.gapHistogram.map(b => ({ ...b, bucket: b.le }));
  const axisX = { title: `seconds into the run (step ${data.stepSeconds} s, rate over ${data.rateInterval})` };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    background: 'white',
    padding: 16,
    title: {
      text: `Forkwatch / Overview — ${data.source}, ${data.scenario} scenario (job="${data.job}")`,
      subtitle: [
        'HTTP dashboards count every 2xx resume as a success.',
        'The shaded gap down to the lossless resumes is what was lost behind those 200s.',
      ],
      anchor: 'start',
      fontSize: 16,
    },
    hconcat: [
      {
        width: 520,
        height: 300,
        title: 'Forks beside 2xx resumes (per second)',
        layer: [
          {
            data: { values: rates },
            mark: { type: 'area', color: SERIES_COLORS.forks, opacity: 0.18 },
            encoding: {
              x: { field: 'seconds', type: 'quantitative', axis: axisX },
              y: { field: 'lossless resumes', type: 'quantitative' },
              y2: { field: '2xx resumes' },
            },
          },
          {
            data: { values: long },
            mark: { type: 'line', strokeWidth: 2.5 },
            encoding: {
              x: { field: 'seconds', type: 'quantitative', axis: axisX },
              y: { field: 'value', type: 'quantitative', title: 'per second' },
              color: {
                field: 'series',
                type: 'nominal',
                title: null,
                scale: { domain: Object.keys(SERIES_COLORS), range: Object.values(SERIES_COLORS) },
                legend: { orient: 'top' },
              },
            },
          },
        ],
      },
      {
        width: 420,
        height: 300,
        title: 'Resume gap time (client), resumes per bucket',
        data: { values: buckets },
        mark: { type: 'bar', color: '#5794f2' },
        encoding: {
          x: {
            field: 'bucket',
            type: 'ordinal',
            sort: { field: 'upper' },
            title: 'gap ≤ le (seconds, histogram bucket)',
            axis: { labelAngle: -45 },
          },
          y: { field: 'count', type: 'quantitative', title: 'resumes in the run' },
        },
      },
    ],
  };
}

/** The PNG bytes of the picture. */
export async function plotDashboardData(data) {
  const view = new vega.View(vega.parse(compile(overviewSpec(data)).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: 2 },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
  });
  return resvg.render().asPng();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const input = process.argv[2] ?? join(root, 'build/dashboards-e2e/overview-data.json');
  const output = process.argv[3] ?? join(root, 'docs/forkwatch-overview.png');
  const data = JSON.parse(readFileSync(input, 'utf8'));
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, await plotDashboardData(data));
  if (process.argv[3] === undefined) copyFileSync(input, join(root, 'docs/forkwatch-overview.data.json'));
  console.log(`wrote ${output}`);
}
