import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { withCliEngine } from '../support/cli';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const MODERN = path.join(__dirname, '..', 'fixtures', 'modern-mcp-server.ts');
const CONTROL_SEQUENCE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, 'g');

describe('run --follow on a terminal asks the MCP server\'s questions', () => {
  const h = withCliEngine();

  test('the fields are asked one by one; a wrong one is refused with the field named, then the answer reaches the server', async () => {
    const created = await h.app.inject({
      method: 'POST', url: '/v1/integrations',
      payload: { name: `ask-${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, elicitation: true },
    });
    const integration = created.json() as { id: string; name: string };
    const agent = await insertAgent(h.engine.db, {
      name: `tty_${randomUUID().slice(0, 8)}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${integration.name}__ask`, arguments: { message: 'Who are you?' } }] }, { text: '{{tool_results}}' }] },
    });
    const cli = h.cli(['run', '--agent', agent.name, 'go', '--follow'], { terminal: true });
    // The screen without terminal control sequences (readline moves the cursor after each prompt).
    const plain = () => cli.out.screen.replace(CONTROL_SEQUENCE, '');
    const count = (text: string) => plain().split(text).length - 1;
    const waitScreen = (text: string, what: string, times = 1) => waitFor(async () => count(text) >= times, 90_000, what);
    try {
      await waitScreen('the MCP server asks: Who are you?', 'the question');
      await waitScreen('Answer? [Y]es', 'the accept prompt');
      cli.type('y\r');
      await waitScreen('Name [string, required]: ', 'the name field');
      cli.type('Ada\r');
      await waitScreen('email [string]: ', 'the email field');
      cli.type('nope\r');
      await waitScreen('count [integer]: ', 'the count field');
      cli.type('2\r');
      await waitScreen('content.email', 'the refusal naming the field');
      await waitScreen('Answer? [Y]es', 'the accept prompt again', 2);
      cli.type('y\r');
      await waitScreen('Name [string, required]: ', 'the name field again', 2);
      cli.type('Ada\r');
      await waitScreen('email [string]: ', 'the email field again', 2);
      cli.type('ada@example.com\r');
      await waitScreen('count [integer]: ', 'the count field again', 2);
      cli.type('\r');
      expect(await cli.done).toBe(0);
      expect(plain()).toContain('answered (accept)');
      expect(plain()).toContain('answer: accept {"name":"Ada","email":"ada@example.com"}');
    } catch (err) {
      process.stderr.write(`CLI screen:\n${JSON.stringify(cli.out.screen)}\n`);
      throw err;
    } finally {
      if (cli.child.exitCode === null) cli.child.kill();
    }
  });

  test('a sampling request waiting for approval is asked like a tool call, showing what the model would get', async () => {
    const created = await h.app.inject({
      method: 'POST', url: '/v1/integrations',
      payload: { name: `samp-${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, sampling: 'approve' },
    });
    const integration = created.json() as { id: string; name: string };
    const agent = await insertAgent(h.engine.db, {
      name: `tty_${randomUUID().slice(0, 8)}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${integration.name}__sample`, arguments: { topic: 'gulls' } }] }, { text: 'foam' }, { text: '{{tool_results}}' }] },
    });
    const cli = h.cli(['run', '--agent', agent.name, 'go', '--follow'], { terminal: true });
    const plain = () => cli.out.screen.replace(CONTROL_SEQUENCE, '');
    try {
      await waitFor(async () => plain().includes(`Approve sampling for ${integration.name}__sample`), 90_000, 'the approval prompt');
      expect(plain()).toContain('a poem about gulls');
      cli.type('y\r');
      expect(await cli.done).toBe(0);
      expect(plain()).toContain('sampled (scripted, endTurn): foam');
    } catch (err) {
      process.stderr.write(`CLI screen:\n${JSON.stringify(cli.out.screen)}\n`);
      throw err;
    } finally {
      if (cli.child.exitCode === null) cli.child.kill();
    }
  });

  test('a 2026-era server\'s question (over stdio), waiting durably, is asked and answered the same way', async () => {
    const created = await h.app.inject({
      method: 'POST', url: '/v1/integrations',
      payload: { name: `modern-${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', MODERN], cwd: ROOT }, elicitation: true },
    });
    const integration = created.json() as { id: string; name: string };
    const agent = await insertAgent(h.engine.db, {
      name: `tty_${randomUUID().slice(0, 8)}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${integration.name}__confirm`, arguments: { what: 'launch' } }] }, { text: '{{tool_results}}' }] },
    });
    const cli = h.cli(['run', '--agent', agent.name, 'go', '--follow'], { terminal: true });
    const plain = () => cli.out.screen.replace(CONTROL_SEQUENCE, '');
    try {
      await waitFor(async () => plain().includes('the MCP server asks: Really launch?'), 90_000, 'the question');
      await waitFor(async () => plain().includes('Answer? [Y]es'), 30_000, 'the accept prompt');
      cli.type('y\r');
      await waitFor(async () => plain().includes('confirm [boolean, required]: '), 30_000, 'the field');
      cli.type('y\r');
      expect(await cli.done).toBe(0);
      expect(plain()).toContain('launch: confirmed=true, state=asked:launch');
    } catch (err) {
      process.stderr.write(`CLI screen:\n${JSON.stringify(cli.out.screen)}\n`);
      throw err;
    } finally {
      if (cli.child.exitCode === null) cli.child.kill();
    }
  });
});
