/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The conditions of one stream kind as the probe decides them, one at a time. A condition decided once the run was
 * stopped (its deadline, or the exporter's) may owe its pass or its failure to the cut itself (an exchange aborted
 * mid-read looks like a broken stream): it becomes not tested. What was decided before the stop stands, so a
 * failure the probe proved early is still reported when a later step hangs until the deadline.
 */
import type { ConditionResult } from './report';

export const CUT_DETAIL = 'the probe reached its deadline before deciding this';

export class ConditionBook<N extends string> {
  private readonly late = new Set<N>();
  private readonly results: Record<N, ConditionResult>;

  constructor(
    initial: Record<N, ConditionResult>,
    private readonly stopped: () => boolean,
  ) {
    this.results = { ...initial };
  }

  get(name: N): ConditionResult {
    return this.results[name];
  }

  set(name: N, result: ConditionResult): void {
    this.results[name] = result;
    if (this.stopped()) this.late.add(name);
    else this.late.delete(name);
  }

  /** Every condition, those decided after the stop that passed or failed made not tested. */
  final(): Record<N, ConditionResult> {
    const out = { ...this.results };
    for (const name of this.late) {
      const { status } = out[name];
      if (status === 'pass' || status === 'fail') out[name] = { status: 'not_tested', detail: CUT_DETAIL };
    }
    return out;
  }
}
