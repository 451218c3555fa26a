import type { MikroORM } from '@mikro-orm/postgresql';
import { SIGN_IN_MAIL_INTERVAL_SECONDS } from '../../config/plans';
import { accountExists, createAccountWithWorkspace } from '../accounts';
import { AppError, isUniqueViolation, mapDatabaseError } from '../errors';
import { newId } from '../ids';
import type { Mailer, OutgoingMail } from '../mail';
import { magicLinkMail, staffCodeMail } from './sign-in-mail';
import type { SignInLimits } from './sign-in-limits';
import { codeDigest, randomToken, sameDigest, sha256, sixDigitCode, verifyPassword } from './secrets';
import { startSession, type ClientInfo, type SessionPolicy, type TokenPair } from './sessions';

export type NextStep = 'magic_link' | 'password';
type ChallengeKind = 'magic_link' | 'staff_code';

const CHALLENGE_MINUTES: Record<ChallengeKind, number> = { magic_link: 15, staff_code: 10 };
/** Wrong codes that void a challenge (DESIGN.md). */
export const MAX_CODE_ATTEMPTS = 5;

export interface SignedIn extends TokenPair {
  /** The account was created by this sign-in (first verification of an unknown address). */
  created: boolean;
}

export interface SignInDeps {
  orm: MikroORM;
  mailer: Mailer;
  limits: SignInLimits;
  session: SessionPolicy;
  codeSecret: string;
  frontendUrl: string;
  staffDomains: string[];
}

export function staffDomainsOf(setting: string): string[] {
  return setting
    .split(',')
    .map((d) => d.trim().toLowerCase().replace(/^@/, ''))
    .filter((d) => d !== '');
}

const staffRequired = (): AppError =>
  new AppError('STAFF_LOGIN_REQUIRED', 403, 'Staff addresses sign in with their password and an emailed code (POST /v1/auth/login/password).');
const staffInvalid = (): AppError => new AppError('STAFF_LOGIN_INVALID', 401, 'Unknown staff address or wrong password.');
const linkInvalid = (): AppError => new AppError('MAGIC_LINK_INVALID', 400, 'This sign-in link is invalid, expired or already used; ask for a new one.');
const codeInvalid = (): AppError => new AppError('OTP_INVALID', 400, 'This code is wrong or expired; check the latest message or ask for a new one.');
const tooManyAttempts = (kind: ChallengeKind): AppError =>
  new AppError(
    'OTP_TOO_MANY_ATTEMPTS',
    400,
    kind === 'magic_link'
      ? `${MAX_CODE_ATTEMPTS} wrong codes: this code no longer works; the link in the same message still does, or start signing in again.`
      : `${MAX_CODE_ATTEMPTS} wrong codes: this code no longer works; start signing in again.`,
  );

type CodeCheck = { email: string } | { error: AppError };

/**
 * Sign-in by emailed link and code, and staff sign-in by password then emailed code (DESIGN.md,
 * "Accounts and sessions"). Answers never depend on whether an account exists.
 */
export class SignIn {
  constructor(private readonly deps: SignInDeps) {}

  /** Whether staff sign in here by password: only when some address domain is staff. */
  get offersPassword(): boolean {
    return this.deps.staffDomains.length > 0;
  }

  isStaffAddress(email: string): boolean {
    const domain = email.slice(email.lastIndexOf('@') + 1);
    return this.deps.staffDomains.includes(domain);
  }

  /** By the address's domain only. Non-staff addresses are sent their link and code at once. */
  async login(email: string, client: ClientInfo): Promise<NextStep> {
    await this.deps.limits.consume('login', { address: email, client: client.ip });
    if (this.isStaffAddress(email)) return 'password';
    await this.mailChallenge(email, 'magic_link');
    return 'magic_link';
  }

  async requestMagicLink(email: string, client: ClientInfo): Promise<void> {
    if (this.isStaffAddress(email)) throw staffRequired();
    await this.deps.limits.consume('magic_link_request', { address: email, client: client.ip });
    await this.mailChallenge(email, 'magic_link');
  }

