import { expect, test } from 'vitest';
import { startLabTarget } from './lab-target';

test('lab target exports forkwatch metrics over HTTP', async () => {
  const target = await startLabTarget('forked');
  try {
    await target.runScenario();
    const text = await (await fetch(target.metricsUrl)).text();
    expect(text).toContain('forkwatch_client_forks_total{transport="streamable_http",reason="stream_changed"');
    expect(text).toContain('forkwatch_client_resume_gap_seconds_bucket');
  } finally {
    await target.stop();
  }
});
