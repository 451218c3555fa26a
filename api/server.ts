import http from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { newId } from '../services/ids';

/** What Node's HTTP parser refuses before any request reaches Koa, as the contract's envelope. */
const PARSER_REFUSALS: Record<string, { status: number; code: string; detail: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'HEADERS_TOO_LARGE', detail: 'The request headers are larger than the server accepts (16 KiB).' },
  // Node's headersTimeout (60 s for the headers) and requestTimeout (300 s for the whole request): a
  // client too slow was told 400 "not valid HTTP" (a thirteenth probe), where Node itself answers 408
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'REQUEST_TIMEOUT', detail: 'The request did not arrive in full within the time the server waits for it.' },
};

/** The error envelope's body, for answers written before (or without) Koa. */
const bareEnvelope = (code: string, detail: string): string => JSON.stringify({ status: 'error', message: code, messageDetail: detail });

/** Writes an error answer in the envelope straight onto a connection that has no response object, then closes it. */
function answerOnSocket(socket: Duplex, status: number, code: string, detail: string): void {
  const body = bareEnvelope(code, detail);
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${newId('request')}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** The latest response of each connection, to tell whether the request being read was answered already. */
const lastResponse = new WeakMap<Duplex, http.ServerResponse>();

/**
 * Answers a request Node's parser refused (headers too large, malformed HTTP) in the error envelope
 * with a request id, instead of Node's bare status line; a socket that can no longer be written to is
 * just closed.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A request answered before its body arrived (an early 413, 401 or 415) whose body then stops: a
  // second status line after that answer would be an answer to no request, so the connection is closed.
  const last = lastResponse.get(socket);
  if (!socket.writable || (last?.headersSent && !last.req.complete)) {
    socket.destroy();
    return;
  }
  const known = PARSER_REFUSALS[err.code ?? ''] ?? { status: 400, code: 'BAD_REQUEST', detail: 'The request is not valid HTTP.' };
  answerOnSocket(socket, known.status, known.code, known.detail);
}

/** The error envelope with a fresh request id, written on `res` (for a request Koa never sees). */
function answerBare(res: http.ServerResponse, status: number, code: string, detail: string): void {
  const body = bareEnvelope(code, detail);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-request-id': newId('request'), connection: 'close' });
  res.end(body);
}

/**
 * A Node HTTP server for the Koa app (Node's options, its defaults when none); Koa handles its own errors, so its promise is not awaited here.
 * An HTTP/1.1 request without a Host header is refused here (RFC 9112 §3.2) in the envelope: Node's
 * own refusal (requireHostHeader) was a bare 400 without an x-request-id (a seventeenth probe).
 */
export function createHttpServer(app: Koa, options: http.ServerOptions = {}): http.Server {
  const handle = app.callback();
  const server = http.createServer({ ...options, requireHostHeader: false }, (req, res) => {
    lastResponse.set(req.socket, res);
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) {
      answerBare(res, 400, 'BAD_REQUEST', 'An HTTP/1.1 request needs a Host header.');
      return;
    }
    void handle(req, res);
  });
  server.on('clientError', answerClientError);
  // Node's own answers to these were outside the envelope (an eighteenth probe): a bare 417 without a
  // body or a request id (kept alive, so the refused body was then read as the next request), and a
  // CONNECT's connection closed without a word. Only Expect: 100-continue is met (Node does so itself).
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    lastResponse.set(req.socket, res);
    answerBare(res, 417, 'EXPECTATION_FAILED', `The server meets only "Expect: 100-continue", not "${(req.headers.expect ?? '').slice(0, 100)}".`);
  });
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, 405, 'METHOD_NOT_ALLOWED', 'CONNECT is not allowed: this is an API server, not a proxy.');
  });
  return server;
}
