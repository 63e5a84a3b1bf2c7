/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { sample } from './lab';
import { startLabTarget } from './lab-target';

test('the forked lab target resumes, forks and reports it over HTTP', async () => {
  const target = await startLabTarget('forked');
  try {
    await target.runScenario();
    await target.runScenario();
    const text = await (await fetch(target.metricsUrl)).text();
    const resumes = (outcome: string) =>
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome }) ?? 0;
    expect(resumes('resumed')).toBeGreaterThan(0);
    expect(resumes('forked') + resumes('inconclusive')).toBeGreaterThan(0);
    expect(
      sample(text, METRICS.clientForks.prometheusName, { transport: 'streamable_http', reason: 'id_regressed' }),
    ).toBeGreaterThan(0);
    expect(sample(text, METRICS.serverResumes.prometheusName, { outcome: 'unknown_cursor' })).toBeGreaterThan(0);
    expect(sample(text, `${METRICS.serverResumeGapEvents.prometheusName}_count`)).toBeGreaterThan(0);
  } finally {
    await target.stop();
  }
});

test('the healthy lab target only resumes', async () => {
  const target = await startLabTarget('healthy');
  try {
    await target.runScenario();
    const text = await (await fetch(target.metricsUrl)).text();
    expect(
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome: 'resumed' }),
    ).toBe(4);
    expect(
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome: 'forked' }),
    ).toBe(0);
    expect(
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome: 'inconclusive' }),
    ).toBe(0);
    expect(sample(text, METRICS.serverResumes.prometheusName, { outcome: 'replayed' })).toBe(4);
  } finally {
    await target.stop();
  }
});
