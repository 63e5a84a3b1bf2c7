/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import type { ResumeVerdictInfo } from './types';

/**
 * Delivered to a transport's `onerror` in fail-loud mode (`onFork: 'abort'`) when a resumed stream forked:
 * events were lost, so the application should re-establish the session rather than carry on.
 */
export class StreamForkDetected extends Error {
  override readonly name = 'StreamForkDetected';
  readonly verdict: ResumeVerdictInfo;

  constructor(verdict: ResumeVerdictInfo) {
    super(
      `MCP session forked on resume (${verdict.reason ?? 'unknown'}): the stream resumed from ` +
        `Last-Event-ID ${JSON.stringify(verdict.cursor ?? null)} did not continue the session event log; ` +
        'events may have been lost. Re-establish the session.',
    );
    this.verdict = verdict;
  }
}
