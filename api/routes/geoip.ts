import type { AccountServices } from '../../services/auth';
import { AppError } from '../../services/errors';
import { route, type AnyRoute } from '../route';
import { geoIpQuerySchema, geoIpSchema } from '../schemas/auth';

export function geoIpRoutes(deps: { accounts: AccountServices }): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/v1/geoip',
      summary: 'The country of an address (default: the caller; X-Forwarded-For counts only from TRUSTED_PROXIES)',
      tag: 'Service',
      auth: 'public',
      query: geoIpQuerySchema,
      responses: { 200: { description: 'Country-level location.', schema: geoIpSchema } },
      errors: [
        [404, 'NOT_FOUND'],
        [422, 'PRIVATE_IP'],
        [503, 'GEOIP_UNAVAILABLE'],
      ],
      handler(ctx, { query }) {
        const ip = query.ip ?? deps.accounts.clientAddress(ctx.req);
        if (!ip) throw new AppError('VALIDATION_ERROR', 400, 'The caller\'s address is unknown; pass ?ip=.');
        const found = deps.accounts.geoip.locate(ip);
        ctx.body = { ip: found.ip, country: found.country, country_name: found.countryName, continent: found.continent };
      },
    }),
  ];
}
