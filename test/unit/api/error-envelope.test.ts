import { envelopeOf, zodToAppError } from '../../../api/middleware/errors';
import { z } from '../../../api/zod';
import { AppError, validationError } from '../../../services/errors';

describe('envelopeOf', () => {
  it('lists a rule-made VALIDATION_ERROR in errors, at the place its detail names, or at "" for the whole request', () => {
    expect(envelopeOf(validationError('Invalid body.outcomes.2.actual: this regression model needs a number.'))).toEqual({
      status: 'error',
      message: 'VALIDATION_ERROR',
      messageDetail: 'Invalid body.outcomes.2.actual: this regression model needs a number.',
      errors: [{ path: 'body.outcomes.2.actual', message: 'this regression model needs a number.' }],
    });
    expect(envelopeOf(validationError('Invalid body: the value of "colour" holds a NUL character.')).errors).toEqual([
      { path: 'body', message: 'the value of "colour" holds a NUL character.' },
    ]);
    expect(envelopeOf(validationError('Send at least one row to score.')).errors).toEqual([{ path: '', message: 'Send at least one row to score.' }]);
  });

  it('keeps the errors a schema refusal lists, and adds none to other codes', () => {
    const listed = [{ path: 'query.limit', message: 'Too small.' }];
    expect(envelopeOf(validationError('Invalid query.limit: Too small.', listed)).errors).toBe(listed);
    expect(envelopeOf(new AppError('NOT_FOUND', 404, 'The model was not found.'))).toEqual({ status: 'error', message: 'NOT_FOUND', messageDetail: 'The model was not found.' });
  });

  it('names at most ten unknown keys of a strict body and counts the rest, so a body of many unknown keys gets a short answer', () => {
    const schema = z.object({ name: z.string().optional() }).strict();
    const many = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 1]));
    const refusal = zodToAppError(schema.safeParse(many).error!, 'body');
    expect(refusal.detail).toBe('Invalid body: Unrecognized keys: "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9" and 99990 more.');
    expect(JSON.stringify(envelopeOf(refusal)).length).toBeLessThan(1_000);
    // A few are all named, as zod words them.
    expect(zodToAppError(schema.safeParse({ a: 1, b: 2 }).error!, 'body').detail).toBe('Invalid body: Unrecognized keys: "a", "b".');
  });
});
