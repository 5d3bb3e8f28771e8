import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onKeyNeeded, storedKey, storeKey } from './api';
import { InboxPage } from './inbox-page';
import { IntegrationsPage } from './integrations-page';
import { AdminKeyPrompt, KeyForm } from './prompts';
import { RunPage } from './run-page';
import { RunsPage } from './runs-page';

/** The console's pages, by hash route, so that the API serves one page, one script and one style sheet. */

type Route = { page: 'runs' } | { page: 'run'; runId: string } | { page: 'inbox' } | { page: 'integrations' };

function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (run) return { page: 'run', runId: decodeURIComponent(run[1]) };
  if (path === '/inbox') return { page: 'inbox' };
  if (path === '/integrations') return { page: 'integrations' };
  return { page: 'runs' };
}

function App() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const [keyNeeded, setKeyNeeded] = useState(false);
  // Bumped when a key is given: the page is mounted afresh and loads again with it.
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', follow);
    onKeyNeeded(() => setKeyNeeded(true));
    return () => window.removeEventListener('hashchange', follow);
  }, []);

  const useKey = (key: string) => {
    storeKey(key);
    setKeyNeeded(false);
    setGeneration((g) => g + 1);
  };

  return (
    <>
      <header>
        <strong>Agent engine</strong>
        <nav>
          <a href="#/" class={route.page === 'runs' || route.page === 'run' ? 'current' : ''}>Runs</a>
          <a href="#/inbox" class={route.page === 'inbox' ? 'current' : ''}>Waiting for a person</a>
          <a href="#/integrations" class={route.page === 'integrations' ? 'current' : ''}>Integrations</a>
        </nav>
      </header>
      {keyNeeded && (
        <KeyForm
          title={storedKey() ? 'The API refused this key' : 'This API needs a key'}
          note="The key is kept in this browser tab's session storage only, and sent in the Authorization header."
          onKey={useKey}
        />
      )}
      <AdminKeyPrompt />
      <main key={`${generation}`}>
        {route.page === 'runs' && <RunsPage />}
        {route.page === 'run' && <RunPage key={route.runId} runId={route.runId} />}
        {route.page === 'inbox' && <InboxPage />}
        {route.page === 'integrations' && <IntegrationsPage />}
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
// The page's "Loading…" line is replaced, not kept beside the console (render would append to it).
root.textContent = '';
render(<App />, root);
