import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HTTP, type CloudEventV1 } from 'cloudevents';
import { BadEvent, parseIncoming, type Incoming } from '../events/incoming.js';
import { PATHS } from '../events/types.js';
import type { Handled } from './handler-types.js';
import { startInvocation, type Invocation } from './invocation.js';
import { answerFor, senderDecision } from './kube/retry-policy.js';
import { applyHttpTimeouts } from './http-timeouts.js';
import type { SenderAuthMode, VerifySender } from './sender-auth/sender-auth.js';
import type { Telemetry } from './telemetry/telemetry.js';

// The function's HTTP front door, following the Knative Functions contract
// (one handler for CloudEvents on POST /, plus health endpoints) on plain
// node:http: it starts faster and holds less memory than a framework, and the
// CloudEvents binding itself is the SDK's.

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** One `event handled` / `event rejected` log line, as operators and tests read it. */
export interface EventLogLine {
  msg?: string;
  eventId?: string;
  type?: string;
  subject?: string;
  gateway?: string;
  gateways?: number;
  /** A resync: Gateways planned, and the API requests the pass made. */
  planned?: number;
  requests?: number;
  outcome?: string;
  status?: number;
  detail?: string;
  durationMs?: number;
  [k: string]: unknown;
}

export interface ServerOptions {
  bodyLimitBytes: number;
  log: Logger;
  /** One parsed event, in its invocation (created here, once per request). */
  handle(incoming: Incoming, invocation: Invocation): Promise<Handled>;
  /** Each invocation's budget, below the Knative Service's timeoutSeconds. */
  budgetMs: number;
  /** Readiness beyond "not draining" (e.g. configuration loaded). */
  ready?(): boolean;
  /** Sender authentication (SENDER_AUTH); absent means off. */
  senderAuth?: { mode: SenderAuthMode; verify: VerifySender };
  /** A span per invocation and the events counter (NO_TELEMETRY for none). */
  telemetry: Telemetry;
}

export interface FunctionServer {
  server: Server;
  /** Stops accepting work (503), waits for in-flight events, then closes. */
  drain(timeoutMs: number): Promise<void>;
  inFlight(): number;
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const JSON_TYPES = /^(application\/(json|cloudevents\+json)|[a-z]+\/[a-z0-9.+-]*\+json)\s*(;|$)/i;

// Answering 413 while the client is still uploading makes many clients
// (undici's fetch among them) report "other side closed" instead of the
// answer. So the rest of an oversized body is read and discarded, without
// buffering, and the 413 goes out once the upload ends. A body that goes on
// past DISCARD_MAX_BYTES more (or forever) is answered at that point instead.
const DISCARD_MAX_BYTES = 4 * 1024 * 1024;

/** Reads and drops the rest of a body, without buffering, until it ends or DISCARD_MAX_BYTES more have come. */
function discardBody(req: IncomingMessage): Promise<void> {
  req.removeAllListeners('data');
  req.removeAllListeners('end');
  return new Promise((resolve) => {
    if (req.readableEnded) return resolve();
    let discarded = 0;
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > DISCARD_MAX_BYTES) {
        req.removeAllListeners('data');
        resolve();
      }
    });
    req.once('end', () => resolve());
    req.once('close', () => resolve());
  });
}

