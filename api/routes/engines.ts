import { ENGINE_CATALOGUE } from '../../engines/catalogue';
import { AppError } from '../../services/errors';
import { route, type AnyRoute } from '../route';
import { pageOf, pageQuerySchema } from '../schemas/common';
import { engineListSchema } from '../schemas/engines';

export function engineRoutes(): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/v1/engines',
      summary: 'Catalogue of prediction engines with their per-row credit price',
      tag: 'Engines',
      auth: 'public',
      query: pageQuerySchema(),
      responses: { 200: { description: 'The engines this deployment serves, a page of them.', schema: engineListSchema } },
      errors: [[503, 'ENGINE_CATALOGUE_MISMATCH']],
      handler(ctx, { query }) {
        const parsed = engineListSchema.safeParse(
          pageOf(ENGINE_CATALOGUE.map((e) => ({
            id: e.id,
            version: e.version,
            kind: e.kind,
            tasks: [...e.tasks],
            credit_price_per_row: e.creditPricePerRow,
            priced_per: e.pricedPer,
            description: e.description,
            default: e.isDefault,
          })), query),
        );
        if (!parsed.success) {
          throw new AppError('ENGINE_CATALOGUE_MISMATCH', 503, 'The engine catalogue could not be read from the engines.');
        }
        ctx.body = parsed.data;
      },
    }),
  ];
}
