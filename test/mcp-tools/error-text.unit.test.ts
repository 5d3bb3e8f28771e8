import { InMemoryTransport, Server, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/client';
import { mcpErrorText, mcpRequestError } from '../../core/mcp-error-text';

describe('MCP error texts', () => {
  test('mcpErrorText strips any number of "MCP error <code>: " prefixes, and nothing else', () => {
    expect(mcpErrorText(new Error('MCP error -32602: MCP error -32602: Unknown prompt'))).toBe('Unknown prompt');
    expect(mcpErrorText(new ProtocolError(ProtocolErrorCode.InternalError, 'boom'))).toBe('boom');
    expect(mcpErrorText(new Error('MCP error -1: MCP error 2: MCP error -3: deep'))).toBe('deep');
    expect(mcpErrorText(new Error('the server said "MCP error -1: x"'))).toBe('the server said "MCP error -1: x"');
    expect(mcpErrorText('plain text')).toBe('plain text');
    expect(mcpErrorText({ message: 'MCP error -32000: Connection closed' })).toBe('Connection closed');
  });

  test('undici\'s "fetch failed" says its cause once: its message, else those of the addresses tried, else its code', () => {
    const failed = (cause?: unknown) => Object.assign(new TypeError('fetch failed'), cause === undefined ? {} : { cause });
    expect(mcpErrorText(failed(Object.assign(new Error('getaddrinfo ENOTFOUND mcp.example.com'), { code: 'ENOTFOUND' }))))
      .toBe('fetch failed (getaddrinfo ENOTFOUND mcp.example.com)');
    // localhost tried as ::1 and 127.0.0.1: an AggregateError without a message of its own.
    const both = Object.assign(new AggregateError([
      Object.assign(new Error('connect ECONNREFUSED ::1:8080'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), { code: 'ECONNREFUSED' }),
    ], ''), { code: 'ECONNREFUSED' });
    expect(mcpErrorText(failed(both))).toBe('fetch failed (connect ECONNREFUSED ::1:8080; connect ECONNREFUSED 127.0.0.1:8080)');
    expect(mcpErrorText(failed({ code: 'UND_ERR_CONNECT_TIMEOUT' }))).toBe('fetch failed (UND_ERR_CONNECT_TIMEOUT)');
    expect(mcpErrorText(failed())).toBe('fetch failed');
    expect(mcpErrorText(failed(new Error('x'.repeat(1000)))).length).toBeLessThan(320);
    // Another failure keeps its own words; its cause is its own business.
    expect(mcpErrorText(Object.assign(new Error('Connection closed'), { cause: new Error('socket hang up') }))).toBe('Connection closed');
  });

  test('a v2 SDK server\'s ProtocolError and mcpRequestError both reach the client with the code once and no prefix', async () => {
    const server = new Server({ name: 'errors', version: '1.0.0' }, { capabilities: { prompts: {} } });
    server.setRequestHandler('prompts/get', (request) => {
      if (request.params.name === 'wrapped') throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Unknown prompt: wrapped');
      throw mcpRequestError(ProtocolErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      const wrapped = await client.getPrompt({ name: 'wrapped' }).catch((err: unknown) => err as Error);
      expect(wrapped).toBeInstanceOf(ProtocolError);
      expect(wrapped).toMatchObject({ code: ProtocolErrorCode.InvalidParams, message: 'Unknown prompt: wrapped' });
      expect(mcpErrorText(wrapped)).toBe('Unknown prompt: wrapped');
      const clean = await client.getPrompt({ name: 'clean' }).catch((err: unknown) => err as ProtocolError);
      expect(clean).toMatchObject({ code: ProtocolErrorCode.InvalidParams, message: 'Unknown prompt: clean' });
    } finally {
      await client.close();
      await server.close();
    }
  });
});
