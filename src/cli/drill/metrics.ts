/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What forkwatch counted on a side: its forkwatch_* series scraped before and after the drill, and what moved. */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { clip } from '../../core/clip';

/** A scrape is read up to this many bytes and this many forkwatch series: a hostile endpoint cannot grow the drill. */
const MAX_SCRAPE_BYTES = 8 << 20;
const MAX_SERIES = 20_000;
const SCRAPE_TIMEOUT_MS = 5_000;

export interface Scrape {
  series: Map<string, number>;
  error?: string;
}

export interface SeriesChange {
  series: string;
  before: number | undefined;
  after: number;
}

export interface SideReport {
  side: 'client' | 'server';
  url: string;
  changes: SeriesChange[];
  error?: string;
}

/** The forkwatch_* samples of a Prometheus text exposition (histogram buckets left out: the counts say enough). */
export function forkwatchSeries(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('forkwatch_') || out.size >= MAX_SERIES) continue;
    const m = /^(forkwatch_[A-Za-z0-9_]*)(\{[^}\n]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1]!.endsWith('_bucket')) continue;
    const value = Number(m[3]);
    if (Number.isFinite(value)) out.set(`${m[1]}${m[2] ?? ''}`, value);
  }
  return out;
}

/** GET a metrics endpoint, bounded in time and bytes; never throws. */
export function scrape(url: URL): Promise<Scrape> {
  return new Promise(resolve => {
    let settled = false;
    const done = (result: Scrape) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const fail = (why: string) => done({ series: new Map(), error: clip(why, 200) });
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(url, { method: 'GET', headers: { accept: 'text/plain' } }, res => {
      if (res.statusCode !== 200) {
        res.resume();
        fail(`HTTP ${res.statusCode}`);
        return;
      }
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_SCRAPE_BYTES) return fail(`more than ${MAX_SCRAPE_BYTES} bytes`);
        chunks.push(chunk);
      });
      res.on('end', () => done({ series: forkwatchSeries(Buffer.concat(chunks).toString('utf8')) }));
      res.on('error', error => fail(error.message));
    });
    const timer = setTimeout(() => fail(`no answer within ${SCRAPE_TIMEOUT_MS / 1000} s`), SCRAPE_TIMEOUT_MS);
    req.on('error', error => fail(error.message));
    req.end();
  });
}

/**
 * The series that moved between two scrapes. A series missing before (the endpoint was not up yet, or the series is
 * new) counts from 0, as a counter does: a process that started during the drill shows what it counted.
 */
export function changes(before: Scrape, after: Scrape): SeriesChange[] {
  const out: SeriesChange[] = [];
  for (const [series, value] of after.series) {
    const was = before.series.get(series);
    if ((was ?? 0) !== value) out.push({ series, before: was, after: value });
  }
  return out.sort((a, b) => a.series.localeCompare(b.series));
}
