/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The instrumentation's settings, resolved from its config by one pure function: every value checked by the one
 * number guard (core/numbers.ts), a fallback for each bad one, and a warning that says so. The instrumentation logs
 * the warnings; nothing here reads the environment (env-config.ts turns FORKWATCH_* variables into a config).
 */
import { resolveCodec } from '../core/codecs';
import { DEFAULT_DELIVERY_WINDOW_MS, DEFAULT_MAX_TRACKED, DEFAULT_REISSUE_WINDOW_MS } from '../core/defaults';
import { atLeast, positive, positiveWhole } from '../core/numbers';
import { DEFAULT_VERDICT_TIMEOUT_MS } from './env-config';
import type { ResolvedSettings } from '../shared/runtime';
import type { ForkwatchInstrumentationConfig } from '../shared/types';

export interface SettingsResolution {
  settings: ResolvedSettings;
  /** One line per config value that was replaced by its default. */
  warnings: string[];
}

export function resolveSettings(config: ForkwatchInstrumentationConfig): SettingsResolution {
  const warnings: string[] = [];
  const codec = resolveCodec(config.codec);
  if (!codec) warnings.push(`unknown codec ${JSON.stringify(config.codec)}; using auto`);
  const timeout = positive(config.verdictTimeoutMs);
  if (config.verdictTimeoutMs !== undefined && timeout === undefined)
    warnings.push(`invalid verdictTimeoutMs ${config.verdictTimeoutMs}; using ${DEFAULT_VERDICT_TIMEOUT_MS}`);
  if (config.onFork !== undefined && config.onFork !== 'record' && config.onFork !== 'abort') {
    warnings.push(`invalid onFork ${JSON.stringify(config.onFork)}; using 'record'`);
  }
  const window = atLeast(config.deliveryWindowMs, 0);
  if (config.deliveryWindowMs !== undefined && window === undefined)
    warnings.push(`invalid deliveryWindowMs ${config.deliveryWindowMs}; using ${DEFAULT_DELIVERY_WINDOW_MS}`);
  if (config.sharedEventStore !== undefined && typeof config.sharedEventStore !== 'boolean')
    warnings.push(`invalid sharedEventStore ${JSON.stringify(config.sharedEventStore)}; using false`);
  const fleetDelivery = config.fleetDelivery;
  const marksValid =
    fleetDelivery !== null &&
    typeof fleetDelivery === 'object' &&
    typeof fleetDelivery.pending === 'function' &&
    typeof fleetDelivery.delivered === 'function' &&
    typeof fleetDelivery.claim === 'function';
  if (fleetDelivery !== undefined && !marksValid)
    warnings.push('invalid fleetDelivery: needs pending(), delivered() and claim() methods; fleet delivery marks off');
  const perRequest = config.perRequest;
  const reissueWindow = atLeast(perRequest?.reissueWindowMs, 0);
  if (perRequest?.reissueWindowMs !== undefined && reissueWindow === undefined)
    warnings.push(
      `invalid perRequest.reissueWindowMs ${String(perRequest.reissueWindowMs)}; using ${DEFAULT_REISSUE_WINDOW_MS}`,
    );
  const maxTracked = positiveWhole(perRequest?.maxTracked);
  if (perRequest?.maxTracked !== undefined && maxTracked === undefined)
    warnings.push(`invalid perRequest.maxTracked ${String(perRequest.maxTracked)}; using ${DEFAULT_MAX_TRACKED}`);
  const hidesCloses = perRequest?.balancerHidesCloses;
  if (hidesCloses !== undefined && typeof hidesCloses !== 'boolean')
    warnings.push(`invalid perRequest.balancerHidesCloses ${JSON.stringify(hidesCloses)}; using false`);
  return {
    settings: {
      onFork: config.onFork === 'abort' ? 'abort' : 'record',
      codec: codec ?? resolveCodec('auto')!,
      verdictTimeoutMs: timeout ?? DEFAULT_VERDICT_TIMEOUT_MS,
      captureEventIds: config.captureEventIds !== false,
      captureRawSessionId: config.captureRawSessionId === true,
      propagateContext: config.propagateContext !== false,
      observeFetch: config.observeFetch !== false,
      deliveryWindowMs: window ?? DEFAULT_DELIVERY_WINDOW_MS,
      perRequest: Object.freeze({
        reissueWindowMs: reissueWindow ?? DEFAULT_REISSUE_WINDOW_MS,
        maxTracked: maxTracked ?? DEFAULT_MAX_TRACKED,
        balancerHidesCloses: hidesCloses === true,
      }),
      sharedEventStore: config.sharedEventStore === true,
      fleetDelivery: marksValid ? fleetDelivery : undefined,
    },
    warnings,
  };
}
