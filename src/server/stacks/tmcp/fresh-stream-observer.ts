/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The observer of a server transport that serves every session of its server and answers every GET with a fresh
 * stream (tmcp's HttpTransport): one per transport instance. Its design has no event store and no list of sessions
 * forkwatch can read, so what it does is counted from each request and its answer:
 *
 * - a GET carrying Last-Event-ID is a resume it cannot honour: 200 and a fresh stream is `ignored` (a 409, another
 *   stream still open, is `rejected`), through the same ServerResume as the SDK's transports (span and outcome);
 * - a request carrying an Mcp-Session-Id this transport did not hold, answered as a live session (2xx), is a revived
 *   session with nothing restored (`forkwatch_server_revived_sessions_total{state="empty"}`), once per id: tmcp
 *   answers a GET for any id with a fresh stream, so a client that lost its process silently starts over;
 * - once its broadcasts are watched (construction.ts), every request, GET answered 200 and DELETE of a session goes to
 *   the standalone streams (standalone-streams.ts), which hand the delivery ledger what each session got or missed.
 *
 * Ids it holds: those it issued (the answer to a request without one carried `mcp-session-id`), those counted revived,
 * less those it answered a DELETE for (held-sessions.ts).
 *
 * Requests and answers are only read; every method catches its own errors and reports them through diag.
 */
import type { ServerRuntime } from '../../server-runtime';
import type { WebRequestLike } from '../../../shared/internal-types';
import { isProbeUserAgent } from '../../../shared/names';
import { protocolHasResumability } from '../../../shared/session-id';
import { HeldSessions } from './held-sessions';
import { StandaloneStreams } from './standalone-streams';
import { parentContextOf, webHeader, webHeadersGetter } from '../../web-request';
import { ServerResume } from '../../server-resume';

/** A transport without an event store replays nothing: there is no replay to tell the delivery ledger about. */
const NO_REPLAY = { replaySent() {} };
const REVIVED_EMPTY = { state: 'empty' } as const;

/** What to do with the answer to one request, once the transport settled it. */
export interface AnswerWatch {
  /** The resume the request is, if it carried Last-Event-ID: its handling runs in the resume's context. */
  readonly resume: ServerResume | undefined;
  answered(response: unknown): void;
  failed(error: unknown): void;
}

interface ResponseLike {
  status?: unknown;
  headers?: { get?(name: string): string | null | undefined };
}

export class FreshStreamObserver {
  private readonly held = new HeldSessions();
  /** The sessions' standalone streams, once the transport's broadcasts are watched (construction.ts). */
  private streams: StandaloneStreams | undefined = undefined;

  constructor(
    readonly transport: object,
    /** The patch that saw the transport last: a re-patch takes over. */
    public runtime: ServerRuntime,
  ) {}

  /** A request, before the transport handles it: what its answer will tell, or undefined if nothing. */
  requestReceived(request: WebRequestLike | undefined): AnswerWatch | undefined {
    try {
      const header = (name: string) => webHeader(request, name);
      const protocolVersion = header('mcp-protocol-version');
      // Protocol 2026-07-28 has no sessions and no resumes: the per-request path, not observed here.
      if (!protocolHasResumability(protocolVersion)) return undefined;
      const method = request?.method;
      const sessionId = header('mcp-session-id');
      if (sessionId !== undefined && this.streams !== undefined) {
        if (method === 'GET') this.streams.getReceived(sessionId);
        else this.streams.requestReceived(sessionId);
      }
      const cursor = method === 'GET' ? header('last-event-id') : undefined;
      const resume = cursor === undefined ? undefined : this.beginResume(request, cursor, sessionId, protocolVersion);
      return {
        resume,
        answered: response =>
          this.answered(method, sessionId, resume, response as ResponseLike | null | undefined, request),
        failed: error => resume?.concludeFailed(error),
      };
    } catch (error) {
      this.runtime.diag.error('observing a request failed; this request is not recorded', error);
      return undefined;
    }
  }

  private beginResume(
    request: WebRequestLike | undefined,
    cursor: string,
    sessionId: string | undefined,
    protocolVersion: string | undefined,
  ): ServerResume {
    return new ServerResume(this.runtime, {
      transport: 'streamable_http',
      instance: this.transport,
      session: NO_REPLAY,
      cursor,
      sessionId,
      protocolVersion,
      hasEventStore: false,
      fromProbe: isProbeUserAgent(webHeader(request, 'user-agent')),
      parent: parentContextOf(request, webHeadersGetter),
    });
  }

  private answered(
    method: unknown,
    sessionId: string | undefined,
    resume: ServerResume | undefined,
    response: ResponseLike | null | undefined,
    request: WebRequestLike | undefined,
  ): void {
    try {
      const status = typeof response?.status === 'number' ? response.status : undefined;
      if (resume) void resume.concludeAnswered(status).catch(error => this.failedToRecord(error));
      // null: the request was not for the transport's path; anything but a 2xx is not a live session.
      if (status === undefined || status < 200 || status >= 300) return;
      if (sessionId === undefined) {
        const issued = response?.headers?.get?.('mcp-session-id');
        if (typeof issued === 'string' && issued !== '') this.held.hold(issued);
        return;
      }
      if (method === 'DELETE') {
        this.held.release(sessionId);
        this.streams?.deleted(sessionId);
        return;
      }
      if (method === 'GET' && status === 200) this.streams?.streamOpened(sessionId, request);
      if (this.held.has(sessionId)) return;
      this.held.hold(sessionId);
      this.runtime.instruments.serverRevivedSessions.add(1, REVIVED_EMPTY);
    } catch (error) {
      this.failedToRecord(error);
    }
  }

  private failedToRecord(error: unknown): void {
    this.runtime.diag.error('recording an answer failed; this request is not recorded', error);
  }

  /** The transport's broadcasts are watched from now on (construction.ts): its sessions' streams are recorded. */
  watchStreams(): StandaloneStreams {
    this.streams ??= new StandaloneStreams(this);
    return this.streams;
  }
}

const observers = new WeakMap<object, FreshStreamObserver>();

/** The transport's observer, bound to the patch that calls. */
export function freshStreamObserverOf(transport: object, runtime: ServerRuntime): FreshStreamObserver {
  let observer = observers.get(transport);
  if (observer === undefined) {
    observer = new FreshStreamObserver(transport, runtime);
    observers.set(transport, observer);
  } else observer.runtime = runtime;
  return observer;
}
