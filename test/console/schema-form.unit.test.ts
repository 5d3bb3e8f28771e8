import { checkAnswers, schemaFields } from '../../console/src/schema-form';

/** The console's form for a server's question (requestedSchema), and its own check before the API's. */
describe('a requestedSchema as a form', () => {
  const schema = {
    type: 'object',
    properties: {
      name: { type: 'string', title: 'Name', minLength: 2 },
      email: { type: 'string', format: 'email' },
      count: { type: 'integer', minimum: 1, maximum: 10 },
      ratio: { type: 'number' },
      ok: { type: 'boolean', default: true },
      size: { type: 'string', enum: ['s', 'm'], enumNames: ['Small', 'Medium'] },
      tier: { type: 'string', oneOf: [{ const: 'gold', title: 'Gold' }] },
    },
    required: ['name', 'size'],
  };

  test('each property becomes a field of its kind, with the server\'s titles and choices', () => {
    const fields = schemaFields(schema);
    expect(fields.map((f) => [f.name, f.kind, f.label, f.required])).toEqual([
      ['name', 'text', 'Name', true], ['email', 'text', 'email', false], ['count', 'integer', 'count', false],
      ['ratio', 'number', 'ratio', false], ['ok', 'boolean', 'ok', false], ['size', 'choice', 'size', true], ['tier', 'choice', 'tier', false],
    ]);
    expect(fields[5].choices).toEqual([{ value: 's', label: 'Small' }, { value: 'm', label: 'Medium' }]);
    expect(fields[6].choices).toEqual([{ value: 'gold', label: 'Gold' }]);
    expect(schemaFields(undefined)).toEqual([]);
  });

  test('answers are checked and typed: required, lengths, bounds, whole numbers, formats, choices', () => {
    const fields = schemaFields(schema);
    expect(checkAnswers(fields, { name: '', size: '' }).errors).toEqual({ name: 'required', size: 'required' });
    expect(checkAnswers(fields, { name: 'A', email: 'x', count: '2.5', ratio: 'abc', size: 'l' }).errors).toEqual({
      name: 'must be at least 2 characters', email: 'must be an email address', count: 'must be a whole number',
      ratio: 'must be a number', size: 'must be one of the choices',
    });
    expect(checkAnswers(fields, { name: 'Ada', count: '11', size: 's' }).errors).toEqual({ count: 'must be at most 10' });
    expect(checkAnswers(fields, { name: 'Ada', email: 'a@b.c', count: '3', ratio: '0.5', ok: true, size: 'm', tier: '' })).toEqual({
      content: { name: 'Ada', email: 'a@b.c', count: 3, ratio: 0.5, ok: true, size: 'm' }, errors: {},
    });
  });
});
