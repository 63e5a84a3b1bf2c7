/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The alert group, composed from one module per subject, in the order the rule file lists them. */
import type { ForkwatchConfig } from '../config/config';
import { serverCompletedStreamResumed, serverCrossSessionReplay } from './boundaries';
import { metricsAbsent, targetWithoutMetrics } from './coverage';
import { cursorsDroppedAfterInconclusive } from './cursor-drops';
import { serverCursorsIgnored, serverUnknownCursors } from './cursors';
import { serverEventsWithoutListener } from './delivery';
import { duplicateDeliveries, forksDetected } from './forks';
import { resumeGapEventsHigh, resumeGapSecondsHigh } from './gaps';
import { ALERT_GROUP } from './names';
import { probeGroups } from './probe';
import { resumesRejected, serverResumesRejected } from './rejections';
import { reconnectStorm, sessionsRevived } from './revived';
import type { GroupSpec } from './rule-model';
import { perRequestAlerts } from './per-request';
import { perRequestLossAlerts } from './per-request-losses';
import { sloAlerts } from './slo';

export function alertGroups(config: ForkwatchConfig): GroupSpec[] {
  const slo = sloAlerts(config);
  const rules = [
    forksDetected(config),
    ...slo.client,
    serverUnknownCursors(config),
    serverCursorsIgnored(config),
    serverCrossSessionReplay(config),
    serverCompletedStreamResumed(config),
    resumesRejected(config),
    serverResumesRejected(config),
    resumeGapSecondsHigh(config),
    resumeGapEventsHigh(config),
    duplicateDeliveries(config),
    ...slo.server,
    serverEventsWithoutListener(config),
    ...perRequestAlerts(config),
    ...perRequestLossAlerts(config),
    sessionsRevived(config),
    reconnectStorm(config),
    targetWithoutMetrics(config),
    metricsAbsent(config),
    cursorsDroppedAfterInconclusive(config),
  ];
  return [{ name: ALERT_GROUP, rules }, ...probeGroups(config)];
}
