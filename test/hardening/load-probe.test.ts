import { test } from 'vitest';
import { inProcessMcp, runSessions, setupForkwatch } from './support';
test('probe', async () => {
  const fw = setupForkwatch({ ledger: { maxSessions: 500 } });
  for (const on of [false, true, false, true]) {
    if (on) { fw.instrumentation.enable(); fw.instrumentation.manuallyInstrument(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')); } else fw.instrumentation.disable();
    const mcp = inProcessMcp({ framesPerStream: 5, resumesPerSession: 2 });
    for (const c of [50, 200]) {
      const t0 = Date.now();
      await runSessions(2000, c, () => mcp.runSession(), () => {});
      console.log('forkwatch', on, 'concurrency', c, '2000 sessions in', Date.now() - t0, 'ms');
    }
  }
});
