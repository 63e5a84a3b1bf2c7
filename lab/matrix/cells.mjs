/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The ground-truth matrix's cells: server behaviour × id format × fault × traffic, minus the cells that cannot
// exist and those equivalent to another (each rule below says why), and a seeded sample of them for CI.
//
// A behaviour is the deployment's: every process of the cell runs the same app, and the behaviour decides what a
// process does with a session or a cursor it does not hold (a resume that lands elsewhere or after a restart):
//   correct     one store shared by the fleet (as Redis is), which validates cursors; forkwatch told sharedEventStore
//   empty       a store per process that answers '' for a cursor it never stored: 200 and keep-alives only
//   none        no event store: Last-Event-ID ignored, a fresh stream
//   vouching    a store per process that vouches for an unknown cursor (returns a stream id) and replays nothing
//   fresh-live  a vouching store, and the process sends live events on the session it hydrated
//   revival     the process answers an unknown session as a fresh one under a new id (EMCP's recreate)
//   stateless   sessionIdGenerator undefined, no store, no GET stream (405): notifications ride their request
// A fault is where the standalone stream breaks and where its reconnect lands:
//   cut-mid-frame          cut in the middle of a frame after frames were delivered; the resume lands on the origin
//   cut-before-first-frame cut right after it opened, before any frame: the client holds no cursor
//   frameless-resume-cut   the resume lands on another process and is cut after 500 ms; the next reconnect (without
//                          its cursor, typescript-sdk #2499) lands on the origin
//   reroute                the resume and every reconnect after it land on another process
//   restart                the origin is replaced (SIGTERM) while the client is away
//   sigkill                the origin is killed (SIGKILL) while the client is away
//   idle-timeout           the balancer closes the stream at a frame boundary after a quiet spell; back to the origin
// Traffic: idle (2 events before, 3 while away), live (the same and a notification every 150 ms from the process that
// holds the session), burst (10 before, 25 while away).
export const BEHAVIOURS = ['correct', 'empty', 'none', 'vouching', 'fresh-live', 'revival', 'stateless'];
export const ID_FORMAT_NAMES = ['sdk', 'int-session', 'int-global', 'hex', 'uuid', 'rmcp', 'csharp', 'go'];
export const FAULTS = [
  'cut-mid-frame',
  'cut-before-first-frame',
  'frameless-resume-cut',
  'reroute',
  'restart',
  'sigkill',
  'idle-timeout',
];
export const TRAFFIC = ['idle', 'live', 'burst'];

/** Faults whose reconnect lands on the process that holds the session's log. */
export const SAME_PROCESS_FAULTS = new Set(['cut-mid-frame', 'cut-before-first-frame', 'idle-timeout']);

export const cellName = c => `${c.behaviour}/${c.ids}/${c.fault}/${c.traffic}`;

/**
 * Why a combination is not run: `{ impossible: why }` or `{ equivalentTo: cell, why }`, else undefined.
 * Equivalence rules map onto a canonical cell that is run; impossibility rules have no such cell.
 */
export function reduction(c) {
  if ((c.behaviour === 'none' || c.behaviour === 'stateless') && c.ids !== 'sdk')
    return { equivalentTo: { ...c, ids: 'sdk' }, why: 'no event store: no event ids, the format never shows' };
  if (c.behaviour === 'stateless' && c.fault !== 'cut-mid-frame' && c.fault !== 'sigkill')
    return {
      equivalentTo: { ...c, fault: c.fault === 'restart' ? 'sigkill' : 'cut-mid-frame' },
      why: 'stateless: no session and no GET stream, so every process is the same and only a dead one differs',
    };
  if (
    SAME_PROCESS_FAULTS.has(c.fault) &&
    ['empty', 'vouching', 'fresh-live', 'revival'].includes(c.behaviour) &&
    c.fault !== 'cut-before-first-frame'
  )
    return {
      equivalentTo: { ...c, behaviour: 'correct' },
      why: "the reconnect lands on the process that holds the session and its cursor: what it does with unknown ones never runs (a per-process store there is the fleet's store)",
    };
  if (c.fault === 'cut-before-first-frame') {
    if (c.ids !== 'sdk')
      return {
        equivalentTo: { ...c, ids: 'sdk' },
        why: 'no frame before the cut: no cursor and no id to compare, the format never shows',
      };
    if (c.behaviour !== 'correct' && c.behaviour !== 'none' && c.behaviour !== 'stateless')
      return {
        equivalentTo: { ...c, behaviour: 'correct' },
        why: 'the reconnect carries no cursor and lands on the origin: unknown cursors and sessions never arise',
      };
  }
  return undefined;
}

/** Every combination, with its reduction. */
export function allCombinations() {
  const out = [];
  for (const behaviour of BEHAVIOURS)
    for (const ids of ID_FORMAT_NAMES)
      for (const fault of FAULTS)
        for (const traffic of TRAFFIC) {
          const c = { behaviour, ids, fault, traffic };
          out.push({ ...c, name: cellName(c), reduction: reduction(c) });
        }
  return out;
}

/** The cells that run: the combinations no rule reduces. */
export function runnableCells() {
  return allCombinations().filter(c => !c.reduction);
}

/** mulberry32: a small seeded generator, so a sample is the same on every machine. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A seeded sample of `size` runnable cells that covers every behaviour, id format, fault and traffic at least once
 * when size allows (one cell per value first, drawn at random, then the rest at random).
 */
export function sampleCells(size, seed) {
  const rand = random(seed);
  const cells = runnableCells();
  const pool = [...cells];
  const picked = [];
  const take = c => {
    picked.push(c);
    pool.splice(pool.indexOf(c), 1);
  };
  const dims = [
    ['behaviour', BEHAVIOURS],
    ['ids', ID_FORMAT_NAMES],
    ['fault', FAULTS],
    ['traffic', TRAFFIC],
  ];
  for (const [key, values] of dims)
    for (const value of values) {
      if (picked.length >= size || picked.some(c => c[key] === value)) continue;
      const options = pool.filter(c => c[key] === value);
      if (options.length) take(options[Math.floor(rand() * options.length)]);
    }
  while (picked.length < size && pool.length) take(pool[Math.floor(rand() * pool.length)]);
  return picked;
}
