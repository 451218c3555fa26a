import nodemailer, { type Transporter } from 'nodemailer';
import { AppError } from './errors';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/**
 * The one way mail leaves the service: nodemailer over SMTP_URL. Messages carry secrets (links,
 * codes), so nothing of their content is ever logged here.
 */
export class Mailer {
  private readonly transport: Transporter | null;

  constructor(smtpUrl: string | undefined, private readonly from: string) {
    this.transport = smtpUrl ? nodemailer.createTransport(smtpUrl) : null;
  }

  get configured(): boolean {
    return this.transport !== null;
  }

  /**
   * Sends one message. 400 when the SMTP server refuses the recipient for good (a 5xx reply to the
   * address: a retry would be refused the same way, and a 503 tells clients to retry; the fuzzer's
   * address of 254 characters with a label of 63 digits was refused so); 503 when no SMTP server is
   * configured, it cannot be reached, or it refuses for now.
   */
  async send(mail: OutgoingMail): Promise<void> {
    if (!this.transport) throw new AppError('SERVICE_UNAVAILABLE', 503, 'Mail cannot be sent: no SMTP server is configured (SMTP_URL).');
    try {
      await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
    } catch (cause) {
      if (recipientRefusedForGood(cause)) throw new AppError('VALIDATION_ERROR', 400, 'The mail server refuses this address: it cannot receive mail. Check the address.', undefined, cause);
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'Mail could not be sent; try again in a moment.', undefined, cause);
    }
  }

  close(): void {
    this.transport?.close();
  }
}

/** nodemailer's error for recipients the server rejected (EENVELOPE) with a permanent (5xx) reply. */
function recipientRefusedForGood(err: unknown): boolean {
  const e = err as { code?: unknown; responseCode?: unknown } | null;
  return e?.code === 'EENVELOPE' && typeof e.responseCode === 'number' && e.responseCode >= 500 && e.responseCode < 600;
}
