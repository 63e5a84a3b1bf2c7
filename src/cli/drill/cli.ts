/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `forkwatch drill`: the fork lab's faults on the user's own traffic, and what forkwatch counted on each side. */
import { type Scrape, type SideReport, changes, scrape } from './metrics';
import { DRILL_USAGE, DRILL_USAGE_ERROR, type DrillOptions, DrillUsageError, parseDrillArgs } from './options';
import { type DrillProxy, startDrillProxy } from './proxy';
import { drillReport, renderDrillReport } from './render';

export interface DrillIo {
  out(text: string): void;
  err(text: string): void;
  /** Resolves when the user asks the drill to stop (Ctrl-C, SIGTERM). */
  interrupted: Promise<string>;
}

/** Times the client's retries of a resume may start the settle wait again. */
const MAX_SETTLE_RESTARTS = 5;

const processIo = (): DrillIo => ({
  out: text => process.stdout.write(text),
  err: text => process.stderr.write(text),
  interrupted: new Promise(resolve => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
  }),
});

export async function runDrillCli(argv: readonly string[], io: DrillIo = processIo()): Promise<number> {
  let options: DrillOptions | undefined;
  try {
    options = parseDrillArgs(argv);
  } catch (error) {
    if (!(error instanceof DrillUsageError)) throw error;
    io.err(`forkwatch drill: ${error.message}\n\n${DRILL_USAGE}`);
    return DRILL_USAGE_ERROR;
  }
  if (!options) {
    io.out(DRILL_USAGE);
    return 0;
  }
  const live = (line: string) => (options.json ? io.err : io.out)(`${line}\n`);
  const sides = [
    ...options.clientMetrics.map(url => ({ side: 'client' as const, url })),
    ...options.serverMetrics.map(url => ({ side: 'server' as const, url })),
  ];
  const before: Scrape[] = await Promise.all(sides.map(s => scrape(s.url)));
  before.forEach((b, i) => {
    // A client started after the drill (the usual order) is not up yet: not an error, its counters start from 0.
    if (b.error)
      live(
        `note: ${sides[i]!.side} metrics ${sides[i]!.url.href} not readable yet (${b.error}); read again when the drill stops, counted from 0`,
      );
  });

  let stop: (why: string) => void = () => undefined;
  const stopped = new Promise<string>(resolve => {
    stop = resolve;
  });
  let settleTimer: NodeJS.Timeout | undefined;
  let settleRestarts = 0;
  let finished = false;
  const settle = () => {
    if (finished) return;
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => stop(`${options.stopAfter} resumes`), options.settleMs);
  };
  let proxy: DrillProxy;
  try {
    proxy = await startDrillProxy(options, {
      log: live,
      resumeFaulted: () => {
        if (!options.stopAfter || proxy.state.resumesFaulted < options.stopAfter) return;
        settle();
      },
      // The client's retry of a refused or empty resume is answered after the fault: its verdict needs the settle
      // wait too (a bounded number of times, so that a client retrying forever cannot keep the drill running).
      resumeRetried: () => {
        if (settleTimer === undefined || settleRestarts >= MAX_SETTLE_RESTARTS) return;
        settleRestarts++;
        settle();
      },
    });
  } catch (error) {
    io.err(`forkwatch drill: cannot listen on ${options.host}:${options.port}: ${(error as Error).message}\n`);
    return 2;
  }
  const to = options.rerouteUpstream
    ? `; resumes of cut streams ${options.resume} to ${options.rerouteUpstream.href}`
    : `; resumes of cut streams: ${options.resume}`;
  live(`forkwatch drill: listening on ${proxy.url} (upstream ${options.upstream.href}${to})`);
  live(
    `cutting ${options.faults} ${options.streams === 'all' ? 'SSE' : options.streams.toUpperCase()} stream(s) after ${options.cutAfter} events; point your client at ${proxy.url}`,
  );
  const durationTimer = options.durationMs
    ? setTimeout(() => stop(`${options.durationMs / 1000} s`), options.durationMs)
    : undefined;
  const stoppedBy = await Promise.race([stopped, io.interrupted]);
  finished = true;
  clearTimeout(settleTimer);
  clearTimeout(durationTimer);
  // Scraped before the drill lets go of the client's connections: closing them is no fault of the deployment's, and
  // a client would count the streams it cuts (a pending resume `failed`, an empty one `inconclusive`).
  const after = await Promise.all(sides.map(s => scrape(s.url)));
  await proxy.close();
  const reports: SideReport[] = sides.map((s, i) => ({
    side: s.side,
    url: s.url.href,
    changes: changes(before[i]!, after[i]!),
    ...(after[i]!.error ? { error: after[i]!.error } : {}),
  }));
  const report = drillReport(options, proxy.url, proxy.state, reports, stoppedBy);
  io.out(options.json ? `${JSON.stringify(report)}\n` : renderDrillReport(report));
  return 0;
}
