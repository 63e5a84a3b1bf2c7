/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The standalone stream's cursor: a priming event, or the id of a message the first trigger that works made the
 * server send (triggers.ts), read with the markers that later prove a replay (markers.ts).
 */
import { reproducibleMarkers } from './markers';
import type { SseFrame } from './sse-reader';
import type { StandaloneStream } from './standalone-stream';
import type { Trigger } from './triggers';

export interface Got {
  priming: boolean;
  unprompted: boolean;
  trigger?: Trigger;
  /** What the trigger made the server send, by content (markers.ts): the proof of a replay when ids prove nothing. */
  markers?: ReadonlySet<string>;
  /** The operator's notify tool answered every call and nothing it sent reached the stream. */
  silentTool?: string;
  /** Calls of the trigger that answered and sent nothing to this stream before one did (another replica's?). */
  missedCalls: number;
  /** The stream broke or passed a reader limit: nothing more can be read from it. */
  streamError?: string;
}

/** Calls of the operator's notify tool before concluding that what it sends never reaches this stream. */
export const NOTIFY_TOOL_CALLS = 3;
const PRIMING_WAIT_MS = 250;

export interface CursorInput {
  waitMs: number;
  progress: (phrase: string) => void;
}

/** Reads the stream until it has a cursor: a priming event, or a message made by the first trigger that works. */
export async function getCursor(
  stream: StandaloneStream,
  triggers: Trigger[],
  tried: string[],
  input: CursorInput,
): Promise<Got> {
  const first = await stream.next(Date.now() + PRIMING_WAIT_MS);
  if (first.kind === 'error') return { priming: false, unprompted: false, missedCalls: 0, streamError: first.error };
  const priming = first.kind === 'frame' && first.frame.data.trim() === '' && !!first.frame.id;
  const unpromptedMessage = first.kind === 'frame' && !priming;
  // What arrives before the probe made the server send anything is live traffic: no marker of the probe's.
  const unprompted = [...stream.frames];
  let silentTool: string | undefined;
  for (const trigger of triggers) {
    // Each call is a new connection: behind a balancer without affinity, one may reach the stream's process.
    const calls = trigger.name === 'notify_tool' ? NOTIFY_TOOL_CALLS : 1;
    let answered = 0;
    for (let call = 1; call <= calls; call++) {
      input.progress(`standalone stream: ${trigger.describe}`);
      const why = await trigger.fire();
      if (why !== undefined) {
        tried.push(`${trigger.describe}: ${why}`);
        break;
      }
      answered++;
      const caused = stream.frames.length;
      const read = await stream.nextMessage(Date.now() + input.waitMs);
      if (read.kind === 'error') return { priming, unprompted: false, missedCalls: call - 1, streamError: read.error };
      if (read.kind === 'frame') {
        // The rest of the burst (a tool's second notification) belongs before the cursor too.
        await stream.drain(Date.now() + input.waitMs);
        if (call > 1) tried.push(`${trigger.describe}: ${call - 1} of ${call} calls sent nothing to this stream`);
        const firstCall = stream.frames.slice(caused);
        const again = await callAgain(trigger, stream, input.waitMs);
        const markers = reproducibleMarkers([firstCall, again], unprompted);
        if (markers.size === 0)
          tried.push(
            `${trigger.describe}: what arrived after one call did not arrive again after the next (live traffic, or content that changes per call): the replay is judged on the ids`,
          );
        return { priming, unprompted: false, trigger, markers, missedCalls: call - 1 + (again.length === 0 ? 1 : 0) };
      }
    }
    if (answered > 0) tried.push(`${trigger.describe}: nothing arrived within ${input.waitMs} ms (${answered}×)`);
    if (trigger.name === 'notify_tool' && answered === calls) silentTool = trigger.describe;
  }
  return { priming, unprompted: unpromptedMessage, missedCalls: 0, ...(silentTool ? { silentTool } : {}) };
}

/**
 * One more call of the trigger that worked, before the cursor is taken: its events are the probe's own only if they
 * come again (markers.ts). The frames it brought, none when it could not be called or nothing came.
 */
async function callAgain(trigger: Trigger, stream: StandaloneStream, waitMs: number): Promise<SseFrame[]> {
  const before = stream.frames.length;
  if ((await trigger.fire()) !== undefined) return [];
  const read = await stream.nextMessage(Date.now() + waitMs);
  if (read.kind === 'frame') await stream.drain(Date.now() + waitMs);
  return stream.frames.slice(before);
}
