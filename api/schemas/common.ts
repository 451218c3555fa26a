import { PAGINATION } from '../../config/plans';
import { z } from '../zod';

export const errorEnvelopeSchema = z
  .object({
    status: z.literal('error'),
    message: z.string().openapi({ description: 'Machine-readable UPPERCASE code: branch on this.', example: 'NOT_FOUND' }),
    messageDetail: z.string().openapi({ description: 'Readable sentence; do not parse.' }),
  })
  .catchall(z.unknown())
  .openapi('Error', { description: 'Envelope of every error. Some codes add fields (e.g. balance and required on CREDITS_EXHAUSTED).' });

export const paginationSchema = z
  .object({
    total: z.number().int().min(0),
    limit: z.number().int().min(1),
    offset: z.number().int().min(0),
    has_more: z.boolean(),
  })
  .openapi('Pagination');

export function pageQuerySchema(maxLimit: number = PAGINATION.maxLimit, defaultLimit: number = PAGINATION.defaultLimit) {
  return z.object({
    limit: z.coerce.number().int().min(1).max(maxLimit).default(defaultLimit).openapi({ description: `Page size, default ${defaultLimit}, at most ${maxLimit}.` }),
    offset: z.coerce.number().int().min(0).default(0),
  });
}

export function paginated<T>(items: T[], total: number, page: { limit: number; offset: number }) {
  return {
    data: items,
    pagination: { total, limit: page.limit, offset: page.offset, has_more: page.offset + items.length < total },
  };
}

export const isoDateTime = z.iso.datetime({ offset: true }).openapi({ description: 'ISO 8601 date-time', example: '2026-12-01T00:00:00Z' });

/** One row of a dataset: column name → a scalar (nested objects and arrays are refused). */
export const datasetRowSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .openapi('DatasetRow', { description: 'One row: column name → value (number, string, boolean or null).' });
