import { envelopeOf } from '../../../api/middleware/errors';
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
});