  /**
   * Link token (with the address it was mailed to, when the caller shows it: a token for another
   * address then signs nothing in and stays unspent), or email + code; either voids both. An unknown
   * address gets its account here.
   */
  async verifyMagicLink(input: { token?: string; email?: string; code?: string }, client: ClientInfo): Promise<SignedIn> {
    // The address's budget holds back guesses of its six-digit code. A link's token cannot be guessed,
    // so its use is counted per client only: anyone may spend an address's budget with wrong codes,
    // which kept its owner's link at 429 for the window (a tenth probe).
    await this.deps.limits.consume('magic_link_verify', { address: input.token === undefined ? (input.email ?? null) : null, client: client.ip });
    let email: string;
    if (input.token !== undefined) {
      if (input.code !== undefined) {
        throw new AppError('VALIDATION_ERROR', 400, 'Send either the link token (and its address), or the email and the code, not both.');
      }
      email = await this.consumeLinkToken(input.token, input.email);
    } else {
      if (input.email === undefined || input.code === undefined) {
        throw new AppError('VALIDATION_ERROR', 400, 'Send the link token, or the email and the code.');
      }
      if (this.isStaffAddress(input.email)) throw staffRequired();
      email = this.settle(await this.checkCode(input.email, 'magic_link', input.code));
    }
    if (this.isStaffAddress(email)) throw staffRequired();
    return this.signInByAddress(email, 'magic_link', client);
  }

  /** Checks the password before any code is sent; unknown staff address and wrong password answer alike. */
  async staffPassword(email: string, password: string, client: ClientInfo): Promise<void> {
    await this.deps.limits.consume('password', { address: email, client: client.ip });
    const rows = this.isStaffAddress(email)
      ? await this.deps.orm.em.fork().execute<Array<{ password_hash: string | null }>>(
          `select password_hash from accounts where email = ? and is_staff and deleted_at is null`,
          [email],
        )
      : [];
    const ok = await verifyPassword(password, rows[0]?.password_hash ?? null);
    if (!ok) throw staffInvalid();
    await this.mailChallenge(email, 'staff_code');
  }

  async staffVerify(email: string, code: string, client: ClientInfo): Promise<SignedIn> {
    await this.deps.limits.consume('code_verify', { address: email, client: client.ip });
    if (!this.isStaffAddress(email)) throw staffInvalid();
    const checked = await this.checkCode(email, 'staff_code', code);
    if ('error' in checked && checked.error.code === 'NO_CHALLENGE') throw staffInvalid();
    this.settle(checked);
    const em = this.deps.orm.em.fork();
    const found = await em.execute<Array<{ id: string }>>(`select id from accounts where email = ? and is_staff and deleted_at is null`, [email]);
    const accountId = found[0]?.id;
    if (!accountId) throw staffInvalid();
    const pair = await em.transactional((tx) => startSession(tx, this.deps.session, { accountId, method: 'staff', client }, new Date()));
    return { ...pair, created: false };
  }

  private settle(checked: CodeCheck): string {
    if ('error' in checked) throw checked.error.code === 'NO_CHALLENGE' ? codeInvalid() : checked.error;
    return checked.email;
  }

  /**
   * Opens a challenge and mails it, at most once per address per SIGN_IN_MAIL_INTERVAL_SECONDS (a
   * request within the interval answers the same and sends nothing). A new challenge voids the
   * previous one; the partial unique index keeps one open challenge per address and kind even when
   * two requests race.
   */
  private async mailChallenge(email: string, kind: ChallengeKind): Promise<void> {
    const em = this.deps.orm.em.fork();
    const now = new Date();
    const minutes = CHALLENGE_MINUTES[kind];
    const id = newId('challenge');
    const code = sixDigitCode();
    const token = kind === 'magic_link' ? randomToken('ml_') : null;
    let opened: boolean;
    try {
      opened = await em.transactional(async (tx) => {
        const recent = await tx.execute<Array<{ id: string }>>(
          `select id from sign_in_challenges where email = ? and kind = ? and closed_at is null and created_at > ? for update`,
          [email, kind, new Date(now.getTime() - SIGN_IN_MAIL_INTERVAL_SECONDS * 1000)],
        );
        if (recent.length > 0) return false;
        await tx.execute(`update sign_in_challenges set closed_at = ? where email = ? and kind = ? and closed_at is null`, [now, email, kind]);
        await tx.execute(
          `insert into sign_in_challenges (id, email, kind, token_hash, code_digest, expires_at, created_at) values (?, ?, ?, ?, ?, ?, ?)`,
          [id, email, kind, token ? sha256(token) : null, codeDigest(this.deps.codeSecret, id, code), new Date(now.getTime() + minutes * 60_000), now],
        );
        return true;
      });
    } catch (err) {
      // A concurrent request for the same address opened (and mails) its challenge: this one sends nothing.
      if (isUniqueViolation(err, 'sign_in_challenges_open_unique')) return;
      throw err;
    }
    if (!opened) return;
    const mail: OutgoingMail = token ? magicLinkMail(email, this.deps.frontendUrl, token, code, minutes) : staffCodeMail(email, code, minutes);
    try {
      await this.deps.mailer.send(mail);
    } catch (err) {
      // A challenge nobody received must not hold the once-a-minute slot.
      await em.execute(`update sign_in_challenges set closed_at = ? where id = ? and closed_at is null`, [new Date(), id]);
      throw err;
    }
  }

