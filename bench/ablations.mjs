#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The ablation builds of issue 50's tenth pass, the server's and the client's, made again from a build/src: each is a
// copy of the build with text edits of its compiled JavaScript (an experiment only, never shipped), so a later pass can
// measure the same cuts beside its own build (server cuts as `NAME/bare` pairs, client cuts as `bare/NAME`):
//
//   node scripts/build.mjs && node bench/ablations.mjs .tmp/ablations
//   node bench/short-sessions-sides.mjs --rounds 16 --sessions 200 --warmup 20 \
//     --build pass=.tmp/ablations/pass/src --build twice-copy=.tmp/ablations/twice-copy/src \
//     --pairs bare-again,forkwatch/bare,pass/bare,twice-copy/bare
//
// A build named `inert…` patches nothing on its side (short-sessions-sides.mjs then checks that side is unpatched). Every edit must
// find its text exactly once: a build that changed under it fails here, not in a measurement of the wrong thing.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PATCH = 'server/stacks/sdk/patch.js';
const STORE = 'server/stacks/sdk/recording-event-store.js';

const NO_EVENT_RECORDING = {
  file: STORE,
  find: '        if (watch.live(this)) {\n            let onStored;',
  replace: '        if (false) {\n            let onStored;',
};

/** Every SDK server method wrapped by `return original.apply(this, arguments)`; `handleRequest` as given. */
const passThroughWrappers = handleRequest => ({
  file: PATCH,
  find: 'const SERVER_WRAPPERS = {',
  replace: `const passThrough = (original) => function () { return original.apply(this, arguments); };
const dummyRecorder = { eventStoring() { return undefined; }, liveEventWritten() {} };
function storeOnlyHandleRequest(original, { hooks }) {
    return function handleRequest() {
        (0, recording_event_store_1.ensureRecordingStore)(this, hooks, dummyRecorder);
        return original.apply(this, arguments);
    };
}
const SERVER_WRAPPERS = {
    handleRequest: ${handleRequest},
    handleGetRequest: passThrough,
    replayEvents: passThrough,
    writeSSEEvent: passThrough,
    send: passThrough,
    close: passThrough,
};
const SERVER_WRAPPERS_AS_BUILT = {`,
});

