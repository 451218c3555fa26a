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

  /** Sends one message; 503 when no SMTP server is configured or it refuses. */
  async send(mail: OutgoingMail): Promise<void> {
    if (!this.transport) throw new AppError('SERVICE_UNAVAILABLE', 503, 'Mail cannot be sent: no SMTP server is configured (SMTP_URL).');
    try {
      await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
    } catch (cause) {
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'Mail could not be sent; try again in a moment.', undefined, cause);
    }
  }

  close(): void {
    this.transport?.close();
  }
}