function discardThenReject(req: IncomingMessage, error: HttpError, reject: (e: unknown) => void): void {
  void discardBody(req).then(() => reject(error));
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    const error = new HttpError(413, `request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
    if (declared > limit + DISCARD_MAX_BYTES) return Promise.reject(error);
    return new Promise((_, reject) => discardThenReject(req, error, reject));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        discardThenReject(req, new HttpError(413, `request body exceeds the limit of ${limit} bytes`), reject);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function toCloudEvent(req: IncomingMessage, body: string): CloudEventV1<unknown> {
  const contentType = req.headers['content-type'];
  if (contentType === undefined || contentType === '') throw new HttpError(415, 'missing Content-Type: send a CloudEvent in binary mode (application/json data) or structured mode (application/cloudevents+json)');
  if (/^application\/cloudevents-batch\+json/i.test(contentType)) throw new HttpError(415, 'batched CloudEvents are not accepted: send one event per request');
  if (!JSON_TYPES.test(contentType)) throw new HttpError(415, `unsupported Content-Type "${contentType.slice(0, 100)}": event data must be JSON`);
  // Binary mode names the spec version in a header; without it this is a
  // plain JSON POST, not a CloudEvent (the SDK would assume 1.0).
  const structured = /^application\/cloudevents\+json/i.test(contentType);
  const version = req.headers['ce-specversion'];
  if (!structured && version === undefined) throw new HttpError(400, 'not a CloudEvent: binary mode needs the ce-specversion, ce-id, ce-source and ce-type headers');
  if (!structured && version !== '1.0') throw new HttpError(400, `unsupported CloudEvents spec version "${String(version).slice(0, 20)}": only 1.0`);
  let message: unknown = body;
  if (structured) {
    // The SDK fills in a missing id (a fresh UUID) and specversion (1.0), so
    // check the sender's own before it does.
    try {
      message = JSON.parse(body);
    } catch (err) {
      throw new HttpError(400, `not a valid CloudEvent: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500));
    }
    const attrs = (message !== null && typeof message === 'object' && !Array.isArray(message) ? message : {}) as Record<string, unknown>;
    if (attrs.specversion !== '1.0') throw new HttpError(400, `not a valid CloudEvent: specversion must be "1.0", got ${JSON.stringify(attrs.specversion ?? null).slice(0, 20)}`);
    if (typeof attrs.id !== 'string' || attrs.id === '') throw new HttpError(400, 'not a valid CloudEvent: structured mode needs a non-empty string id');
  }
  let parsed: CloudEventV1<unknown> | CloudEventV1<unknown>[];
  try {
    parsed = HTTP.toEvent({ headers: req.headers, body: message });
  } catch (err) {
    throw new HttpError(400, `not a valid CloudEvent: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500));
  }
  if (Array.isArray(parsed)) throw new HttpError(415, 'batched CloudEvents are not accepted: send one event per request');
  return parsed;
}

function reply(res: ServerResponse, status: number, message?: string): void {
  if (res.headersSent) return;
  if (message === undefined) {
    // An empty body: Knative takes a non-empty 2xx body as a reply event.
    res.writeHead(status, { 'content-length': '0' });
    res.end();
    return;
  }
  const body = `${JSON.stringify({ error: message })}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body).toString() });
  res.end(body);
}

/**
 * The server's connections, each with the answers still pending on it.
 * Node's closeIdleConnections skips a connection on which no request has
 * started (a client's spare connection, opened and never used), and once the
 * server is closed nothing else times it out: it would hold the drain until
 * the client closes it. So the drain closes, itself, every connection that
 * owes no answer.
 */
function trackConnections(server: Server): { closeUnanswered(): void } {
  const pending = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    pending.set(socket, 0);
    socket.once('close', () => pending.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    pending.set(socket, (pending.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = pending.get(socket);
      if (left !== undefined) pending.set(socket, left - 1);
    });
  });
  return {
    closeUnanswered: () => {
      for (const [socket, left] of pending) if (left === 0) socket.destroy();
    },
  };
}