export const ABLATIONS = {
  inert: {
    why: 'forkwatch loaded and started as register does; the SDK server classes not patched',
    edits: [
      {
        file: PATCH,
        find: 'function patchServer(proto, runtime, wrap, flavor) {\n',
        replace: 'function patchServer(proto, runtime, wrap, flavor) {\n    return;\n',
      },
    ],
  },
  pass: {
    why: 'every SDK server method wrapped by a pass-through: nothing recorded',
    edits: [passThroughWrappers('passThrough')],
  },
  'pass-fixed': {
    why: 'every SDK server method wrapped by a pass-through of four named parameters (no `arguments`)',
    edits: [
      passThroughWrappers('passThrough'),
      {
        file: PATCH,
        find: 'const passThrough = (original) => function () { return original.apply(this, arguments); };',
        replace: 'const passThrough = (original) => function (a, b, c, d) { return original.call(this, a, b, c, d); };',
      },
    ],
  },
  'inert-redefine': {
    why: 'nothing patched, but each SDK server method defined again on its prototype as itself (what a wrap does to it)',
    edits: [
      {
        file: PATCH,
        find: 'function patchServer(proto, runtime, wrap, flavor) {\n',
        replace: `function patchServer(proto, runtime, wrap, flavor) {
    for (const method of exports.WEB_STANDARD_SERVER_METHODS) {
        const own = Object.getOwnPropertyDescriptor(proto, method);
        Object.defineProperty(proto, method, { configurable: true, enumerable: own.enumerable, writable: true, value: own.value });
    }
    return;
`,
      },
    ],
  },
  'pass-requests': {
    why: 'only handleRequest and handleGetRequest wrapped, by pass-throughs: no per-event wrapper',
    edits: [
      passThroughWrappers('passThrough'),
      {
        file: PATCH,
        find: '    for (const method of exports.WEB_STANDARD_SERVER_METHODS) {',
        replace: "    for (const method of ['handleRequest', 'handleGetRequest']) {",
      },
    ],
  },
  'store-only': {
    why: "pass-through wrappers, and the transport's event store replaced by forkwatch's wrapper, which only delegates",
    edits: [passThroughWrappers('storeOnlyHandleRequest'), NO_EVENT_RECORDING],
  },
  'no-store': {
    why: 'the whole patch but the store wrapper: the store is never replaced, so no event is recorded',
    edits: [
      {
        file: STORE,
        find: 'function ensureRecordingStore(transport, hooks, recorder) {\n',
        replace: 'function ensureRecordingStore(transport, hooks, recorder) {\n    return;\n',
      },
    ],
  },
  'no-event': {
    why: 'the whole patch, with no per-event recording (the store wrapper only delegates, writeSSEEvent records nothing)',
    edits: [
      NO_EVENT_RECORDING,
      {
        file: PATCH,
        find: /(function wrapWriteSSEEvent[\s\S]*?)if \(runtime\.enabled\) \{/,
        replace: '$1if (false) {',
      },
    ],
  },
  'twice-same': {
    why: 'the whole server patch applied twice, by the same modules (twice the per-request and per-write work)',
    edits: [
      {
        file: PATCH,
        find: '    patchServer(proto, runtime, wrap, flavors_1.webFlavor);\n}',
        replace:
          '    patchServer(proto, runtime, wrap, flavors_1.webFlavor);\n    patchServer(proto, runtime, wrap, flavors_1.webFlavor);\n}',
      },
    ],
  },
  'twice-copy': {
    why: 'the whole server patch applied again from a second copy of forkwatch: two store wrappers, observers, ledger accounts per session, twice the code',
    copyInside: '_copy',
    edits: [
      {
        file: PATCH,
        find: '    patchServer(proto, runtime, wrap, flavors_1.webFlavor);\n}',
        replace:
          "    patchServer(proto, runtime, wrap, flavors_1.webFlavor);\n    require('../../../_copy/server/stacks/sdk/patch.js').patchWebStandardStreamableHttpServer(proto, runtime, wrap);\n}",
      },
    ],
  },
  'lazy-signal': {
    why: "a GET's abort signal read when the drop watch is armed, not when the GET arrives",
    edits: [
      {
        file: 'server/web-request.js',
        find: /function webClientDropWatch\(req, dropped\) \{[\s\S]*?\n\}\n/,
        replace: `function webClientDropWatch(req, dropped) {
    let armed = false;
    return () => {
        if (armed)
            return;
        armed = true;
        const signal = req?.signal;
        const listen = signal?.addEventListener;
        if (!signal || typeof listen !== 'function')
            return;
        if (signal.aborted)
            dropped();
        else
            listen.call(signal, 'abort', dropped, { once: true });
    };
}
`,
      },
    ],
  },
};

/** The client's cuts (measured as `bare/NAME` pairs): the wire observer and the SDK client patch apart. */
const NO_WIRE_OBSERVER = {
  file: 'lifecycle/instrumentation.js',
  find: '        if (this._removeFetchObserver || this.getConfig().observeFetch === false)\n            return;',
  replace: '        return;',
};
const NO_CLIENT_PATCH = {
  file: 'client/patches/streamable-http-client.js',
  find: 'function patchStreamableHttpClient(proto, runtime, wrap) {\n',
  replace: 'function patchStreamableHttpClient(proto, runtime, wrap) {\n    return;\n',
};
Object.assign(ABLATIONS, {
  'client-no-wire': {
    why: "the SDK client patched, undici's channels not observed (no wire observer)",
    edits: [NO_WIRE_OBSERVER],
  },
  'inert-client': {
    why: 'the SDK client not patched: the wire observer alone sees its session GETs',
    edits: [NO_CLIENT_PATCH],
  },
  'inert-client-no-wire': {
    why: 'forkwatch loaded on the client, nothing patched or observed',
    edits: [NO_CLIENT_PATCH, NO_WIRE_OBSERVER],
  },
  'inert-client-noop-channels': {
    why: "nothing patched; undici's create, headers and error channels subscribed by functions that do nothing",
    edits: [
      NO_CLIENT_PATCH,
      {
        file: 'client/wire/undici-channels.js',
        find: '    global[INSTALLED] = true;\n    const observer = new ChannelObserver(runtime);\n    observer.subscribe();\n',
        replace: `    global[INSTALLED] = true;
    const noop = () => {};
    for (const name of ['undici:request:create', 'undici:request:headers', 'undici:request:error']) diagnosticsChannel.subscribe(name, noop);
    const observer = { unsubscribe() {} };
`,
      },
    ],
  },
});

/**
 * Not forkwatch at all: `register` only keeps BALLAST_KB (default 2,000) kilobytes of small objects with a closure
 * each, about what forkwatch keeps in a server's heap after the warm-up (25.2 against 23.2 MB, the tenth pass): does a
 * larger heap alone cost what forkwatch costs? (The eleventh pass: 2 MB nothing, 4 MB a third of forkwatch's step.)
 */
ABLATIONS['inert-ballast'] = {
  why: 'no forkwatch: register keeps BALLAST_KB kilobytes (default 2,000) of small objects with closures, nothing else',
  edits: [
    {
      file: 'register.js',
      find: '"use strict";\n',
      replace: `"use strict";
{
    const keep = [];
    for (let i = 0; i < Number(process.env.BALLAST_KB ?? 2000) * 5; i++) {
        const name = \`item-\${i}\`;
        keep.push({ name, at: i, fn: () => name + i });
    }
    globalThis.__forkwatchBallast = keep;
}
return;
`,
    },
  ],
};

/**
 * Not a cut: the wire observer as built, its handlers timed from inside (bench/wire-handler-time.mjs reads the
 * `WIRETIME` lines it writes to stderr at exit: each call's handler, request method and nanoseconds).
 */
ABLATIONS['timed-wire'] = {
  why: 'the wire observer as built, each of its channel handlers timed from inside (stderr at exit)',
  edits: [
    {
      file: 'client/wire/undici-channels.js',
      find: `    guard(what, fn) {
        return message => {
            try {
                fn(message);
            }`,
      replace: `    guard(what, fn) {
        return message => {
            const start = process.hrtime.bigint();
            try {
                fn(message);
                const took = Number(process.hrtime.bigint() - start);
                (globalThis.__forkwatchWireTimes ??= []).push(\`\${what}|\${message?.request?.method}|\${took}\`);
            }`,
    },
    {
      file: 'client/wire/undici-channels.js',
      find: 'function installUndiciChannelObserver(runtime) {\n',
      replace: `function installUndiciChannelObserver(runtime) {
    process.on('exit', () => process.stderr.write(\`WIRETIME \${JSON.stringify(globalThis.__forkwatchWireTimes ?? [])}\\n\`));
`,
    },
  ],
};

/** Writes `<out>/<name>/src` for each ablation (all, or `names`), from `from` (default: this repository's build/src). */
export function makeAblations(out, { from = join(root, 'build', 'src'), names = Object.keys(ABLATIONS) } = {}) {
  const made = {};
  for (const name of names) {
    const ablation = ABLATIONS[name];
    if (!ablation) throw new Error(`no ablation ${name}; known: ${Object.keys(ABLATIONS).join(', ')}`);
    const src = join(out, name, 'src');
    rmSync(join(out, name), { recursive: true, force: true });
    mkdirSync(dirname(src), { recursive: true });
    cpSync(from, src, { recursive: true });
    if (ablation.copyInside) cpSync(from, join(src, ablation.copyInside), { recursive: true });
    for (const { file, find, replace } of ablation.edits) {
      const path = join(src, file);
      const text = readFileSync(path, 'utf8');
      const found =
        typeof find === 'string' ? text.split(find).length - 1 : (text.match(new RegExp(find, 'g')) ?? []).length;
      if (found !== 1) throw new Error(`${name}: ${file} holds the text to edit ${found} times, not once`);
      writeFileSync(path, text.replace(find, replace));
    }
    made[name] = src;
  }
  return made;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [out = join(root, '.tmp', 'ablations'), ...names] = process.argv.slice(2);
  const made = makeAblations(out, names.length > 0 ? { names } : {});
  for (const [name, src] of Object.entries(made)) console.log(`${name.padEnd(14)} ${src}  ${ABLATIONS[name].why}`);
}
