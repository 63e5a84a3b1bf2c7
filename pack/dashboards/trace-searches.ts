/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The trace searches panels link to: forkwatch's resume spans with the attribute value the panel counts. */
import { ATTR, SPAN } from '../../src/shared/names';
import type { TraceSearchSpec } from './trace-links';

export const TRACES = {
  forkedResumes: {
    title: 'forked client resumes',
    span: SPAN.clientResume,
    attributes: { [ATTR.verdict]: 'forked' },
  },
  unknownCursors: {
    title: 'server resumes with unknown cursors',
    span: SPAN.serverResume,
    attributes: { [ATTR.serverOutcome]: 'unknown_cursor' },
  },
} as const satisfies Record<string, TraceSearchSpec>;