export function createFunctionServer(opts: ServerOptions): FunctionServer {
  const { telemetry } = opts;
  let draining = false;
  let inFlight = 0;
  let idle: (() => void) | undefined;

  // Once draining, every answer closes its connection. Node closes only the
  // connections idle at server.close(); one whose answer is still being
  // written then would stay open for the whole keep-alive (120 s, longer than
  // queue-proxy's 90 s, http-timeouts.ts), and so would the drain.
  const send = (res: ServerResponse, status: number, message?: string): void => {
    if (draining && !res.headersSent) res.setHeader('connection', 'close');
    reply(res, status, message);
  };

  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === PATHS.live) return send(res, 200);
      if (req.method === 'GET' && path === PATHS.ready) return send(res, !draining && (opts.ready?.() ?? true) ? 200 : 503);
      if (path !== PATHS.events && path !== PATHS.deadLetter) return send(res, 404, `no route for ${path}`);
      if (req.method !== 'POST') return send(res, 405, 'POST a CloudEvent');
      if (draining) {
        res.setHeader('retry-after', '1');
        return send(res, 503, 'shutting down');
      }
      inFlight++;
      const started = performance.now();
      const arrived = Date.now();
      let event: CloudEventV1<unknown> | undefined;
      let sender: string | undefined;
      await telemetry.invocation(req.headers, async (answered) => {
        try {
          // Before the body is read or parsed: a refused sender costs no parsing
          // and no API request.
          if (opts.senderAuth) {
            const verdict = await opts.senderAuth.verify(req.headers.authorization);
            const refusal = senderDecision(opts.senderAuth.mode, verdict);
            if (verdict.ok) sender = verdict.sender;
            else if (refusal === undefined) opts.log.warn({ path, detail: verdict.reason, senderAuth: opts.senderAuth.mode }, 'sender not verified, served anyway');
            if (refusal !== undefined) {
              const status = answerFor(refusal);
              const outcome = `sender-${refusal.sender}`;
              opts.log.warn({ path, outcome, status, detail: verdict.ok ? undefined : verdict.reason, durationMs: Math.round(performance.now() - started) }, 'sender refused');
              if (refusal.sender === 'refused') res.setHeader('www-authenticate', 'Bearer');
              else res.setHeader('retry-after', '1');
              // Answered once the upload is over, as for 413 (see above).
              await discardBody(req);
              answered({ status, outcome });
              return send(res, status, verdict.ok ? undefined : verdict.reason);
            }
          }
          const body = await readBody(req, opts.bodyLimitBytes);
          event = toCloudEvent(req, body);
          const incoming = parseIncoming(event, path === PATHS.deadLetter);
          const { invocation, end } = startInvocation({ type: event.type, id: event.id }, opts.budgetMs, telemetry, arrived);
          const handled = await opts.handle(incoming, invocation).finally(end);
          const answer = answerFor(handled);
          opts.log.info({ eventId: event.id, type: event.type, subject: event.subject, ...(sender ? { sender } : {}), gateway: handled.gateway, gateways: handled.gateways, planned: handled.planned, requests: handled.requests, classes: handled.classes, ...(handled.woke !== undefined && { woke: handled.woke }), outcome: handled.outcome, status: answer, detail: handled.detail, durationMs: Math.round(performance.now() - started) }, 'event handled');
          answered({ status: answer, eventType: event.type, eventId: event.id, ...(event.subject ? { subject: event.subject } : {}), outcome: handled.outcome, ...(handled.ours !== undefined ? { resyncGateways: handled.ours } : {}) });
          send(res, answer);
        } catch (err) {
          const status = err instanceof HttpError ? err.status : err instanceof BadEvent ? 400 : 500;
          const message = err instanceof Error ? err.message : String(err);
          const entry = { eventId: event?.id, type: event?.type, outcome: status === 500 ? 'internal-error' : 'rejected', status, detail: message, durationMs: Math.round(performance.now() - started) };
          if (status === 500) opts.log.error({ ...entry, stack: err instanceof Error ? err.stack : undefined }, 'event failed');
          else opts.log.warn(entry, 'event rejected');
          // The unread rest of an oversized body is discarded, not parsed.
          if (status === 413) req.resume();
          answered({ status, ...(event ? { eventType: event.type, eventId: event.id } : {}), outcome: entry.outcome });
          send(res, status, message);
        } finally {
          inFlight--;
          if (inFlight === 0) idle?.();
        }
      });
    })();
  });
  // Idle connections outlive queue-proxy's; a slow or stuck client must not
  // hold a connection (and the drain) forever (http-timeouts.ts).
  applyHttpTimeouts(server);
  const connections = trackConnections(server);

  return {
    server,
    inFlight: () => inFlight,
    drain: async (timeoutMs) => {
      draining = true;
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((r) => { idle = r; }),
          new Promise<void>((r) => setTimeout(r, timeoutMs).unref()),
        ]);
      }
      await new Promise<void>((r) => {
        server.close(() => r());
        // After the timeout, a handler that never finished must not hold the
        // process: its client sees the connection drop and delivers again.
        // Otherwise a connection that owes an answer closes after it (send).
        if (inFlight > 0) server.closeAllConnections();
        else connections.closeUnanswered();
      });
    },
  };
}