  /** Single use: the conditional update lets exactly one caller through. */
  private async consumeLinkToken(token: string, expectedEmail?: string): Promise<string> {
    const now = new Date();
    const rows = await this.deps.orm.em
      .fork()
      .execute<Array<{ email: string }>>(
        `update sign_in_challenges set closed_at = ? where token_hash = ? and kind = 'magic_link' and closed_at is null and expires_at > ?${expectedEmail === undefined ? '' : ' and email = ?'} returning email`,
        expectedEmail === undefined ? [now, sha256(token), now] : [now, sha256(token), now, expectedEmail],
      );
    const email = rows[0]?.email;
    if (!email) throw linkInvalid();
    return email;
  }

  /**
   * One code attempt, counted in the database (committed even when the answer is an error). The fifth
   * wrong code voids the code. A staff challenge closes with it (password step again); a magic-link
   * challenge stays open for its link: the code is six digits anyone may try for any address, so
   * closing the whole challenge let anyone who knows an address void every link mailed to it (five
   * wrong codes after each mail: a tenth probe kept an account from signing in by mail), while the
   * link's token (32 random bytes) cannot be guessed.
   */
  private async checkCode(email: string, kind: ChallengeKind, code: string): Promise<CodeCheck> {
    const now = new Date();
    return this.deps.orm.em.fork().transactional(async (tx): Promise<CodeCheck> => {
      const rows = await tx.execute<Array<{ id: string; code_digest: string; attempts: number; live: boolean }>>(
        `select id, code_digest, attempts, expires_at > ? as live from sign_in_challenges where email = ? and kind = ? and closed_at is null for update`,
        [now, email, kind],
      );
      const challenge = rows[0];
      if (!challenge?.live) return { error: new AppError('NO_CHALLENGE', 400, '') };
      // a code already voided is never compared again (its challenge is open only for the link)
      if (challenge.attempts >= MAX_CODE_ATTEMPTS) return { error: codeInvalid() };
      if (sameDigest(challenge.code_digest, codeDigest(this.deps.codeSecret, challenge.id, code))) {
        await tx.execute(`update sign_in_challenges set closed_at = ? where id = ?`, [now, challenge.id]);
        return { email };
      }
      const attempts = challenge.attempts + 1;
      const exhausted = attempts >= MAX_CODE_ATTEMPTS;
      await tx.execute(`update sign_in_challenges set attempts = ?, closed_at = ? where id = ?`, [attempts, exhausted && kind !== 'magic_link' ? now : null, challenge.id]);
      return { error: exhausted ? tooManyAttempts(kind) : codeInvalid() };
    });
  }

  /** Signs in the account of a verified address, creating it (free plan, one workspace) on first use. */
  private async signInByAddress(email: string, method: string, client: ClientInfo): Promise<SignedIn> {
    const em = this.deps.orm.em.fork();
    try {
      return await em.transactional(async (tx) => {
        const now = new Date();
        const found = await tx.execute<Array<{ id: string; is_staff: boolean }>>(`select id, is_staff from accounts where email = ? and deleted_at is null`, [email]);
        if (found[0]?.is_staff) throw staffRequired();
        const created = !found[0];
        const accountId = found[0]?.id ?? (await createAccountWithWorkspace(tx, { email, plan: 'free' }, now)).account.id;
        const pair = await startSession(tx, this.deps.session, { accountId, method, client }, now);
        return { ...pair, created };
      });
    } catch (err) {
      throw mapDatabaseError(err, { accounts_email_unique: accountExists() });
    }
  }
}
