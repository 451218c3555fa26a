import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Adds `.openapi()` to zod schemas once, before any schema is declared, so that the schemas which
// validate requests are also the source of the OpenAPI document.
extendZodWithOpenApi(z);

export { z };
