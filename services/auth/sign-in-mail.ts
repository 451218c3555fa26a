import type { OutgoingMail } from '../mail';

/**
 * The magic-link message: the link (token in the fragment, so it never reaches a server log) and the
 * code. The link also names the address it signs in as, which the console shows for confirmation
 * before spending the token (a link pushed at someone must not sign them in unawares), and sends
 * back with it: a token only signs in as the address it was mailed to.
 */
export function magicLinkMail(to: string, frontendUrl: string, token: string, code: string, validMinutes: number): OutgoingMail {
  const link = `${frontendUrl.replace(/\/$/, '')}/sign-in#token=${encodeURIComponent(token)}&email=${encodeURIComponent(to)}`;
  return {
    to,
    subject: `Your sign-in code: ${code}`,
    text: [
      'Sign in to the prediction service with this link:',
      '',
      link,
      '',
      `or enter this code: ${code}`,
      '',
      `Both work once, for ${validMinutes} minutes. If you did not ask to sign in, ignore this message.`,
    ].join('\n'),
  };
}

export function staffCodeMail(to: string, code: string, validMinutes: number): OutgoingMail {
  return {
    to,
    subject: `Your staff sign-in code: ${code}`,
    text: [
      `Your staff sign-in code is ${code}.`,
      '',
      `It works once, for ${validMinutes} minutes. If you did not just enter your password, change it now.`,
    ].join('\n'),
  };
}
