import { ConfigError, loadConfig } from '../../platform/config';
import { resolveTemporalCli } from '../../platform/temporal/cli';

describe('configuration', () => {
  test('defaults apply to an empty environment', () => {
    expect(loadConfig({})).toMatchObject({ taskQueue: 'agent-runs', port: 3000, temporalNamespace: 'default', logLevel: 'info', workerNice: 10 });
    expect(loadConfig({ WORKER_NICE: '0' }).workerNice).toBe(0);
    expect(loadConfig({}).llmAnswerBounds).toEqual({ textBytes: 1_048_576, toolArgumentBytes: 1_048_576, answerBytes: 8_388_608, toolCalls: 10_000 });
    const set = { LLM_MAX_TEXT_BYTES: '65536', LLM_MAX_TOOL_ARGUMENT_BYTES: '2048', LLM_MAX_ANSWER_BYTES: '1048576', LLM_MAX_TOOL_CALLS_PER_ANSWER: '500' };
    expect(loadConfig(set).llmAnswerBounds).toEqual({ textBytes: 65_536, toolArgumentBytes: 2048, answerBytes: 1_048_576, toolCalls: 500 });
  });
  test('bad values give one readable error naming each variable', () => {
    const bad = () => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', WORKER_NICE: '-5', LLM_MAX_TEXT_BYTES: '10', LLM_MAX_TOOL_CALLS_PER_ANSWER: '0' });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/^Invalid configuration:\n/);
    expect(bad).toThrow(/\n {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(bad).toThrow(/\n {2}PORT: /);
    expect(bad).toThrow(/\n {2}LOG_LEVEL: /);
    expect(bad).toThrow(/\n {2}WORKER_NICE: /);
    expect(bad).toThrow(/\n {2}LLM_MAX_TEXT_BYTES: /);
    expect(bad).toThrow(/\n {2}LLM_MAX_TOOL_CALLS_PER_ANSWER: /);
  });
  test('npm start\'s ports are the user\'s when set, and absent when not (npm start then picks them)', () => {
    expect(loadConfig({})).toMatchObject({ temporalPort: undefined, temporalUiPort: undefined, postgresPort: undefined });
    expect(loadConfig({ TEMPORAL_PORT: '7300', TEMPORAL_UI_PORT: '8300', POSTGRES_PORT: '5500' }))
      .toMatchObject({ temporalPort: 7300, temporalUiPort: 8300, postgresPort: 5500 });
    const bad = () => loadConfig({ TEMPORAL_PORT: '0', POSTGRES_PORT: 'five', TEMPORAL_UI_PORT: '70000' });
    expect(bad).toThrow(/\n {2}TEMPORAL_PORT: /);
    expect(bad).toThrow(/\n {2}POSTGRES_PORT: /);
    expect(bad).toThrow(/\n {2}TEMPORAL_UI_PORT: /);
  });
  test('AUTH_CONSOLE_CLIENT_ID names the console\'s client at AUTH_ISSUER, and is refused without it', () => {
    const issuer = { AUTH_ISSUER: 'https://login.example.com', PUBLIC_URL: 'https://agents.example.com' };
    expect(loadConfig({ ...issuer, AUTH_CONSOLE_CLIENT_ID: 'engine-console' }).tokenAuth)
      .toMatchObject({ issuer: 'https://login.example.com', audience: 'https://agents.example.com/mcp', consoleClientId: 'engine-console' });
    expect(loadConfig(issuer).tokenAuth?.consoleClientId).toBeUndefined();
    expect(() => loadConfig({ AUTH_CONSOLE_CLIENT_ID: 'engine-console' })).toThrow(/AUTH_CONSOLE_CLIENT_ID needs AUTH_ISSUER/);
    expect(() => loadConfig({ ...issuer, AUTH_CONSOLE_CLIENT_ID: 'two words' })).toThrow(/\n {2}AUTH_CONSOLE_CLIENT_ID: /);
  });
  test('a TEMPORAL_CLI_PATH that is not executable is reported with how to get the CLI', async () => {
    await expect(resolveTemporalCli({ cliPath: '/nonexistent/temporal' })).rejects.toThrow(/not an executable file[\s\S]*go install github.com\/temporalio\/cli/);
  });
});
