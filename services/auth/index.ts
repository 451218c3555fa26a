import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../../config/env';
import { clientAddressResolver, type ClientAddressOf } from '../client-ip';
import { GeoIp } from '../geoip';
import { Mailer } from '../mail';
import { AccessTokens, authCodeSecret } from './access-tokens';
import { OAuthSignIn } from './oauth';
import { configuredProviders } from './oauth-providers';
import type { SessionPolicy } from './sessions';
import { SignIn, staffDomainsOf } from './sign-in';
import { SignInLimits } from './sign-in-limits';

/** What the account routes need, built once per process from the configuration. */
export interface AccountServices {
  tokens: AccessTokens;
  session: SessionPolicy;
  signIn: SignIn;
  oauth: OAuthSignIn;
  limits: SignInLimits;
  clientAddress: ClientAddressOf;
  geoip: GeoIp;
}

export function createAccountServices(config: AppConfig, orm: MikroORM): AccountServices {
  const tokens = AccessTokens.fromConfig(config);
  const session: SessionPolicy = { tokens, refreshTtlDays: config.REFRESH_TOKEN_TTL_DAYS };
  const limits = new SignInLimits(orm.em.getKnex(), config.SIGN_IN_BUDGET_SCALE);
  const signIn = new SignIn({
    orm,
    mailer: new Mailer(config.SMTP_URL, config.MAIL_FROM),
    limits,
    session,
    codeSecret: authCodeSecret(config),
    frontendUrl: config.FRONTEND_URL,
    staffDomains: staffDomainsOf(config.STAFF_EMAIL_DOMAINS),
  });
  const oauth = new OAuthSignIn({
    orm,
    limits,
    session,
    providers: configuredProviders(config),
    publicUrl: (config.PUBLIC_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/$/, ''),
    frontendUrl: config.FRONTEND_URL,
    isStaffAddress: (email) => signIn.isStaffAddress(email),
  });
  return { tokens, session, signIn, oauth, limits, clientAddress: clientAddressResolver(config.TRUSTED_PROXIES), geoip: new GeoIp(config.GEOIP_DATA_DIR) };
}
