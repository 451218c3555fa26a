import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type TestAgent from 'supertest/lib/agent';

/** The parts of an OpenAPI 3.1 document the response check reads. */
export interface OpenApiDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, ResponseObject> } | undefined>>;
  components?: { schemas?: Record<string, unknown> };
}

interface ResponseObject {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
}

/** What the check needs to know about one exchange. */
export interface ObservedResponse {
  method: string;
  /** The request URL as sent (path and query, or absolute). */
  url: string;
  status: number;
  contentType: string | undefined;
  /** The parsed JSON body for JSON answers, else the text. */
  body: unknown;
  text: string;
}

const DOCUMENT_ID = 'openapi.json';
const escapePointer = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  params: number;
}

/**
 * Checks answers against the OpenAPI document: the operation is found from the method and path
 * template, the status must be documented, and the body must match the documented schema (JSON) or
 * carry the documented content type (anything else). Compiled validators are cached per schema.
 */
export class ContractChecker {
  private readonly ajv: Ajv2020;
  private readonly operations: Operation[];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly document: OpenApiDocument) {
    // Not strict: the document carries OpenAPI keywords (example, description…) ajv does not know.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.ajv);
    this.ajv.addSchema(document as object, DOCUMENT_ID);
    this.operations = Object.entries(document.paths ?? {})
      .flatMap(([template, item]) =>
        Object.keys(item).map((method) => ({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
          params: (template.match(/\{/g) ?? []).length,
        })),
      )
      // A literal segment wins over a parameter (`/v1/forecast/backtest` before `/v1/forecast/{id}`).
      .sort((a, b) => a.params - b.params);
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  /** Null when the answer matches the document; otherwise a sentence naming route, status and error. */
  check(res: ObservedResponse): string | null {
    const method = res.method.toUpperCase();
    const path = decodeURI(new URL(res.url, 'http://local').pathname);
    const operation = this.operations.find((op) => op.method === method && op.pattern.test(path));
    if (!operation) {
      // No operation (unknown path or method): only the error envelope is acceptable.
      if (res.status < 400) return `${method} ${path} answered ${res.status} but no such operation is documented`;
      return this.checkJson(`${method} ${path}`, res, '/components/schemas/Error');
    }
    const route = `${method} ${operation.template}`;
    if (method === 'HEAD') return null;
    const responses = this.document.paths?.[operation.template]?.[operation.method.toLowerCase()]?.responses ?? {};
    const documented = responses[String(res.status)];
    if (!documented) {
      return `${route} answered ${res.status}, which is not documented (documented: ${Object.keys(responses).join(', ')})`;
    }
    const content = documented.content;
    if (!content) {
      if (res.text !== '' && res.text !== undefined) return `${route} ${res.status} documents no body but answered ${JSON.stringify(res.text.slice(0, 200))}`;
      return null;
    }
    const actualType = (res.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const documentedType = Object.keys(content).find((type) => type.toLowerCase() === actualType);
    if (!documentedType) {
      return `${route} ${res.status} answered content type ${JSON.stringify(res.contentType)}; documented: ${Object.keys(content).join(', ')}`;
    }
    if (documentedType !== 'application/json' || !content[documentedType]?.schema) return null;
    const pointer = ['paths', operation.template, operation.method.toLowerCase(), 'responses', String(res.status), 'content', documentedType, 'schema']
      .map(escapePointer)
      .join('/');
    return this.checkJson(`${route} ${res.status}`, res, `/${pointer}`);
  }

  private checkJson(where: string, res: ObservedResponse, pointer: string): string | null {
    const validate = this.validator(pointer);
    if (validate(res.body)) return null;
    const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
    return `${where}: the body does not match its schema: ${errors.join('; ')}\nbody: ${JSON.stringify(res.body).slice(0, 1000)}`;
  }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'del', 'head', 'options'] as const;

interface SuperagentResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
  text: string;
}

/**
 * Wraps a supertest agent so that every answer is checked against the document before the test sees
 * it: a violation rejects the request's promise, so the test that made it fails with the message.
 */
export function contractCheckingAgent(agent: TestAgent, checker: ContractChecker): TestAgent {
  return new Proxy(agent, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof prop !== 'string' || !(METHODS as readonly string[]).includes(prop) || typeof value !== 'function') return value;
      return (url: string, ...rest: unknown[]) => {
        const test = (value as (url: string, ...rest: unknown[]) => ReturnType<TestAgent['get']>).call(target, url, ...rest);
        const method = prop === 'del' ? 'DELETE' : prop.toUpperCase();
        return test.expect((res: SuperagentResponse) => {
          const violation = checker.check({
            method,
            url,
            status: res.status,
            contentType: res.headers['content-type'],
            body: res.body,
            text: res.text,
          });
          if (violation) throw new Error(`Response contract violation: ${violation}`);
        });
      };
    },
  });
}
