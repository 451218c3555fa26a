import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type AddressObject } from 'mailparser';

export interface CaughtMail {
  id: number;
  receivedAt: Date;
  from: string;
  to: string[];
  subject: string;
  text: string;
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(field) ? field : field ? [field] : [];
  return list.flatMap((a) => a.value.map((v) => (v.address ?? '').toLowerCase())).filter((a) => a !== '');
}

/**
 * A real SMTP server (smtp-server) on loopback that keeps the last messages it received: the
 * development mail box of `npm start` when no SMTP_URL is set, and the mail box of the tests.
 */
export class MailCatcher {
  private readonly messages: CaughtMail[] = [];
  private readonly waiters = new Set<() => void>();
  private nextId = 1;
  private server: SMTPServer | null = null;
  url = '';

  constructor(
    private readonly options: { keep?: number; onMail?: (mail: CaughtMail) => void } = {},
  ) {}

  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      banner: 'development mail catcher',
      onData: (stream, _session, callback) => {
        simpleParser(stream)
          .then((parsed) => {
            this.keep({
              id: this.nextId++,
              receivedAt: new Date(),
              from: addresses(parsed.from).join(', '),
              to: addresses(parsed.to),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
            });
            callback();
          })
          .catch((err: Error) => callback(err));
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    const address = server.server.address() as AddressInfo;
    this.url = `smtp://${host}:${address.port}`;
    return this.url;
  }

  private keep(mail: CaughtMail): void {
    this.messages.push(mail);
    const keep = this.options.keep ?? 200;
    if (this.messages.length > keep) this.messages.splice(0, this.messages.length - keep);
    this.options.onMail?.(mail);
    for (const wake of this.waiters) wake();
  }

  /** Newest first. */
  list(): CaughtMail[] {
    return [...this.messages].reverse();
  }

  /** Messages to `address`, oldest first. */
  to(address: string): CaughtMail[] {
    return this.messages.filter((m) => m.to.includes(address.toLowerCase()));
  }

  /** The first message received from now on (or already here after `since`) that matches. */
  async waitFor(match: (mail: CaughtMail) => boolean, options: { timeoutMs?: number; afterId?: number } = {}): Promise<CaughtMail> {
    const afterId = options.afterId ?? 0;
    const find = () => this.messages.find((m) => m.id > afterId && match(m));
    const found = find();
    if (found) return found;
    return new Promise<CaughtMail>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error('no matching mail arrived in time'));
      }, options.timeoutMs ?? 10_000);
      const check = () => {
        const hit = find();
        if (!hit) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(hit);
      };
      this.waiters.add(check);
    });
  }

  /** Id of the newest message so far (to wait only for later ones). */
  lastId(): number {
    return this.nextId - 1;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
