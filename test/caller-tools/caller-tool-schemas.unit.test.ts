import { callerToolNameClash, callerToolText } from '../../core/caller-tools';
import { compileSchema, schemaProblem } from '../../platform/json-schema-check';

/** Caller tools' schemas are compiled and used within a time bound; their names keep clear of the run's other tools. */
describe('caller tool schemas', () => {
  test('a schema compiles into a check that names what the value gets wrong', () => {
    const compiled = compileSchema({ type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] }, 250);
    if (!('check' in compiled)) throw new Error(compiled.problem);
    expect(compiled.check({ n: 2 })).toBeUndefined();
    expect(compiled.check({ n: 0 })).toBe('data/n must be >= 1');
    expect(compiled.check({})).toBe("data must have required property 'n'");
  });

  test('a pattern that backtracks for ever is cut off at the bound, and the check goes on working', () => {
    const compiled = compileSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }, 100);
    if (!('check' in compiled)) throw new Error(compiled.problem);
    const started = Date.now();
    expect(compiled.check({ s: `${'a'.repeat(40)}b` })).toBe('checking them against the schema took longer than 100 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(compiled.check({ s: 'aaa' })).toBeUndefined();
  });

  test('remote references, unknown formats and schemas that do not compile are refused, with where', () => {
    expect(schemaProblem({ properties: { a: { $ref: 'https://example.com/s.json' } } }))
      .toBe('/properties/a/$ref refers to https://example.com/s.json: only references within the schema ("#…") are allowed');
    expect(schemaProblem({ $defs: { a: { type: 'string' } }, properties: { a: { $ref: '#/$defs/a' } } })).toBeUndefined();
    expect(schemaProblem({ properties: { a: { type: 'string', format: 'colour' } } })).toMatch(/^\/properties\/a\/format "colour" is not a format/);
    // Data, not keywords: a property named $ref, a default holding one.
    expect(schemaProblem({ properties: { $ref: { type: 'string', default: { $ref: 'x' } } } })).toBeUndefined();
    expect(compileSchema({ type: 'object', properties: { a: { type: 'strng' } } }, 250)).toEqual({
      problem: 'it does not compile: type must be JSONType or JSONType[]: strng',
    });
  });

  test("a name is refused when it is a native tool's, a sub-agent's, or in an integration's tools", () => {
    expect(callerToolNameClash('get_weather', ['github'])).toBeUndefined();
    expect(callerToolNameClash('source_query', [])).toBe('source_query is a native tool of the run');
    expect(callerToolNameClash('agent__helper', [])).toMatch(/sub-agent/);
    expect(callerToolNameClash('github__create_issue', ['github'])).toMatch(/integration github/);
    expect(callerToolNameClash('githubx__create_issue', ['github'])).toBeUndefined();
    expect(callerToolText.notAnswered('get_time', '10m')).toBe('Caller tool get_time was not answered within 10m.');
  });
});
