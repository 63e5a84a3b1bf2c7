/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Top row of the overview: the four numbers on-call reads first. */
import { errorBudget } from '../../config/links';
import { ALERT } from '../../alerts/names';
import { thresholds } from '../common';
import { type Ctx, stat } from '../panels';
import { TRACES } from '../trace-searches';

export function summaryPanels(ctx: Ctx) {
  const forksInRange = stat({
    title: 'Forked resumes',
    description:
      'Resumes in the selected range whose first frame did not continue the session event log: the server answered ' +
      '2xx, the client lost events. **Not 0:** open "Fork rate by reason" to see why, then "Server resume outcomes ' +
      'per instance" to find the process that served the wrong log, and follow the runbook.',
    unit: 'short',
    targets: [{ expr: ctx.q.forksInRange }],
    links: ctx.links([ALERT.forksDetected], [TRACES.forkedResumes]),
    span: 6,
    height: 4,
  }).thresholds(
    thresholds([
      [null, 'green'],
      [1, 'red'],
    ]),
  );

  const losslessShare = stat({
    title: 'Lossless share of 2xx resumes',
    description:
      'Of the resumes the server answered 2xx (what an HTTP dashboard counts as success), the share that really ' +
      'continued the event log. **Below 100 %:** that is the loss HTTP dashboards hide; compare with the SLO ' +
      'panel and follow the loss-budget runbook.',
    unit: 'percentunit',
    targets: [{ expr: ctx.q.losslessShareInRange }],
    links: ctx.links([ALERT.lossBudgetBurn]),
    span: 6,
    height: 4,
  }).thresholds(
    thresholds([
      [null, 'red'],
      [0.99, 'orange'],
      [1 - errorBudget(ctx.config.clientResumeObjective), 'green'],
    ]),
  );

  const unknownCursors = stat({
    title: 'Unknown cursors on servers',
    description:
      'Resumes in the selected range that reached a server process with no event log for the cursor — a session ' +
      'resumed on the wrong process. **Not 0:** check sticky routing / shared event store; "Unknown-cursor share ' +
      'per instance" shows which process.',
    unit: 'short',
    targets: [{ expr: ctx.q.unknownCursorsInRange }],
    links: ctx.links([ALERT.serverUnknownCursors], [TRACES.unknownCursors]),
    span: 6,
    height: 4,
  }).thresholds(
    thresholds([
      [null, 'green'],
      [1, 'red'],
    ]),
  );

  const alertsFiring = stat({
    title: 'Forkwatch alerts firing',
    description:
      'Number of `Forkwatch*` alerts firing now for the selected jobs. **Not 0:** the table "Firing alerts ' +
      'and their runbooks" at the bottom lists them.',
    unit: 'short',
    targets: [{ expr: ctx.q.alertsFiring }],
    links: ctx.links([]),
    span: 6,
    height: 4,
  }).thresholds(
    thresholds([
      [null, 'green'],
      [1, 'red'],
    ]),
  );

  return [forksInRange, losslessShare, unknownCursors, alertsFiring];
}
