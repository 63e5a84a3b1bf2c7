/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Which cause (fixes.ts) explains a failure, from what the probe saw: the remedy differs for the SDK's example
 * store, for a deployment whose resumes reach more than one log, and for a server that simply does not replay.
 * Only what the evidence shows is used; without a sign of either, the generic cause is named.
 */
import { SDK_STANDALONE_STREAM, sdkCodec } from '../../core/codecs';
import type { ResumeSummary } from './report';

/** Ids shaped like the SDK example store's, `<stream id>_<epoch ms>_<random base36>`. */
export function sdkShaped(id: string | undefined): boolean {
  return id !== undefined && sdkCodec.decode(id) !== undefined;
}

/**
 * The SDK example store's standalone ids, `_GET_stream_<ms>_<rand>`: the store splits them on `_` and reads the
 * stream id as '', so it replays nothing on them and registers the resumed stream under ''.
 */
export function sdkStandaloneShaped(id: string | undefined): boolean {
  return id !== undefined && sdkCodec.decode(id)?.stream === SDK_STANDALONE_STREAM;
}

/**
 * The SDK example store replays in id order (`localeCompare`): a response stored in its cursor's millisecond whose
 * random suffix sorts before the cursor's is never replayed.
 */
export function lostByIdOrder(cursor: string, responseId: string | undefined): boolean {
  return sdkShaped(cursor) && sdkShaped(responseId) && responseId!.localeCompare(cursor) < 0;
}

/** Resumes that went both ways: some reached the cursor's log, others did not (another replica's). */
export function mixedResumes({ outcomes }: ResumeSummary): 'forked' | 'rejected' | undefined {
  if (outcomes.resumed === 0) return undefined;
  if (outcomes.forked > 0) return 'forked';
  return outcomes.rejected > 0 ? 'rejected' : undefined;
}
