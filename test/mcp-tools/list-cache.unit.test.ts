import { InMemoryTransport, McpServer, Server } from '@modelcontextprotocol/server';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { listCapabilities } from '../../mcp-client/discover';
import { createLogger } from '../../platform/logger';

const logger = createLogger('silent', 'test');

/** A client linked to `server`, and the methods of the requests the server received. */
async function linked(server: McpServer | Server) {
  const client = new Client({ name: 'test', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const asked: string[] = [];
  await server.connect(serverSide);
  const deliver = serverSide.onmessage!;
  serverSide.onmessage = (message: JSONRPCMessage, extra) => {
    if ('method' in message) asked.push(message.method);
    deliver(message, extra);
  };
  await client.connect(clientSide);
  return { client, asked, close: async () => { await client.close(); await server.close(); } };
}

const listed = (asked: string[]) => asked.filter((m) => m.endsWith('/list'));
const nextTick = () => new Promise((resolve) => setImmediate(resolve));

describe('capability lists kept per connection', () => {
  test('a server that announces list changes is listed once; a change it announces is seen by the next listing', async () => {
    const server = new McpServer({ name: 'announcing', version: '1.0.0' });
    server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerResource('readme', 'fixture://readme', {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'hi' }] }));
    server.registerPrompt('greeting', {}, () => ({ messages: [] }));
    const { client, asked, close } = await linked(server);
    try {
      const first = await listCapabilities(client, logger);
      expect(first.tools.map((t) => t.name)).toEqual(['echo']);
      expect(listed(asked).sort()).toEqual(['prompts/list', 'resources/list', 'resources/templates/list', 'tools/list']);

      const again = await listCapabilities(client, logger);
      expect(again).toEqual(first);
      expect(listed(asked)).toHaveLength(4);

      // McpServer announces a tool registered while connected (notifications/tools/list_changed).
      server.registerTool('shout', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }));
      await nextTick();
      const changed = await listCapabilities(client, logger);
      expect(changed.tools.map((t) => t.name)).toEqual(['echo', 'shout']);
      // Only the list that changed is asked for again.
      expect(listed(asked).slice(4)).toEqual(['tools/list']);
    } finally {
      await close();
    }
  });

  test('a server that does not announce list changes is listed every time', async () => {
    const server = new Server({ name: 'silent', version: '1.0.0' }, { capabilities: { tools: {} } });
    let names = ['first'];
    server.setRequestHandler('tools/list', () => ({ tools: names.map((name) => ({ name, inputSchema: { type: 'object' as const } })) }));
    const { client, asked, close } = await linked(server);
    try {
      expect((await listCapabilities(client, logger)).tools.map((t) => t.name)).toEqual(['first']);
      names = ['second'];
      expect((await listCapabilities(client, logger)).tools.map((t) => t.name)).toEqual(['second']);
      expect(listed(asked)).toEqual(['tools/list', 'tools/list']);
    } finally {
      await close();
    }
  });

  test('a list answered after a change notification arrived is not kept', async () => {
    const server = new Server({ name: 'racing', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    let version = 1;
    // The server changes its list while a listing is on its way back, and says so.
    server.setRequestHandler('tools/list', async () => {
      const answer = { tools: [{ name: `v${version}`, inputSchema: { type: 'object' as const } }] };
      if (version === 1) {
        version = 2;
        await server.sendToolListChanged();
      }
      return answer;
    });
    const { client, asked, close } = await linked(server);
    try {
      expect((await listCapabilities(client, logger)).tools.map((t) => t.name)).toEqual(['v1']);
      expect((await listCapabilities(client, logger)).tools.map((t) => t.name)).toEqual(['v2']);
      expect((await listCapabilities(client, logger)).tools.map((t) => t.name)).toEqual(['v2']);
      expect(listed(asked)).toEqual(['tools/list', 'tools/list']);
    } finally {
      await close();
    }
  });
});
