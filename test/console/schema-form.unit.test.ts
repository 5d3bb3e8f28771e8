import { checkAnswers, initialValues, schemaFields } from '../../console/src/schema-form';

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

  // The multi-selects of MCP's elicitation schema (2025-11-25 and after): arrays of enums, with and without titles.
  const multi = {
    type: 'object',
    properties: {
      instruments: { type: 'array', title: 'Instruments', minItems: 1, maxItems: 2, items: { type: 'string', enum: ['Guitar', 'Piano', 'Drums'] }, default: ['Guitar'] },
      fish: { type: 'array', items: { anyOf: [{ const: 'fish-1', title: 'Tuna' }, { const: 'fish-2', title: 'Salmon' }] } },
      hero: { type: 'string', oneOf: [{ const: 'hero-1', title: 'Superman' }, { const: 'hero-2', title: 'Wonder Woman' }], default: 'hero-2' },
      born: { type: 'string', format: 'date' },
      at: { type: 'string', format: 'date-time' },
      count: { type: 'integer', default: 42 },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['fish'],
  };

  test('a multi-select (untitled or titled) is a field of choices, with its bounds; its default and the others\' are the first values', () => {
    const fields = schemaFields(multi);
    expect(fields.map((f) => [f.name, f.kind])).toEqual([
      ['instruments', 'choices'], ['fish', 'choices'], ['hero', 'choice'], ['born', 'text'], ['at', 'text'], ['count', 'integer'], ['tags', 'unsupported'],
    ]);
    expect(fields[0]).toMatchObject({ minItems: 1, maxItems: 2, choices: [{ value: 'Guitar', label: 'Guitar' }, { value: 'Piano', label: 'Piano' }, { value: 'Drums', label: 'Drums' }] });
    expect(fields[1].choices).toEqual([{ value: 'fish-1', label: 'Tuna' }, { value: 'fish-2', label: 'Salmon' }]);
    expect(initialValues(fields)).toEqual({ instruments: ['Guitar'], fish: [], hero: 'hero-2', born: '', at: '', count: '42', tags: '' });
  });

  test('a multi-select sends an array of its choices, in their order, within its bounds; an empty optional one is left out (even below its minItems)', () => {
    const fields = schemaFields(multi);
    expect(checkAnswers(fields, { instruments: [], fish: [] }).errors).toEqual({ fish: 'required' });
    const required = schemaFields({ properties: { instruments: multi.properties.instruments }, required: ['instruments'] });
    expect(checkAnswers(required, { instruments: [] }).errors).toEqual({ instruments: 'choose at least 1' });
    expect(checkAnswers(fields, { instruments: ['Drums', 'Piano', 'Guitar'], fish: ['fish-9'] }).errors).toEqual({
      instruments: 'choose at most 2', fish: 'must be among the choices',
    });
    expect(checkAnswers(fields, { instruments: ['Drums', 'Guitar'], fish: ['fish-2', 'fish-1'], hero: 'hero-1', count: '7' })).toEqual({
      content: { instruments: ['Guitar', 'Drums'], fish: ['fish-1', 'fish-2'], hero: 'hero-1', count: 7 }, errors: {},
    });
    const optional = schemaFields({ properties: { fish: multi.properties.fish } });
    expect(checkAnswers(optional, { fish: [] })).toEqual({ content: {}, errors: {} });
  });

  test('dates are real dates; a date-time from the page\'s local time is sent as RFC 3339 in UTC', () => {
    const fields = schemaFields(multi);
    const base = { fish: ['fish-1'] };
    expect(checkAnswers(fields, { ...base, born: '2023-02-30' }).errors).toEqual({ born: 'must be a date (YYYY-MM-DD)' });
    expect(checkAnswers(fields, { ...base, at: 'soon' }).errors).toEqual({ at: 'must be a date and time' });
    const sent = checkAnswers(fields, { ...base, born: '2024-02-29', at: '2024-02-29T13:45' }).content!;
    expect(sent.born).toBe('2024-02-29');
    expect(sent.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(sent.at as string)).toBe(new Date(2024, 1, 29, 13, 45).getTime());
    // A date-time default shows in the page's local time, and goes back unchanged.
    const withDefault = schemaFields({ properties: { at: { type: 'string', format: 'date-time', default: '2024-05-06T07:08:00Z' } } });
    const shown = initialValues(withDefault).at as string;
    expect(shown).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
    expect(checkAnswers(withDefault, { at: shown }).content).toEqual({ at: '2024-05-06T07:08:00.000Z' });
  });

  test('an email needs a domain with a dot, as the API checks it; a field the console cannot show stops a required answer', () => {
    const fields = schemaFields(schema);
    expect(checkAnswers(fields, { name: 'Ada', size: 's', email: 'a@b' }).errors).toEqual({ email: 'must be an email address' });
    const unsupported = schemaFields({ properties: { tags: multi.properties.tags }, required: ['tags'] });
    expect(checkAnswers(unsupported, {}).errors).toEqual({ tags: 'the console cannot show this field: decline or cancel' });
    expect(checkAnswers(schemaFields({ properties: { tags: multi.properties.tags } }), {})).toEqual({ content: {}, errors: {} });
  });
});
